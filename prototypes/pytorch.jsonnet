// pytorch: a PyTorch job without an operator: an Indexed Job of worker pods,
// each running torchrun, which meet at worker 0's stable DNS name. Takes the
// names a Kubeflow PyTorchJob's users know (nprocPerNode, elasticPolicy,
// runPolicy, the Master/Worker replica specs where they map) from a params
// file, with warnings that say what to do.

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local roles = import 'roles.libsonnet';
local storage = import 'storage.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local params = ts.params;
local proto = 'pytorch';
local component = 'worker';

// PyTorch's own image, pinned: torchrun, CUDA and NCCL, gloo for CPUs.
local defaultImage = 'pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime';
// Where training scripts conventionally sit in it (its WORKDIR).
local defaultScript = '/workspace/train.py';

// torchrun's --nproc_per_node, as the PyTorchJob's nprocPerNode (a string)
// writes it too.
local nprocFormat = params.format(
  'nprocPerNode',
  'a number of processes from 1 to 1024, or gpu, cpu or auto as torchrun takes them',
  '^([1-9][0-9]{0,2}|10[01][0-9]|102[0-4]|gpu|cpu|auto)$',
  examples=['8', 'gpu', 'auto'],
);


local roleParams = roles.params(
  'each worker',
  exec='What torchrun runs in each of its processes, after its own options: the training script and its arguments (/opt/train.py --epochs 90), or -m and a module. torchrun options of your own may come first (--log_dir=/logs). Run with sh -c, so $TRAIN_DIR and quoting work as in a shell.',
);

// The Kubeflow PyTorchJob's pod template holds what these parameters do.
local templateWhatToDo = 'the pods are rendered from typed parameters: image, exec (the training script, after torchrun\'s options), gpu, cpu, memory, nodeSelector, tolerations, env, volumes and volumeMounts; anything else goes into a kustomize patch of the generated base';
local replicasWhatToDo = 'workers counts every pod, the master included: worker 0 is rank 0 and the rendezvous, as the Master was; set workers to Master.replicas + Worker.replicas';
local restartWhatToDo = 'each worker pod is retried on its own, backoffLimit times (backoffLimitPerIndex); disruptions (preemption, a node drain) do not count';

local params_ = common.params('train', defaultImage) + batch.params('each worker') + storage.params(['trainDir']) + roleParams + {
  exec+: { default: defaultScript },
  backoffLimit+: {
    doc: 'Retries of each worker pod (the Job\'s backoffLimitPerIndex; the PyTorchJob\'s runPolicy.backoffLimit). A worker that fails more often fails the job, unless elastic training can go on without it (elastic.minNodes). With retries, delete the job (kubectl delete -f, or its Job) before its namespace: Kubernetes 1.33 and later delete a namespace\'s pods first, and keep a failed pod with retries left until its replacement exists, which a terminating namespace refuses.',
    replaces: 'runPolicy.backoffLimit',
  },
  activeDeadlineSeconds+: { replaces: 'runPolicy.activeDeadlineSeconds' },
  ttlSecondsAfterFinished+: { replaces: 'runPolicy.ttlSecondsAfterFinished' },
  priorityClassName+: { replaces: 'runPolicy.schedulingPolicy.priorityClass' },
  trainDir+: {
    doc: 'Directory of the checkpoints, in TRAIN_DIR: under storage.mountPath or a volumeMount, so that what rank 0 writes outlives its pod and eval and tensorboard read it. Unset: <storage.mountPath>/train.',
  },
  workers: params.int('Number of worker pods: torchrun\'s nodes, rank 0\'s pod (the PyTorchJob\'s Master) included.', default=2, min=1, max=1000),
  nprocPerNode: params.string(
    'Processes torchrun starts in each pod (--nproc_per_node), as torchrun and the PyTorchJob take it: a number, gpu (one per GPU), cpu (one per CPU of the node) or auto (gpu where there are GPUs, else cpu). Unset: the pod\'s GPUs, or 1 without GPUs.',
    format=nprocFormat, replaces='elasticPolicy.nProcPerNode'
  ) + { spellings: ['numberAsText'] },
  port: params.int('Port of the rendezvous on worker 0 (torchrun\'s --master_port or --rdzv_endpoint, MASTER_PORT).', default=29500, min=1, max=65535, replaces='elasticPolicy.rdzvPort'),
  elastic: params.group('Elastic training: torchrun\'s c10d rendezvous on worker 0, which starts the training with any number of pods between minNodes and maxNodes and, when one fails, restarts it with those left (maxRestarts times). Unset (all three): the workers meet in a static rendezvous, all or none.', {
    minNodes: params.int('Fewest pods the training runs with (--nnodes=MIN:MAX). Unset: workers.', min=1, max=1000, replaces='elasticPolicy.minReplicas')
              + params.atMost('workers', 'the training would wait for pods that never come'),
    maxNodes: params.int('Most pods the training runs with. Unset: workers. Above workers, the Job can be scaled up to it (change its completions and parallelism together); the rendezvous then waits 30 s for more pods than it has.', min=1, max=1000, replaces='elasticPolicy.maxReplicas')
              + params.atLeast('workers', 'the rendezvous would turn pods of the job away'),
    maxRestarts: params.int('How often torchrun restarts the training of every pod (a new rendezvous) after a process failed or a pod came or went (--max_restarts). Unset: 0.', min=0, max=1000, replaces='elasticPolicy.maxRestarts'),
  }),
  gpuResource: params.string('Extended resource that counts GPUs.', default='nvidia.com/gpu', format='extendedResourceName'),
  shmSize: roles.shmParam('every worker', 'DataLoader workers and NCCL').shmSize,
};

