// jax: a multi-process JAX job without an operator: an Indexed Job of
// worker pods, one JAX process each, which meet at worker 0's coordinator
// (jax.distributed.initialize() reads JAX_COORDINATOR_ADDRESS,
// JAX_NUM_PROCESSES and JAX_PROCESS_ID, as the Kubeflow Trainer's jax
// policy gives them). Takes a TrainJob on the Trainer's jax-distributed.
// The job is lib/meet.libsonnet's; here is what is JAX's.

local meet = import 'meet.libsonnet';
local roles = import 'roles.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local proto = 'jax';

local framework = {
  // NVIDIA's JAX image (CUDA, NCCL), as the Trainer's jax-distributed runs.
  image: 'nvcr.io/nvidia/jax:25.10-py3',
  exec: 'python3 /workspace/train.py',
  execDoc: 'Command each process runs with sh -c: the training program, which calls jax.distributed.initialize() (its coordinator, process count and id come from the pods\' JAX_* variables). $TRAIN_DIR holds the checkpoint directory.',
  workersDoc: 'Number of worker pods, one JAX process each: worker 0 hosts the coordinator.',
  portDoc: 'Port of the coordinator on worker 0 (JAX_COORDINATOR_ADDRESS).',
  shmUsers: 'XLA and NCCL',
  // The variables jax.distributed.initialize() reads, which the pods have.
  reserved: ['JAX_COORDINATOR_ADDRESS', 'JAX_NUM_PROCESSES', 'JAX_PROCESS_ID'],
  reservedWhy: 'jax.distributed.initialize() reads it, and trainsonnet sets it from the parameters (workers, port, the pod\'s index)',
  port: 'coordinator',
  env(p): [
    { name: 'JAX_COORDINATOR_ADDRESS', value: roles.podHost(p, 'worker', 0) + ':' + p.port },
    { name: 'JAX_NUM_PROCESSES', value: std.toString(p.workers) },
    { name: 'JAX_PROCESS_ID', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } },
  ],
  lead: 'worker 0 (process 0)',
  leadsWhat: 'worker 0\'s coordinator',
};

ts.prototype(meet.job(proto, framework) + {
  name: proto,
  summary: 'A multi-process JAX job without an operator: N worker pods, one process each, meeting at worker 0\'s coordinator',
  replaces: 'the Kubeflow Trainer\'s jax-distributed runtime (a TrainJob), for teams without the Trainer and JobSet',
  description: |||
    An Indexed Job of workers pods and a headless Service that gives each a stable name,
    <name>-worker-<i>.<name>. Every pod runs exec with sh -c: one JAX process, whose
    jax.distributed.initialize() finds the coordinator on worker 0
    (JAX_COORDINATOR_ADDRESS=<name>-worker-0.<name>:<port>), the number of processes
    (JAX_NUM_PROCESSES=workers) and its own id (JAX_PROCESS_ID, the pod's index), as the
    Kubeflow Trainer's jax-distributed gives them. Each process sees its pod's GPUs (gpu);
    no TPU.

    Each pod is retried on its own, backoffLimit times (backoffLimitPerIndex); disruptions
    (preemption, a node drain) do not count. The pods are one group: once a pod is made again
    (it failed, was deleted or cut off), the others' programs are stopped (exit 75, which the
    Job ignores) and all start again together, in seconds, rather than wait in a collective for
    the training's timeout; the program resumes from its checkpoint. The job ends when worker 0, process 0, ends: it
    completes then, and the other pods still running are stopped. /dev/shm is a memory volume
    (shmSize). TRAIN_DIR is trainDir on the shared storage (storage.*). The NetworkPolicy
    admits only the job's own pods. The pods need no ssh and no RBAC.

    A TrainJob on jax-distributed (trainer.kubeflow.org/v1alpha1) works as a params file:
    workers, the image, command, GPUs, limits, env, volumes and the pod fields of its
    runtime patches are derived from it, and what differs from the Trainer is said in
    warnings.
  |||,

})
