// horovod-dask: the kolotoc chart (a Horovod ring plus a Dask cluster) as a
// prototype, its values as typed parameters, with what its users did by
// hand (kubectl expose, passwords, keys) done by the generator.

local batch = import 'batch.libsonnet';
local chart = import 'chart.libsonnet';
local common = import 'common.libsonnet';
local mpi = import 'mpi.libsonnet';
local roles = import 'roles.libsonnet';
local runtime = import 'runtime.libsonnet';
local storage = import 'storage.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local params = ts.params;
local proto = 'horovod-dask';

local daskScript = importstr 'assets/dask.sh';
local daskPath = runtime.dir + '/dask.sh';
// The chart mounted its ConfigMap at /kolotoc/generated, its hostfile at
// /kolotoc/generated/hostfile (key hostfile.config), which its update and
// goto read, and commands written for it may name; it is there (and under
// hostfile.config) here too.
local chartDir = '/kolotoc/generated';
local defaultImage = 'horovod/horovod';
// goto and update: dask.sh, on the scheduler's PATH under those names.
local binDir = '/usr/local/bin';
local helpers = ['goto', 'update'];

local params_ = common.params(proto) + batch.params('the scheduler (with scheduler.args)') + mpi.params + mpi.sshParams()
                + chart.shared('the scheduler and of every worker', ['scheduler', 'worker']) + storage.params(['logDir']) + {
  projectName: params.string('The project (the chart\'s projectName): a conda environment of that name is activated in every pod when the image\'s conda has it, and TensorBoard reads /root/<projectName>/checkpoints, the chart\'s checkpoint directory, unless logDir or a storage is set. Empty: none.', default='', format='optionalFileName'),
  cuda: params.group('CUDA in the workers.', {
    stubs: params.string('Directory of the CUDA stub libraries (such as /usr/local/cuda/lib64/stubs): first on LD_LIBRARY_PATH of every pod, and of the ranks that ssh starts, on a node without a GPU driver, so that CUDA builds of the frameworks load there (the chart ran ldconfig on it).', format='absPath'),
  }),
  useHostNetwork: params.bool('Run the scheduler and the workers in their nodes\' network (the chart\'s default). At most one pod of the cluster per node; ssh.port must not be 22.'),
  useHostPID: params.bool('Share the nodes\' process namespace with the cluster\'s pods (the chart\'s useHostPID).'),
  exec: params.string('Command the scheduler runs with sh -c once every worker answers, as one string: the same as scheduler.args, which it replaces when both are set (a warning says so).', format='nonEmpty'),
  initTimeout+: { doc: 'How long the scheduler waits for every worker to answer over ssh before it fails with exit code 124; also how long a worker waits for the scheduler to appear. (The chart tried 30 times.)' },
  mca: params.map('Open MPI MCA parameters for the scheduler\'s mpirun (OMPI_MCA_<name>), added to or replacing the defaults (see describe openmpi).', keys='envName'),
  ssh+: { params+: {
    port+: { doc: 'Port of sshd in every worker, of the ssh client and of the Service (the chart\'s 3222). Must not be 22 with useHostNetwork.', default: 3222 },
  } },
  ui: params.group('The web UIs: the Dask dashboard, Jupyter and TensorBoard.', {
    serviceType: params.enum('Type of the Service <name>-ui of the UI ports alone: ClusterIP (none is made: reach them through <name>-dask, or kubectl port-forward), NodePort or LoadBalancer. The Service <name>-dask, with the scheduler\'s port, is always ClusterIP: Dask\'s scheduler runs whatever a client sends it.', ['ClusterIP', 'NodePort', 'LoadBalancer'], default='ClusterIP'),
    from: params.object('Who may reach the UI ports (NetworkPolicy peers). Unset: every pod of the namespace with ClusterIP, anyone with NodePort or LoadBalancer. The scheduler\'s port is for the cluster\'s own pods only.', 'networking/v1.NetworkPolicyPeer', list=true),
  }),
  scheduler: params.group('The scheduler pod: the Dask scheduler, its dashboard and, each in its own container, Jupyter and TensorBoard; the MPI jobs of the ring start here (mpirun over ssh). A Deployment, long-lived as the chart\'s; with scheduler.args (or exec), a Job that ends the cluster with the command\'s exit code.', {
    schedulerPort: params.int('Port of the Dask scheduler (dask scheduler --port; the chart\'s cluster.sh used 8686).', default=8786, min=1024, max=65535),
    dashboardPort: params.int('Port of the Dask dashboard (--dashboard-address; the chart\'s bokehPort).', default=8787, min=1024, max=65535, replaces='scheduler.bokehPort'),
    jupyterPort: params.int('Port of Jupyter Lab, in a container of its own. Unset: no Jupyter.', min=1024, max=65535),
    jupyterSecret: params.string('Existing Secret whose key token is Jupyter\'s token (JUPYTER_TOKEN). Unset: trainsonnet generates one into the Secret <name>-jupyter (kubectl get secret <name>-jupyter -o jsonpath={.data.token} | base64 -d). There is never a fixed password.', format='dns1123Subdomain'),
    tensorboardPort: params.int('Port of TensorBoard, in a container of its own, reading logDir. Unset: no TensorBoard.', min=1024, max=65535),
    image: chart.image('scheduler', 'scheduler', null, null, null),
    args: params.list('Command the scheduler runs once every worker answers: the items joined by spaces and run with sh -c, or with bash -c, as the chart ran them, when they use bash syntax (a warning says so). The cluster ends with its exit code. Unset (or empty): the cluster stays up for interactive use, like the chart\'s. One item per --scheduler-args flag.', items='nonEmpty', separator=''),
  } + chart.role('the scheduler', '')),
  worker: params.group('The workers: the Horovod ring (ranks 0 to number - 1, each serving ssh) and, in each, dask.number Dask workers.', {
    number: params.int('Number of worker pods, at most 5,000.', default=1, min=1, max=5000, aliases=['workers']),
    podManagementPolicy: params.enum('How the worker pods start. They always start together (Parallel): an Indexed Job has no OrderedReady.', ['Parallel'], default='Parallel'),
    image: chart.image('workers', 'worker', defaultImage, '0.28.1', 'IfNotPresent'),
    args: params.list('Command each worker runs once at start, before it serves ssh and starts its Dask workers (setup, such as a git pull), with sh -c; its failure fails the worker. One item per --worker-args flag.', items='nonEmpty', separator=''),
    volumes: params.object('Volumes of the workers only (the chart\'s worker.volumes), mounted with worker.volumeMounts or volumeMounts. One named like a volume of volumes stands for it in the workers, as in the chart, whose volumes were the scheduler\'s.', 'core/v1.Volume', list=true),
    volumeMounts: params.object('Volume mounts of the workers only, of worker.volumes or volumes.', 'core/v1.VolumeMount', list=true),
    dask: params.group('The Dask workers of each worker pod: number processes of dask worker --nthreads threads --memory-limit memory --resources "CPU=threads MEM=memory GPU=gpu", in the worker\'s container, each started again whenever it ends.', {
      number: params.int('Dask worker processes per pod (the chart\'s --nworkers): each a dask worker of its own, named as --nworkers names them.', default=1, min=1, max=1024),
      threads: params.int('Threads of each Dask worker process (--nthreads); also its CPU resource.', default=1, min=1, max=1024),
      memory: params.quantity('Memory limit of each Dask worker process (--memory-limit); also its MEM resource, in bytes. The chart\'s 2GB spelling works.', default='2G', unit='bytes'),
      gpu: params.int('GPUs of each Dask worker process, as its GPU resource (tasks that ask for GPU=1 run there). 0: none. When nothing else sets the worker\'s GPUs (worker.gpu, gpu, a resources limit), the pod gets number × gpu of them.', default=0, min=0, max=1024),
    }),
  } + chart.role('each worker', '')),
};

