// xgboost: a distributed XGBoost job without an operator: an Indexed Job
// of worker pods whose program meets at the Rabit tracker that process 0
// starts on worker 0 (DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID,
// DMLC_NUM_WORKER, as the Kubeflow Trainer's xgboost policy gives them).
// Takes a TrainJob on the Trainer's xgboost-distributed.

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local kubeflow = import 'kubeflow.libsonnet';
local roles = import 'roles.libsonnet';
local runtime = import 'runtime.libsonnet';
local storage = import 'storage.libsonnet';
local trainer = import 'trainer.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local params = ts.params;
local proto = 'xgboost';
local component = 'worker';

// The Trainer's XGBoost runtime image, as its xgboost-distributed runs and
// its guide names it (XGBoost with CUDA 12, NumPy, scikit-learn).
local defaultImage = 'ghcr.io/kubeflow/trainer/xgboost-runtime:latest';
local defaultExec = 'python3 /workspace/train.py';

// The variables XGBoost's collective (Rabit) reads, which the pods have.
local dmlcEnv = ['DMLC_TRACKER_URI', 'DMLC_TRACKER_PORT', 'DMLC_TASK_ID', 'DMLC_NUM_WORKER'];

local params_ = common.params('train', defaultImage) + batch.params('each worker') + storage.params(['trainDir'])
                + roles.params('each worker', exec='Command each pod runs with sh -c: the training program, which on worker 0 (DMLC_TASK_ID 0) starts xgboost.tracker.RabitTracker on DMLC_TRACKER_PORT for DMLC_NUM_WORKER workers, and on every pod joins it (xgboost.collective.CommunicatorContext with the DMLC_* variables) before xgboost.train. $TRAIN_DIR holds the checkpoint directory.') + {
  exec+: { default: defaultExec },
  workers: params.int('Number of worker pods: worker 0 hosts the tracker.', default=2, min=1, max=1000),
  port: params.int('Port of the tracker on worker 0 (DMLC_TRACKER_PORT).', default=29500, min=1, max=65535),
  gpuResource: params.string('Extended resource that counts GPUs.', default='nvidia.com/gpu', format='extendedResourceName'),
  args: params.list('Arguments after exec (shell-quoted), or after the image\'s ENTRYPOINT (entrypoint). One item per --args flag.', separator=''),
  entrypoint: params.bool('Run the image\'s ENTRYPOINT (with args, if given; else its CMD), as a container without a command runs, instead of exec: for an image whose ENTRYPOINT is the training program.'),
  shmSize: roles.shmParam('every worker', 'NCCL').shmSize,
};

local trainDir(p) = storage.dir(p, 'trainDir');
// XGBoost's workers: one per GPU of each pod, else one per pod, as the
// Trainer counts them (DMLC_NUM_WORKER).
local perPod(p) = if p.gpu > 0 then p.gpu else 1;

// The command runs under the pods' runtime (lib/assets/runtime.sh), which
// hands it the SIGTERM a pod's deletion sends (a program that is the
// container's first process ignores it, and held its pod for its whole
// grace period), and, with more than one pod, as a group: once a pod is
// made again (it failed, was deleted or cut off), the others' command is
// stopped (exit 75, which the Job ignores) and all start again together,
// at once, instead of waiting in a collective for the training's own
// timeout. A JobSet needs no group: its controller makes every pod again.
// An image's ENTRYPOINT runs as it is.
local wrapped(p) = !p.entrypoint;
local grouped(p) = wrapped(p) && p.workers > 1 && !batch.jobset(p);
local configName(p) = p.name + '-config';
local config(p) = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: common.metadata(proto, p, configName(p)),
  data: runtime.scriptFile,
};