local elastic(p) = p.elastic.minNodes != null || p.elastic.maxNodes != null || p.elastic.maxRestarts != null;
local minNodes(p) = if p.elastic.minNodes != null then p.elastic.minNodes else p.workers;
local maxNodes(p) = if p.elastic.maxNodes != null then p.elastic.maxNodes else p.workers;
// nproc: torchrun's --nproc_per_node; procs: the number it means, where
// a render can know it (null for cpu, and auto without GPUs: the node's).
local nproc(p) = if p.nprocPerNode != null then p.nprocPerNode else std.toString(std.max(1, p.gpu));
local procs(p) =
  local n = nproc(p);
  if n == 'gpu' || n == 'auto' && p.gpu > 0 then p.gpu
  else if n == 'cpu' || n == 'auto' then null
  else std.parseInt(n);
local trainDir(p) = storage.dir(p, 'trainDir');
local master(p) = roles.host(p, p.name + '-' + component + '-0');

// torchrun's options. Static: every pod knows its node rank (the completion
// index) and worker 0 hosts the store. Elastic (c10d): the rendezvous hands
// out the ranks; worker 0 hosts it, which torchrun cannot tell from the
// endpoint's name, so each pod says whether it is the host.
local torchrun(p) = std.join(' ', [
  'exec torchrun',
  '--nnodes=' + (if elastic(p) then minNodes(p) + ':' + maxNodes(p) else p.workers),
  '--nproc_per_node=' + nproc(p),
] + (
  if elastic(p) then [
    '--rdzv_backend=c10d',
    '--rdzv_endpoint=' + master(p) + ':' + p.port,
    '--rdzv_id=' + p.name,
    '--rdzv_conf=is_host=$((JOB_COMPLETION_INDEX == 0))',
  ] + (if p.elastic.maxRestarts != null then ['--max_restarts=' + p.elastic.maxRestarts] else [])
  else [
    '--node_rank="$JOB_COMPLETION_INDEX"',
    '--master_addr=' + master(p),
    '--master_port=' + p.port,
  ]
) + [p.exec]);

// The variables a PyTorchJob's pods had (WORLD_SIZE and RANK count pods;
// torchrun gives its processes their own), and the checkpoint directory.
local ownEnv(p) = [
  { name: 'MASTER_ADDR', value: master(p) },
  { name: 'MASTER_PORT', value: std.toString(p.port) },
  { name: 'WORLD_SIZE', value: std.toString(p.workers) },
  { name: 'RANK', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } },
  { name: 'TRAIN_DIR', value: trainDir(p) },
];