// Names.
local daskService(p) = p.name + '-dask';
local schedulerAddress(p) = 'tcp://' + daskService(p) + ':' + p.scheduler.schedulerPort;
local jupyterSecretName(p) = if p.scheduler.jupyterSecret != null then p.scheduler.jupyterSecret else p.name + '-jupyter';

// The workers, whose GPUs, when nothing else sets them, are those their
// Dask workers ask for.
local daskGPUs(p) = p.worker.dask.gpu * p.worker.dask.number;
local workerOf(p) =
  if daskGPUs(p) > 0 && p.worker.gpu == null && p.gpu == null && chart.gpusOf(p, p.worker) == 0
  then p.worker + { gpu: daskGPUs(p) }
  else p.worker;

// The ring: the workers, one per line, slots = their GPUs (the chart's
// were always 1).
local hostLinePrefix(p) = roles.podPrefix(p, 'worker');
local hostLineSuffix(p) = '.' + p.name + ' slots=' + chart.slotsOf(p, workerOf(p));

local execOf(p) = chart.exec(p.exec, p.scheduler.args, 'scheduler.args');
local interactive(p) = execOf(p) == null;

// Dask's MEM resource is in bytes.
local resourcesArg(p) =
  local d = p.worker.dask;
  'CPU=' + d.threads + ' MEM=' + std.toString(ts.bytes(d.memory)) + (if d.gpu > 0 then ' GPU=' + d.gpu else '');

