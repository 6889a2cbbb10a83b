// xgboost: a distributed XGBoost job without an operator: an Indexed Job
// of worker pods whose program meets at the Rabit tracker that process 0
// starts on worker 0 (DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID,
// DMLC_NUM_WORKER, as the Kubeflow Trainer's xgboost policy gives them).
// Takes a TrainJob on the Trainer's xgboost-distributed. The job is
// lib/meet.libsonnet's; here is what is XGBoost's.

local meet = import 'meet.libsonnet';
local roles = import 'roles.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local proto = 'xgboost';

// XGBoost's workers: one per GPU of each pod, else one per pod, as the
// Trainer counts them (DMLC_NUM_WORKER).
local perPod(p) = if p.gpu > 0 then p.gpu else 1;

local framework = {
  // The Trainer's XGBoost runtime image, as its xgboost-distributed runs and
  // its guide names it (XGBoost with CUDA 12, NumPy, scikit-learn).
  image: 'ghcr.io/kubeflow/trainer/xgboost-runtime:latest',
  exec: 'python3 /workspace/train.py',
  execDoc: 'Command each pod runs with sh -c: the training program, which on worker 0 (DMLC_TASK_ID 0) starts xgboost.tracker.RabitTracker on DMLC_TRACKER_PORT for DMLC_NUM_WORKER workers, and on every pod joins it (xgboost.collective.CommunicatorContext with the DMLC_* variables) before xgboost.train. $TRAIN_DIR holds the checkpoint directory.',
  workersDoc: 'Number of worker pods: worker 0 hosts the tracker.',
  portDoc: 'Port of the tracker on worker 0 (DMLC_TRACKER_PORT).',
  shmUsers: 'NCCL',
  // The variables XGBoost's collective (Rabit) reads, which the pods have.
  reserved: ['DMLC_TRACKER_URI', 'DMLC_TRACKER_PORT', 'DMLC_TASK_ID', 'DMLC_NUM_WORKER'],
  reservedWhy: 'XGBoost\'s collective reads it, and trainsonnet sets it from the parameters (workers, gpu, port, the pod\'s index)',
  port: 'tracker',
  env(p): [
    { name: 'DMLC_TRACKER_URI', value: roles.podHost(p, 'worker', 0) },
    { name: 'DMLC_TRACKER_PORT', value: std.toString(p.port) },
    { name: 'DMLC_TASK_ID', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } },
    { name: 'DMLC_NUM_WORKER', value: std.toString(p.workers * perPod(p)) },
  ],
  lead: 'worker 0 (the tracker\'s)',
  leadsWhat: 'worker 0\'s tracker',
};

ts.prototype(meet.job(proto, framework) + {
  name: proto,
  summary: 'A distributed XGBoost job without an operator: N worker pods meeting at the Rabit tracker on worker 0',
  replaces: 'the Kubeflow Trainer\'s xgboost-distributed runtime (a TrainJob), for teams without the Trainer and JobSet',
  description: |||
    An Indexed Job of workers pods and a headless Service that gives each a stable name,
    <name>-worker-<i>.<name>. Every pod runs exec with sh -c: the training program, which on
    worker 0 starts XGBoost's Rabit tracker (xgboost.tracker.RabitTracker) on port and on every
    pod joins it before training, as under the Kubeflow Trainer's xgboost-distributed: the pods
    have DMLC_TRACKER_URI (<name>-worker-0.<name>), DMLC_TRACKER_PORT (port), DMLC_TASK_ID (the
    pod's index) and DMLC_NUM_WORKER (workers, times the GPUs of a pod where it has any: a
    worker per GPU).

    Each pod is retried on its own, backoffLimit times (backoffLimitPerIndex); disruptions
    (preemption, a node drain) do not count. The pods are one group: once a pod is made again
    (it failed, was deleted or cut off), the others' programs are stopped (exit 75, which the
    Job ignores) and all start again together, in seconds, rather than wait in a collective for
    the training's timeout; the program resumes from its checkpoint. The job ends when worker 0 ends: it completes
    then, and the other pods still running are stopped. TRAIN_DIR is trainDir on the shared
    storage (storage.*), where worker 0 saves the model and checkpoints (xgboost.train's
    xgb_model resumes from one). The NetworkPolicy admits only the job's own pods. The pods
    need no ssh and no RBAC.

    A TrainJob on xgboost-distributed (trainer.kubeflow.org/v1alpha1) works as a params file:
    workers, the image, command, GPUs, limits, env, volumes and the pod fields of its runtime
    patches are derived from it, and what differs from the Trainer is said in warnings.
  |||,

})