local worker(p) =
  local store = storage.pod(p, component, [trainDir(p)]);
  {
    name: component,
    kind: 'IndexedJob',
    count: p.workers,
    // each pod is retried on its own, backoffLimit times
    // (backoffLimitPerIndex); the Job's own limit is the API's
    lead: true,
    retryPerIndex: true,
    image: p.image,
    imagePullPolicy: p.imagePullPolicy,
    ports: [{ name: 'rendezvous', port: p.port }],
    command: ['sh', '-c', torchrun(p)],
    env: ownEnv(p) + common.env({ PYTHONUNBUFFERED: '1' } + p.env),
    resources: roles.resources(cpu=p.cpu, memory=p.memory, gpu=p.gpu, gpuResource=p.gpuResource),
    nodeSelector: p.nodeSelector,
    tolerations: p.tolerations,
    volumes: store.volumes + roles.shm(p).volumes,
    mounts: store.mounts + roles.shm(p).mounts,
    job: {
      // the training goes on without a pod that failed for good only
      // while elastic training has enough pods left
      maxFailedIndexes: if elastic(p) then p.workers - std.min(minNodes(p), p.workers) else 0,
      // the job ends when rank 0's pod ends: it hosts the rendezvous, and
      // torchrun's exit barrier has every pod finish with it
      successPolicy: { rules: [{ succeededIndexes: '0' }] },
    },
  };