// logDir: where TensorBoard reads.
local logDir(p) =
  if p.logDir != null || storage.kind(p) != null || p.projectName == '' then storage.dir(p, 'logDir')
  else '/root/' + p.projectName + '/checkpoints';

// The UI ports, by name.
local uiPorts(p) = [{ name: 'dashboard', port: p.scheduler.dashboardPort }]
                   + (if p.scheduler.jupyterPort != null then [{ name: 'jupyter', port: p.scheduler.jupyterPort }] else [])
                   + (if p.scheduler.tensorboardPort != null then [{ name: 'tensorboard', port: p.scheduler.tensorboardPort }] else []);
local ports(p) = [{ name: 'dask', port: p.scheduler.schedulerPort }] + uiPorts(p);

// What every pod's setup reads (dask.sh).
local setupEnv(p) =
  (if p.cuda.stubs != null then [{ name: 'TS_CUDA_STUBS', value: p.cuda.stubs }] else [])
  + (if p.projectName != '' then [{ name: 'TS_PROJECT', value: p.projectName }] else []);
// ... and what it changes, for the sessions ssh starts in a worker.
local setupNames(p) = (if p.cuda.stubs != null then ['LD_LIBRARY_PATH'] else []) + (if p.projectName != '' then ['PATH', 'CONDA_PREFIX', 'CONDA_DEFAULT_ENV'] else []);
// The variables the chart's pods had, which commands written for them
// (scheduler.args, worker.args) may read: the scheduler's, and the
// workers'; an unset port is "", as the chart's.
local orEmpty(x) = if x == null then '' else std.toString(x);
local chartSchedulerEnv(p) = [
  { name: 'PROJECT_NAME', value: p.projectName },
  { name: 'CUDA_STUB_LOCATION', value: orEmpty(p.cuda.stubs) },
  { name: 'DASK_SCHEDULER_PORT', value: std.toString(p.scheduler.schedulerPort) },
  { name: 'BOKEH_PORT', value: std.toString(p.scheduler.dashboardPort) },
  { name: 'JUPYTER_LAB_PORT', value: orEmpty(p.scheduler.jupyterPort) },
  { name: 'TENSORBOARD_PORT', value: orEmpty(p.scheduler.tensorboardPort) },
  { name: 'HOST_SSH_PORT', value: std.toString(p.ssh.port) },
];
local chartWorkerEnv(p) = [
  { name: 'PROJECT_NAME', value: p.projectName },
  { name: 'HOST_SSH_PORT', value: std.toString(p.ssh.port) },
  { name: 'CUDA_STUB_LOCATION', value: orEmpty(p.cuda.stubs) },
  { name: 'DASK_SCHEDULER_PORT', value: std.toString(p.scheduler.schedulerPort) },
  { name: 'DASK_WORKER_PROCESS', value: std.toString(p.worker.dask.number) },
  { name: 'DASK_WORKER_GPU', value: std.toString(p.worker.dask.gpu) },
  { name: 'DASK_WORKER_MEM', value: p.worker.dask.memory },
  { name: 'DASK_THREADS_PER_PROCESS', value: std.toString(p.worker.dask.threads) },
];
// Variables trainsonnet sets (besides TS_*).

