// jax: a multi-process JAX job without an operator: an Indexed Job of
// worker pods, one JAX process each, which meet at worker 0's coordinator
// (jax.distributed.initialize() reads JAX_COORDINATOR_ADDRESS,
// JAX_NUM_PROCESSES and JAX_PROCESS_ID, as the Kubeflow Trainer's jax
// policy gives them). Takes a TrainJob on the Trainer's jax-distributed.

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local kubeflow = import 'kubeflow.libsonnet';
local roles = import 'roles.libsonnet';
local runtime = import 'runtime.libsonnet';
local storage = import 'storage.libsonnet';
local trainer = import 'trainer.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local params = ts.params;
local proto = 'jax';
local component = 'worker';

// NVIDIA's JAX image (CUDA, NCCL), as the Trainer's jax-distributed runs.
local defaultImage = 'nvcr.io/nvidia/jax:25.10-py3';
local defaultExec = 'python3 /workspace/train.py';

// The variables jax.distributed.initialize() reads, which the pods have.
local jaxEnv = ['JAX_COORDINATOR_ADDRESS', 'JAX_NUM_PROCESSES', 'JAX_PROCESS_ID'];

local params_ = common.params('train', defaultImage) + batch.params('each worker') + storage.params(['trainDir'])
                + roles.params('each worker', exec='Command each process runs with sh -c: the training program, which calls jax.distributed.initialize() (its coordinator, process count and id come from the pods\' JAX_* variables). $TRAIN_DIR holds the checkpoint directory.') + {
  exec+: { default: defaultExec },
  workers: params.int('Number of worker pods, one JAX process each: worker 0 hosts the coordinator.', default=2, min=1, max=1000),
  port: params.int('Port of the coordinator on worker 0 (JAX_COORDINATOR_ADDRESS).', default=29500, min=1, max=65535),
  gpuResource: params.string('Extended resource that counts GPUs.', default='nvidia.com/gpu', format='extendedResourceName'),
  args: params.list('Arguments after exec (shell-quoted), or after the image\'s ENTRYPOINT (entrypoint). One item per --args flag.', separator=''),
  entrypoint: params.bool('Run the image\'s ENTRYPOINT (with args, if given; else its CMD), as a container without a command runs, instead of exec: for an image whose ENTRYPOINT is the training program.'),
  shmSize: roles.shmParam('every worker', 'XLA and NCCL').shmSize,
};

local trainDir(p) = storage.dir(p, 'trainDir');
local coordinator(p) = roles.podHost(p, component, 0) + ':' + p.port;

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
    ports: [{ name: 'coordinator', port: p.port }],
    [if wrapped(p) then 'command']: runtime.run(cmd, group=if grouped(p) then roles.group(p, component, p.workers)),
    [if p.entrypoint && p.args != [] then 'args']: [kubeflow.kubelet(a) for a in p.args],
    env: [
      { name: 'JAX_COORDINATOR_ADDRESS', value: coordinator(p) },
      { name: 'JAX_NUM_PROCESSES', value: std.toString(p.workers) },
      { name: 'JAX_PROCESS_ID', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } },
      { name: 'TRAIN_DIR', value: trainDir(p) },
    ] + common.env({ PYTHONUNBUFFERED: '1' } + p.env),
    resources: roles.resources(cpu=p.cpu, memory=p.memory, gpu=p.gpu, gpuResource=p.gpuResource),
    nodeSelector: p.nodeSelector,
    tolerations: p.tolerations,
    volumes: store.volumes + roles.shm(p).volumes + (if wrapped(p) then [runtime.volume(configName(p))] else []),
    mounts: store.mounts + roles.shm(p).mounts + (if wrapped(p) then [runtime.mount] else []),
    job: {
      // a process that failed for good ends the job: JAX's collectives
      // need every process
      maxFailedIndexes: 0,
      // the job ends when process 0, the coordinator's, ends
      successPolicy: { rules: [{ succeededIndexes: '0' }] },
    },
  };

// ---- A Kubeflow Trainer TrainJob on jax-distributed (from) -------------

local fromTrainJob(o) =
  local t = trainer.job(o, jaxEnv);
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
    warnings: t.warnings + t.indexed('worker 0 (process 0)'),
    errors: t.errors,
  };

ts.prototype({
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

  ownEnv: {
    [v]: 'jax.distributed.initialize() reads it, and trainsonnet sets it from the parameters (workers, port, the pod\'s index)'
    for v in jaxEnv
  },
  params: params_,
  from: { 'trainer.kubeflow.org/v1alpha1/TrainJob': fromTrainJob },

  validate(p):: storage.validate(p, ['trainDir']) + [
    roles.nameFits(p, [worker(p)]),
    roles.shmCheck(p),
    roles.nonRootPort(p, 'port', p.port, 'worker 0\'s coordinator'),
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