ts.prototype({
  name: proto,
  summary: 'A PyTorch job without an operator: N worker pods running torchrun, meeting at worker 0 (replaces a Kubeflow PyTorchJob)',
  replaces: 'the Kubeflow training operator\'s PyTorchJob (kubeflow.org/v1), for teams without the operator',
  description: |||
    An Indexed Job of workers pods and a headless Service that gives each a stable name,
    <name>-worker-<i>.<name>. Every pod runs torchrun with --nnodes=workers,
    --nproc_per_node=nprocPerNode (the pod's GPUs, or 1 on CPU), its completion index as
    --node_rank and worker 0 as the rendezvous (--master_addr, --master_port=port), then exec:
    the training script and its arguments. MASTER_ADDR, MASTER_PORT, WORLD_SIZE (pods) and
    RANK (the pod's index) are set as a PyTorchJob set them, for programs that read them;
    torchrun gives its processes their own RANK, LOCAL_RANK and WORLD_SIZE. With elastic.*,
    torchrun uses its c10d rendezvous on worker 0 and runs with minNodes to maxNodes pods,
    restarting the training maxRestarts times when a process fails or a pod comes or goes.

    Each pod is retried on its own, backoffLimit times (backoffLimitPerIndex); disruptions
    (preemption, a node drain) do not count. A pod that fails for good fails the job (elastic:
    once fewer than minNodes are left). The job ends when worker 0, rank 0, ends: it
    completes then, and the other pods still running are stopped. /dev/shm is a memory
    volume (shmSize). TRAIN_DIR is trainDir on the shared storage (storage.*: a claim, NFS or
    Azure Files), where rank 0 writes checkpoints that eval and tensorboard read. The
    NetworkPolicy admits only the job's own pods. The pods need no ssh and no RBAC.

    A PyTorchJob's spec works as a params file for what maps: nprocPerNode (8, gpu, auto),
    elasticPolicy.minReplicas, maxReplicas, maxRestarts and rdzvPort, runPolicy's
    backoffLimit, activeDeadlineSeconds, ttlSecondsAfterFinished and
    schedulingPolicy.priorityClass, each with a warning naming its new name; the Master and
    Worker replica specs and the other keys are accepted and not used, with a warning that says
    what to do instead (workers = Master.replicas + Worker.replicas; the pod template's
    contents are typed parameters).
  |||,

  // torchrun reads PET_<FLAG> for each flag not on its command line: the
  // ones trainsonnet gives it (and --standalone) are the job's; the others
  // (PET_TEE, PET_REDIRECTS, PET_LOG_DIR, ...) are the user's to set.
  ownEnv: {
    [v]: 'torchrun reads it as its flag, which trainsonnet gives it from the parameters (workers, nprocPerNode, elastic.*, port): set those'
    for v in ['PET_NNODES', 'PET_NPROC_PER_NODE', 'PET_NODE_RANK', 'PET_MASTER_ADDR', 'PET_MASTER_PORT', 'PET_RDZV_BACKEND',
              'PET_RDZV_ENDPOINT', 'PET_RDZV_ID', 'PET_RDZV_CONF', 'PET_MAX_RESTARTS', 'PET_STANDALONE']
  },
  params: params_,

  removed: {
    'pytorchReplicaSpecs.Master.replicas': replicasWhatToDo,
    'pytorchReplicaSpecs.Worker.replicas': replicasWhatToDo,
    'pytorchReplicaSpecs.Master.restartPolicy': restartWhatToDo,
    'pytorchReplicaSpecs.Worker.restartPolicy': restartWhatToDo,
    'pytorchReplicaSpecs.Master.template': templateWhatToDo,
    'pytorchReplicaSpecs.Worker.template': templateWhatToDo,
    'elasticPolicy.rdzvBackend': 'the rendezvous is static, or c10d once elastic.* is set (etcd is not offered)',
    'elasticPolicy.rdzvHost': 'the rendezvous is on worker 0, <name>-worker-0.<name>',
    'elasticPolicy.rdzvId': 'the rendezvous id is the job\'s name',
    'elasticPolicy.rdzvConf': 'put --rdzv_conf=is_host=$((JOB_COMPLETION_INDEX == 0)),KEY=VALUE,... at the start of exec: it replaces the rendered --rdzv_conf, whose is_host makes worker 0 the rendezvous host',
    'elasticPolicy.standalone': 'a job of one pod is workers: 1',
    'elasticPolicy.metrics': 'nothing scales the job by metrics: scale an elastic job by changing its Job\'s completions and parallelism together, up to elastic.maxNodes',
    'runPolicy.cleanPodPolicy': 'once rank 0 ends, the pods still running are stopped; the ended pods (and their logs) stay until ttlSecondsAfterFinished deletes the Job',
    'runPolicy.schedulingPolicy.minAvailable': 'with queue, Kueue admits every pod together; for a gang scheduler set schedulerName (Volcano, the coscheduling plugin) and add its PodGroup with a kustomize overlay',
    'runPolicy.schedulingPolicy.queue': 'this is Volcano\'s queue: with Kueue set queue to its LocalQueue; with Volcano set schedulerName and add its PodGroup with a kustomize overlay',
    'runPolicy.schedulingPolicy.scheduleTimeoutSeconds': 'bound the whole job with activeDeadlineSeconds',
    'runPolicy.suspend': 'with queue, the Job is created suspended and Kueue resumes it once admitted; without, apply it suspended with a kustomize patch (spec.suspend: true)',
    'runPolicy.managedBy': 'the Job controller runs the job: there is no operator',
  },

  validate(p):: storage.validate(p, ['trainDir']) + [
    roles.nameFits(p, [worker(p)]),
    roles.shmCheck(p),
    ts.check(nproc(p) != 'gpu' || p.gpu > 0, 'nprocPerNode', 'gpu starts one process per GPU, and the pods have none: set gpu, or a number'),
    roles.nonRootPort(p, 'port', p.port, 'worker 0\'s rendezvous'),
  ],

  warnings(p):: storage.warnings(p, component, [trainDir(p)]) + [
    if p.image == defaultImage && p.exec == defaultScript then
      'the default image (' + defaultImage + ') has no ' + defaultScript + ': set image to your training image, or exec to the script in it',
    if p.gpu > 0 && procs(p) != null && procs(p) > p.gpu then
      'nprocPerNode (' + nproc(p) + ') is more than the pod\'s GPUs (' + p.gpu + '): processes would share a GPU, which NCCL refuses',
    if procs(p) == null then
      'nprocPerNode ' + nproc(p) + ': torchrun starts one process per CPU of the node (os.cpu_count()), not per CPU of the pod\'s limit: set a number',
    roles.shWarning('exec', p.exec),
  ],

  render(p):: [
    common.networkPolicy(proto, p),
    storage.secret(proto, p, component),
  ] + roles.objects(proto, p, [worker(p)]),
})