// The store: mounted where TensorBoard reads, or where one is set.
local storeOf(p, readOnly=false) = storage.pod(p, 'dask', if p.scheduler.tensorboardPort != null then [logDir(p)] else [], readOnly);

// A container of the scheduler pod besides its main one: a native sidecar
// (an init container that keeps running, and is stopped after the main
// container ends).
// A UI (Jupyter, TensorBoard) runs under dask.sh ui, which starts it again
// when it fails and never fails itself: with no probe, the sidecar stays
// ready, and a UI that crashes never makes the scheduler pod NotReady (the
// Dask Service would lose its endpoint, and the workers their scheduler).
local sidecar(p, name, cmd, ports, env=[], mounts=[]) = roles.container(p, {
  name: name,
  image: chart.imageOf(p, p.scheduler),
  imagePullPolicy: chart.pullPolicyOf(p, p.scheduler),
  command: ['sh', daskPath] + (if name == 'dask-scheduler' then ['run'] else ['ui', name]) + cmd,
  env: common.env(p.env + p.scheduler.env) + setupEnv(p) + env,
  ports: ports,
  privileged: p.scheduler.privileged,
  mounts: [runtime.mount] + mounts,
  container: {
    restartPolicy: 'Always',
  } + (if name != 'dask-scheduler' then {} else {
    // the scheduler's main container starts once Dask's listens (a UI
    // that fails to start blocks nothing, and has no probe: the pod's
    // readiness is the scheduler's presence)
    startupProbe: { tcpSocket: { port: ports[0].port }, periodSeconds: 2, failureThreshold: std.ceil(p.initTimeout / 2) },
  }),
});

local sidecars(p) =
  local store = storeOf(p, readOnly=true);
  [
    sidecar(p, 'dask-scheduler', ['dask', 'scheduler', '--port', std.toString(p.scheduler.schedulerPort), '--dashboard-address', ':' + p.scheduler.dashboardPort],
            [{ name: 'dask', port: p.scheduler.schedulerPort }, { name: 'dashboard', port: p.scheduler.dashboardPort }]),
  ] + (if p.scheduler.jupyterPort == null then [] else [
    sidecar(p, 'jupyter', ['jupyter', 'lab', '--ip=0.0.0.0', '--port=' + p.scheduler.jupyterPort, '--no-browser', '--allow-root'],
            [{ name: 'jupyter', port: p.scheduler.jupyterPort }],
            [{ name: 'JUPYTER_TOKEN', valueFrom: { secretKeyRef: { name: jupyterSecretName(p), key: 'token' } } }]),
  ]) + (if p.scheduler.tensorboardPort == null then [] else [
    sidecar(p, 'tensorboard', ['tensorboard', '--logdir=' + logDir(p), '--port=' + p.scheduler.tensorboardPort, '--bind_all'],
            [{ name: 'tensorboard', port: p.scheduler.tensorboardPort }], [], store.mounts),
  ]);