local worker(p) =
  local store = storage.pod(p, component, [trainDir(p)]);
  local cmd = ['sh', '-c', std.join(' ', ['exec', p.exec] + [kubeflow.shell([a]) for a in p.args])];
  {
    name: component,
    kind: 'IndexedJob',
    count: p.workers,
    lead: true,
    retryPerIndex: true,
    image: p.image,
    imagePullPolicy: p.imagePullPolicy,
    ports: [{ name: 'tracker', port: p.port }],
    [if wrapped(p) then 'command']: runtime.run(cmd, group=if grouped(p) then roles.group(p, component, p.workers)),
    [if p.entrypoint && p.args != [] then 'args']: [kubeflow.kubelet(a) for a in p.args],
    env: [
      { name: 'DMLC_TRACKER_URI', value: roles.podHost(p, component, 0) },
      { name: 'DMLC_TRACKER_PORT', value: std.toString(p.port) },
      { name: 'DMLC_TASK_ID', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } },
      { name: 'DMLC_NUM_WORKER', value: std.toString(p.workers * perPod(p)) },
      { name: 'TRAIN_DIR', value: trainDir(p) },
    ] + common.env({ PYTHONUNBUFFERED: '1' } + p.env),
    resources: roles.resources(cpu=p.cpu, memory=p.memory, gpu=p.gpu, gpuResource=p.gpuResource),
    nodeSelector: p.nodeSelector,
    tolerations: p.tolerations,
    volumes: store.volumes + roles.shm(p).volumes + (if wrapped(p) then [runtime.volume(configName(p))] else []),
    mounts: store.mounts + roles.shm(p).mounts + (if wrapped(p) then [runtime.mount] else []),
    job: {
      // a worker that failed for good ends the job: the allreduce of
      // every boosting round needs every worker
      maxFailedIndexes: 0,
      // the job ends when worker 0, the tracker's, ends
      successPolicy: { rules: [{ succeededIndexes: '0' }] },
    },
  };

// ---- A Kubeflow Trainer TrainJob on xgboost-distributed (from) ---------

local fromTrainJob(o) =
  local t = trainer.job(o, dmlcEnv);
  local c = t.container;
  local cmd = std.get(c, 'command');
  local args = std.get(c, 'args');
  local words = (if cmd == null then [] else cmd) + (if args == null then [] else args);
  {
    fields: t.fields + { exec: 'spec.trainer.command', entrypoint: 'spec.trainer.command' },
    params: t.params + {
      workers: t.numNodes,
      [if cmd != null then 'exec']: kubeflow.shell(words),
      [if cmd == null then 'entrypoint']: true,
      [if cmd == null && args != null then 'args']: args,
      port: 29500,
    },
    warnings: t.warnings + t.indexed('worker 0 (the tracker\'s)'),
    errors: t.errors,
  };

ts.prototype({
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

  ownEnv: {
    [v]: 'XGBoost\'s collective reads it, and trainsonnet sets it from the parameters (workers, gpu, port, the pod\'s index)'
    for v in dmlcEnv
  },
  params: params_,
  from: { 'trainer.kubeflow.org/v1alpha1/TrainJob': fromTrainJob },

  validate(p):: storage.validate(p, ['trainDir']) + [
    roles.nameFits(p, [worker(p)]),
    roles.shmCheck(p),
    roles.nonRootPort(p, 'port', p.port, 'worker 0\'s tracker'),
  ],

  warnings(p):: storage.warnings(p, component, [trainDir(p)]) + [
    if !p.entrypoint && p.image == defaultImage && p.exec == defaultExec then
      'the default image (' + defaultImage + ') has no /workspace/train.py: set image to your training image, or exec to the program in it',
    if p.entrypoint && p.exec != defaultExec then
      'exec is not run: the image\'s ENTRYPOINT runs instead',
    roles.shWarning('exec', p.exec),
  ],

  render(p):: [
    common.networkPolicy(proto, p),
    storage.secret(proto, p, component),
    if wrapped(p) then config(p),
  ] + roles.objects(proto, p, [worker(p)]),
})