// job: the scheduler and the workers, for mpi.jobs.
local job(p) =
  local roleOf(r) = chart.roleOf(p, r) + { init: daskPath };
  local store = storeOf(p);
  local helperVolume = { name: 'trainsonnet-helpers', configMap: { name: mpi.configName(p), items: [{ key: 'dask.sh', path: 'dask.sh', mode: 365 }] } };
  {
    port: p.ssh.port,
    initTimeout: p.initTimeout,
    secretName: mpi.secretName(p, p.ssh.secret),
    volumes: [{ name: 'trainsonnet-hostfile', configMap: { name: mpi.configName(p), items: [{ key: 'hostfile', path: 'hostfile' }, { key: 'hostfile', path: 'hostfile.config' }], defaultMode: 292 } }] + store.volumes,
    mounts: [{ name: 'trainsonnet-hostfile', mountPath: chartDir, readOnly: true }] + store.mounts,
    oneNode: null,  // host network: no two pods of the cluster on one node
    launcher: roleOf(p.scheduler) + {
      role: 'scheduler',
      kind: if interactive(p) then 'Deployment' else 'Job',
      // never two Dask schedulers behind the Service
      strategy: { type: 'Recreate' },
      rankHost: null,
      exec: execOf(p),
      env: common.env(p.env + p.scheduler.env) + setupEnv(p) + chartSchedulerEnv(p) + [
        { name: 'DASK_SCHEDULER_ADDRESS', value: 'tcp://localhost:' + p.scheduler.schedulerPort },
        { name: 'NUM_PROC', value: std.toString(p.worker.number * chart.slotsOf(p, workerOf(p))) },
        { name: 'NUM_DASK_WORKERS', value: std.toString(p.worker.number * p.worker.dask.number) },
      ],
      initContainers: sidecars(p),
      volumes: [helperVolume],
      mounts: [{ name: 'trainsonnet-helpers', mountPath: binDir + '/' + h, subPath: 'dask.sh', readOnly: true } for h in helpers],
    },
    worker: roleOf(workerOf(p)) + {
      count: p.worker.number,
      waitForGPUDriver: false,
      initContainers: [],
      sidecars: [],
      env: common.env(p.env + p.worker.env) + [{ name: 'DASK_SCHEDULER_ADDRESS', value: schedulerAddress(p) }],
      ownEnv: setupEnv(p) + chartWorkerEnv(p) + [
        { name: 'TS_DASK_SCHEDULER', value: schedulerAddress(p) },
        { name: 'TS_DASK_NWORKERS', value: std.toString(p.worker.dask.number) },
        { name: 'TS_DASK_NTHREADS', value: std.toString(p.worker.dask.threads) },
        { name: 'TS_DASK_MEMORY', value: p.worker.dask.memory },
        { name: 'TS_DASK_RESOURCES', value: resourcesArg(p) },
      ] + (if p.worker.args == [] then [] else [{ name: 'TS_SETUP', value: std.join(' ', p.worker.args) }]),
      sshNames: setupNames(p),
      volumes: p.worker.volumes,
      replacesVolumes: [v.name for v in p.worker.volumes],
      mounts: p.worker.volumeMounts,
      // An interactive ring outlives its scheduler, which comes back to it
      // (a Deployment): only deleting the cluster ends it. With
      // scheduler.args the ring ends with the scheduler's Job.
      followsLauncher: !interactive(p),
    },
  };

local config(p) = mpi.config(proto, p, ts.indexedLines(hostLinePrefix(p), hostLineSuffix(p), 0, p.worker.number)) + {
  data+: { 'dask.sh': ts.asset('assets/dask.sh', daskScript) },
};

local jupyterSecret(p) = if p.scheduler.jupyterPort == null || p.scheduler.jupyterSecret != null then null else {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: common.metadata(proto, p, jupyterSecretName(p), 'scheduler'),
  type: 'Opaque',
  data: { token: std.base64(ts.secretToken('scheduler.jupyterSecret')) },
};

local service(p, name, type, ps) = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: common.metadata(proto, p, name, 'scheduler'),
  spec: {
    [if type != 'ClusterIP' then 'type']: type,
    selector: common.selector(proto, p, 'scheduler'),
    // (by number: a named port of a sidecar is not looked up everywhere)
    ports: [{ name: x.name, port: x.port, targetPort: x.port, protocol: 'TCP' } for x in ps],
  },
};

// From elsewhere, only the UI ports.
local uiRule(p) = common.uiRule([x.port for x in uiPorts(p)], p.ui.from, p.ui.serviceType);

ts.prototype({
  name: proto,
  summary: 'A Horovod ring and a Dask cluster in the shape of the kolotoc chart: a scheduler pod (Dask, Jupyter, TensorBoard) and N workers serving ssh and running Dask workers',
  replaces: 'the kolotoc Helm chart (nmatare/kolotoc, 2019)',
  // Its values files' spellings ("" for unset, quoted numbers, 2GB, {}), taken with a warning.
  spellings: ts.params.chartSpellings,
  description: |||
    The chart's values as typed parameters: worker.number, worker.dask.{number, threads,
    memory, gpu}, scheduler.{schedulerPort, dashboardPort, jupyterPort, tensorboardPort, args},
    ssh.port, useHostNetwork, cuda.stubs, projectName, ... (a values file of the chart
    works: its "" values count as unset, its bokehPort is the dashboard's port and its 2GB
    is 2G, each with a warning).

    The scheduler pod runs the Dask scheduler (dask scheduler --port schedulerPort
    --dashboard-address :dashboardPort) and, each in its own container with its own port,
    Jupyter Lab (its token from a Secret: generated, or scheduler.jupyterSecret; never a fixed
    password) and TensorBoard (logDir: the shared storage's, or the chart's
    /root/<projectName>/checkpoints). The Service <name>-dask has every port of it (the
    chart's users ran kubectl expose by hand); ui.serviceType adds a NodePort or LoadBalancer
    Service <name>-ui of the UI ports alone. A UI that fails is started again (5 s, doubling
    to 5 minutes) and never takes the pod's readiness, or the cluster, with it. In the
    scheduler pod, goto N opens a shell on worker N (goto N CMD runs CMD there) and update
    CMD runs CMD on every worker at once, as the chart's helpers did; update alone brings
    the git checkout of the current directory up to date here and on every worker
    ($UPDATE_REPO_COMMAND, or git fetch --all && git reset --hard @{upstream}).
    DASK_SCHEDULER_ADDRESS makes Client() find the scheduler, NUM_PROC is the ring's slots
    (mpirun -np $NUM_PROC) and NUM_DASK_WORKERS the Dask workers to wait for.

    The workers are the Horovod ring: an Indexed Job of stable names
    (<name>-worker-<i>.<name>) serving ssh, listed in the hostfile (/etc/trainsonnet/hostfile,
    Open MPI's default in the scheduler, and the chart's /kolotoc/generated/hostfile)
    with slots = their GPUs (the chart's were always 1). Each runs worker.dask.number Dask
    workers (dask worker --nthreads --memory-limit --resources "CPU= MEM= GPU=", a process
    each) against the scheduler's Service, in the worker's container beside sshd, so that they
    see its GPUs, and starts each again when it exits. On a node without a GPU driver
    cuda.stubs goes first on LD_LIBRARY_PATH. env (DASK_DISTRIBUTED__* among it), worker.env and that setup reach
    the ranks that mpirun starts over ssh too. The chart's own variables (PROJECT_NAME,
    HOST_SSH_PORT, DASK_SCHEDULER_PORT, BOKEH_PORT, JUPYTER_LAB_PORT, TENSORBOARD_PORT,
    CUDA_STUB_LOCATION; in the workers DASK_WORKER_PROCESS, DASK_WORKER_GPU,
    DASK_WORKER_MEM, DASK_THREADS_PER_PROCESS) are set as it set them, for commands
    written for it.

    Long-lived by default: the scheduler is a Deployment (restarted when it fails), the
    cluster stays up until deleted, and the workers keep serving while the scheduler
    restarts (their Dask workers connect to the new one). With scheduler.args (or exec) the scheduler is a Job
    that runs the command once every worker answers over ssh, at most initTimeout, and the
    whole cluster ends with its exit code: the workers stop when told, or when the
    scheduler's ready-only Service <name>-scheduler has been gone for launcherGrace.

    The image needs sshd, Open MPI and Dask's distributed (and Jupyter Lab, TensorBoard when
    their ports are set); the default, horovod/horovod, has no Dask: build yours FROM it with
    pip install "dask[distributed]". ssh keys are generated at render time (a warning says
    the output holds one) or taken from ssh.secret; keys pasted into values are not used.
    Selectors use only stable labels (the chart's heritage label rendered empty); nothing is
    privileged unless asked; with useHostNetwork, one pod per node and ssh.port never 22.
  |||,

  ownEnv: mpi.ownEnv,
  params: params_,

  removed: {
    'ssh.hostKey': 'keys pasted into values end up in your files and release history; trainsonnet generates a key pair for every job, or create a Secret of type kubernetes.io/ssh-auth and set ssh.secret',
    'ssh.hostKeyPub': 'keys pasted into values end up in your files and release history; trainsonnet generates a key pair for every job, or create a Secret of type kubernetes.io/ssh-auth and set ssh.secret',
    'cuda.version': 'the chart never used it; the image decides its CUDA',
  },

  // The chart's values.yaml, or the file its cluster.sh wrote, in use.
  chart: {
    name: 'the kolotoc chart',
    keys: ['ssh.hostKey', 'ssh.hostKeyPub', 'cuda.version', 'scheduler.bokehPort'],
    defaults: {
      useHostNetwork: { value: true, why: 'its pods ran in their nodes\' network (at most one of the cluster per node here, and ssh.port never 22)' },
      'scheduler.tolerations': {
        value: [{ key: 'node', operator: 'Equal', value: 'scheduler', effect: 'NoSchedule' }],
        why: 'its scheduler tolerated node=scheduler:NoSchedule, the taint cluster.sh put on its pool',
      },
      'worker.tolerations': {
        value: [
          { key: 'node', operator: 'Equal', value: 'worker', effect: 'NoSchedule' },
          { key: 'nvidia.com/gpu', operator: 'Equal', value: 'present', effect: 'NoSchedule' },
        ],
        why: 'its workers tolerated node=worker:NoSchedule and nvidia.com/gpu=present:NoSchedule, the taints cluster.sh and GKE put on its pools',
      },
    },
    differs: {
      'scheduler.jupyterPort': 'unset, so no Jupyter Lab (cluster.sh ran it on 8889, with the image\'s fixed password): set scheduler.jupyterPort: 8889 (--scheduler-jupyter-port 8889); its token is then in the Secret <name>-jupyter',
      'scheduler.tensorboardPort': 'unset, so no TensorBoard (cluster.sh ran it on 5056): set scheduler.tensorboardPort: 5056 (--scheduler-tensorboard-port 5056)',
    },
    notes: [
      'the hostfile (/kolotoc/generated/hostfile, as before) lists the workers only, with slots = their GPUs; the chart\'s listed the scheduler first and every slot as 1: mpirun -np $NUM_PROC runs a rank on every slot',
      'the workers are an Indexed Job, not a StatefulSet: with scheduler.args they end with the scheduler\'s command; without, they serve until the cluster is deleted (kubectl delete -f), also while the scheduler restarts',
      'the pods run today\'s Dask command line (dask scheduler --dashboard-address, dask worker --nworkers, Dask 2022.10 or later), not the chart\'s dask-scheduler --bokeh-port and dask-worker; each Dask worker\'s MEM resource is in bytes',
      'update runs when you type it (the chart\'s scheduler ran it, git reset --hard everywhere, at every start)',
    ],
  },

  validate(p)::
    [
      roles.nameFits(p, [{ name: 'worker', kind: 'IndexedJob', count: p.worker.number }, { name: 'scheduler' }]),
      roles.hostNetworkPort('ssh.port', p.ssh.port, p.useHostNetwork, 'the pods share', ' (the chart\'s default network)'),
      mpi.checkConfigSize(p, 'worker.number', hostLinePrefix(p), hostLineSuffix(p), 0, p.worker.number, extraBytes=ts.assetBytes('assets/dask.sh', daskScript)),
      roles.nonRootPort(p, 'ssh.port', p.ssh.port, 'sshd'),
      ts.check(!(p.jobset && interactive(p)), 'jobset',
               'needs exec (or scheduler.args): without a command the scheduler is a Deployment, a long-lived cluster, and a JobSet holds Jobs that end'),
    ] + [
      local gpus = chart.gpusOf(p, workerOf(p));
      ts.check(daskGPUs(p) <= gpus, 'worker.dask.gpu',
               'must be at most ' + std.floor(gpus / p.worker.dask.number) + ': worker.dask.number (' + p.worker.dask.number + ') times worker.dask.gpu claims '
               + daskGPUs(p) + ' GPUs in a worker pod of ' + gpus + ' (worker.gpu)'),
      ts.check(daskGPUs(p) <= 1024, 'worker.dask.gpu',
               'must be at most ' + std.floor(1024 / p.worker.dask.number) + ' with worker.dask.number ' + p.worker.dask.number + ': a pod has at most 1024 GPUs'),
    ] + storage.validate(p, ['logDir'])
    + chart.gpuChecks(p, ['scheduler', 'worker'])
    + mpi.checks(p, { env: p.env, 'worker.env': p.worker.env, 'scheduler.env': p.scheduler.env }),

  warnings(p):: storage.warnings(p, 'dask', if p.scheduler.tensorboardPort != null then [logDir(p)] else []) + [
    if p.worker.image.repository == defaultImage && p.scheduler.image.repository == null then
      'the default image ' + chart.imageOf(p, p.worker) + ' has no Dask and no Jupyter: the Dask scheduler cannot start and the workers give up after initTimeout. Set worker.image (the scheduler runs it too, unless scheduler.image says otherwise) to an image built FROM it with pip install "dask[distributed]"'
      + (if p.scheduler.jupyterPort != null then ' jupyterlab' else '') + (if p.scheduler.tensorboardPort != null then ' (TensorBoard is in it)' else ''),
    mpi.generatedKeyWarning(p, p.ssh.secret, '--ssh-secret'),
    if p.scheduler.jupyterPort != null && p.scheduler.jupyterSecret == null then
      'the output holds a Jupyter token generated for this cluster (Secret ' + jupyterSecretName(p) + '), and every render makes a new one: keep it out of version control, or create the Secret yourself (key token) and pass its name with --scheduler-jupyter-secret',
    roles.hostNetworkWarning(p, p.useHostNetwork, 'the workers\' sshd (port ' + p.ssh.port + ') and the scheduler\'s ports are'),
    local dir = logDir(p);
    if p.scheduler.tensorboardPort != null && storage.isLocal(dir) && storage.kind(p) == null && storage.onStorage(p, [dir]) == []
       && std.length([m for m in p.volumeMounts if std.startsWith(dir + '/', std.rstripChars(m.mountPath, '/') + '/')]) == 0 then
      'TensorBoard reads ' + dir + ' in its own container, where nothing else writes: set storage (claim.name, nfs.server or azure.shareName) or a volumeMount there, where the training writes its summaries',
    if p.ui.serviceType != 'ClusterIP' then 'ui.serviceType ' + p.ui.serviceType + ': the Dask dashboard has no login, so whoever reaches it sees every computation',
  ] + chart.execWarnings(p.exec, p.scheduler.args, 'scheduler.args', 'the scheduler') + [
    if p.scheduler.privileged then 'scheduler.privileged: the scheduler\'s containers are privileged and can do anything on its node',
    if p.worker.privileged then 'worker.privileged: the workers\' containers are privileged and can do anything on their nodes',
  ],

  render(p):: [
    common.networkPolicy(proto, p, [uiRule(p)]),
    mpi.sshSecret(proto, p, p.ssh.secret),
    jupyterSecret(p),
    storage.secret(proto, p, 'dask'),
    config(p),
    service(p, daskService(p), 'ClusterIP', ports(p)),
    if p.ui.serviceType != 'ClusterIP' then service(p, p.name + '-ui', p.ui.serviceType, uiPorts(p)),
  ] + mpi.jobs(proto, p, job(p)),
})
