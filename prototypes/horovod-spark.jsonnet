// horovod-spark: a Spark standalone cluster for Horovod on Spark, with a
// driver Job that runs the user's script, and the setup Horovod's docs
// left to the reader: cores that count GPUs, Spark 3's GPU settings, a
// stable driver address, and a network policy for Horovod's random ports.
// No Kubernetes packaging of it existed (seed 004): designed from the docs.

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local roles = import 'roles.libsonnet';
local runtime = import 'runtime.libsonnet';
local storage = import 'storage.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local params = ts.params;
local proto = 'horovod-spark';

// Horovod's own image: Spark (pyspark), Java, Open MPI and Gloo, horovod[spark].
local defaultImage = 'horovod/horovod:0.28.1';
local discoveryScript = 'gpu-discovery.sh';
local defaultScript = '/horovod/examples/spark/keras/keras_spark_mnist.py';

// A Spark property of spark-defaults.conf, such as spark.executor.memory:
// one token, no blanks or "=" (a format of this prototype's own).
local sparkConfKey = params.format(
  'sparkConfKey',
  "a Spark property name such as spark.executor.memory (spark. then letters, digits, '.', '_' and '-')",
  @'^spark\.[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$',
  examples=['spark.executor.memory', 'spark.sql.shuffle.partitions', 'spark.executor.extraJavaOptions'],
);

local params_ = common.params('spark', defaultImage) + batch.params('the driver') + storage.params(['storeDir']) + {
  master: params.group('The Spark standalone master: one pod, reached at spark://<name>-master:<master.port> through the Service <name>-master.', roles.params('the master', gpu=0) + roles.envParams('the master') + {
    port: params.int('Port of the master (spark://).', default=7077, min=1024, max=65535),
    uiPort: params.int('Port of the master\'s web UI.', default=8080, min=1024, max=65535),
  }),
  worker: params.group('The Spark workers: one executor each, which runs Horovod\'s processes. With worker.memory, Spark\'s SPARK_WORKER_MEMORY is that limit less 1 GiB for the worker\'s own JVM (at least 512 MiB); without, Spark takes the node\'s memory less 1 GiB.', roles.params('each worker', gpu=0) + roles.envParams('each worker') + {
    number: params.int('Number of workers.', default=2, min=1, max=1000),
    cores: params.int('Spark cores of each worker (SPARK_WORKER_CORES): tasks it runs at once. Unset: with GPUs, worker.gpu (one core per GPU, as Horovod\'s docs ask, so that taskCpus counts GPUs); without, the whole CPUs of worker.cpu, or without a CPU limit taskCpus (one task at a time).', min=1, max=1024),
    uiPort: params.int('Port of each worker\'s web UI.', default=8081, min=1024, max=65535),
  }),
  driver: params.group('The driver: a Job of one pod that runs the user\'s script with spark-submit, at a stable address the executors reach. The job\'s status is its status. With longLived, a pod that stays up at the same address for interactive sessions: kubectl exec -it deploy/<name>-driver -- pyspark.', roles.params(
    'the driver',
    gpu=0,
    exec='Command the driver runs with sh -c instead of spark-submit <script> <args> (SPARK_CONF_DIR holds the cluster\'s spark-defaults.conf, NUM_PROC is the number of Horovod processes, STORE_DIR the store). With longLived, the command the driver pod serves (a notebook server, say) instead of waiting for kubectl exec.',
  ) + roles.envParams('the driver') + {
    script: params.string('The user\'s Python script (or jar), in the image or under storage.mountPath: spark-submit <script> <args>. It calls horovod.spark.run (or an Estimator\'s fit) with num_proc=int(os.environ["NUM_PROC"]). The default is the MNIST example of Horovod\'s image.', default=defaultScript, format='nonEmpty'),
    args: params.list('Arguments of the script, one per --driver-args flag.', separator=''),
    startTimeout: params.seconds('How long Horovod waits for Spark to start every task (HOROVOD_SPARK_START_TIMEOUT).', default=600, min=1, max=86400),
    port: params.int('Port of the driver (spark.driver.port), which the executors connect to.', default=7078, min=1024, max=65535),
    blockManagerPort: params.int('Port of the block managers (spark.blockManager.port): the driver\'s, and each executor\'s (Spark tries the ports above it when it is taken).', default=7079, min=1024, max=65535),
  }),
  taskCpus: params.int('Spark cores per task (spark.task.cpus): with GPUs, the GPUs of each Horovod process (spark.task.resource.gpu.amount too); without, as your ETL and training need.', default=1, min=1, max=1024),
  gpuResource: params.string('Extended resource that counts GPUs.', default='nvidia.com/gpu', format='extendedResourceName'),
  sparkConf: params.map('More Spark properties, in spark-defaults.conf (spark.executor.memory=8g). trainsonnet\'s own are refused: set their parameters.', keys=sparkConfKey, values='line'),
  longLived: params.bool('A long-lived cluster for interactive use: the master, the workers and the driver pod as Deployments that run until deleted. The driver pod runs no script: open a session in it (kubectl exec -it deploy/<name>-driver -- pyspark), whose executors reach it at its stable address, or have it serve driver.exec.', default=false),
  ui: params.group('The master\'s web UI.', {
    serviceType: params.enum('Type of the Service <name>-ui of the UI port alone: ClusterIP (reach it with kubectl port-forward), NodePort or LoadBalancer. The master\'s Service <name>-master is always ClusterIP: Spark\'s port has no authentication.', ['ClusterIP', 'NodePort', 'LoadBalancer'], default='ClusterIP'),
    from: params.object('Who the NetworkPolicy admits to the UI port, as NetworkPolicy peers ([{namespaceSelector: {}}]: every pod of the cluster). Empty: the namespace with ClusterIP, any source with NodePort or LoadBalancer.', 'networking/v1.NetworkPolicyPeer', list=true),
  }),
  scratchDir: params.string('Node-local scratch space of every pod (an emptyDir): Spark\'s local dirs and the workers\' work dirs.', default='/scratch', format='absPath'),
  initTimeout: params.seconds('How long the workers and the driver wait for the master to accept connections before they fail with exit code 124; also how long the master and workers wait for the driver to appear.', default=300, min=1, max=86400),
  stopGrace: params.seconds('How long the master and workers wait, once the driver is gone, before they stop: a retried driver must be back within it. A driver that has ended says so (on driver.port + 1), and they stop at once; with backoffLimit, a failed one does not, so that they stay for its retry.', default=120, min=10, max=86400),
};

local gpuMode(p) = p.worker.gpu > 0;

// SPARK_WORKER_MEMORY, in MiB: the worker's memory limit less 1 GiB for
// the worker's own JVM (SPARK_DAEMON_MEMORY), at least 512 MiB.
local workerMemory(p) =
  if p.worker.memory == null then null
  else std.max(512, std.floor(ts.bytes(p.worker.memory) / 1048576) - 1024);

// Spark's Hadoop login asks the OS for the name of the process's user,
// and fails ("invalid null input: name") for a uid the image's /etc/passwd
// lacks (runAsUser 1000 in horovod/horovod). An init container copies the
// image's /etc/passwd, adds an entry for the uid when it has none, and
// every Spark container sees that copy at /etc/passwd (read-only).
local passwdDir = '/var/run/trainsonnet-passwd';
local passwdVolume = { name: 'trainsonnet-passwd', emptyDir: {} };
local passwdScript(p) =
  'set -e\nuid=$(id -u)\ncp /etc/passwd ' + passwdDir + '/passwd\n'
  + 'if ! grep -q "^[^:]*:[^:]*:$uid:" /etc/passwd; then\n'
  + '  name=spark\n'
  + "  if grep -q '^spark:' /etc/passwd; then name=spark$uid; fi\n"
  + '  echo "$name:x:$uid:$(id -g):Spark user of trainsonnet:' + p.scratchDir + ':/bin/sh" >>' + passwdDir + '/passwd\n'
  + '  echo "trainsonnet: user $uid is $name (the image\'s /etc/passwd has no entry for it; Spark\'s Hadoop login needs one)"\n'
  + 'fi\n';
local namesUser(p) = p.runAsUser != null && p.runAsUser != 0;

// The CPUs of a canonical CPU quantity ("4", "2500m"), or null for one
// in another form (trainsonnet writes quantities canonically).
local digitsOnly(s) = s != '' && std.stripChars(s, '0123456789') == '';
local cpus(q) =
  if q == null then null
  else if std.endsWith(q, 'm') && digitsOnly(std.substr(q, 0, std.length(q) - 1)) then std.parseInt(std.substr(q, 0, std.length(q) - 1)) / 1000
  else if digitsOnly(q) then std.parseInt(q)
  else null;

local cores(p) =
  if p.worker.cores != null then p.worker.cores
  else if gpuMode(p) then p.worker.gpu
  else if cpus(p.worker.cpu) != null then std.max(1, std.floor(cpus(p.worker.cpu)))
  else p.taskCpus;
local slots(p) = p.worker.number * std.floor(cores(p) / p.taskCpus);

local configName(p) = p.name + '-spark';
local masterService(p) = p.name + '-master';
local masterURL(p) = 'spark://' + masterService(p) + ':' + p.master.port;
local driverHost(p) = roles.podHost(p, 'driver');

// spark-defaults.conf, rendered: every pod reads it through SPARK_CONF_DIR.
local ownConf(p) = {
  'spark.master': masterURL(p),
  'spark.task.cpus': p.taskCpus,
  'spark.local.dir': p.scratchDir + '/spark',
  // the driver's address and ports: the driver Job's, or the long-lived
  // driver pod's, whose sessions are the drivers
  'spark.driver.host': driverHost(p),
  'spark.driver.bindAddress': '0.0.0.0',
  'spark.driver.port': p.driver.port,
  'spark.blockManager.port': p.driver.blockManagerPort,
} + (if gpuMode(p) then {
  'spark.worker.resource.gpu.amount': p.worker.gpu,
  'spark.worker.resource.gpu.discoveryScript': runtime.dir + '/' + discoveryScript,
  'spark.executor.resource.gpu.amount': p.worker.gpu,
  'spark.task.resource.gpu.amount': p.taskCpus,
} else {});
local defaultsConf(p) =
  local conf = ownConf(p) + p.sparkConf;
  std.join('', [k + ' ' + conf[k] + '\n' for k in std.objectFields(conf)]);

local config(p) = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: common.metadata(proto, p, configName(p)),
  data: runtime.files + {
    [discoveryScript]: ts.asset('assets/' + discoveryScript, importstr 'assets/gpu-discovery.sh'),
    'spark-defaults.conf': defaultsConf(p),
  },
};

local podIP = { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } };
local ownEnv(p) = [
  podIP,
  { name: 'SPARK_CONF_DIR', value: runtime.dir },
  { name: 'STORE_DIR', value: storage.dir(p, 'storeDir') },
  { name: 'SPARK_LOCAL_IP', value: '$(POD_IP)' },
  { name: 'SPARK_USER', value: 'spark' },
  { name: 'HADOOP_USER_NAME', value: 'spark' },
  { name: 'TS_INIT_TIMEOUT', value: std.toString(p.initTimeout) },
  { name: 'TS_WATCH_GRACE', value: std.toString(p.stopGrace) },
] + (if p.longLived then [] else runtime.endEnv(roles.presenceName(p, 'driver'), 1 + p.worker.number, p.backoffLimit));

// The master and the workers stop once the driver is gone (not in a
// long-lived cluster): at once when it says that the job is over, on its
// end port (driver.port + 1, free once spark-submit has ended), else
// stopGrace after it has gone; the workers and the driver wait for the
// master.
local watchDriver(p) = if p.longLived then null else roles.presenceName(p, 'driver');
local endPort(p) = if !p.longLived then runtime.endPort(p.driver.port);
local waitMaster(p) = [masterService(p) + ':' + p.master.port];

local storeOf(p) = storage.pod(p, 'spark', [storage.dir(p, 'storeDir')]);

local role(p, r, store) =
  local base = {
    name: r,
    image: p.image,
    imagePullPolicy: p.imagePullPolicy,
    env: ownEnv(p) + common.env(p.env + p[r].env),
    resources: roles.resources(cpu=p[r].cpu, memory=p[r].memory, gpu=p[r].gpu, gpuResource=p.gpuResource),
    nodeSelector: p[r].nodeSelector,
    tolerations: p[r].tolerations,
    volumes: [runtime.volume(configName(p)), roles.scratch(p.scratchDir).volume] + store.volumes,
    mounts: [runtime.mount, roles.scratch(p.scratchDir).mount] + store.mounts,
  };
  if !namesUser(p) then base else base + {
    volumes+: [passwdVolume],
    mounts+: [{ name: passwdVolume.name, mountPath: '/etc/passwd', subPath: 'passwd', readOnly: true }],
    initContainers: [roles.container(p, base + {
      name: 'passwd',
      command: ['sh', '-c', passwdScript(p)],
      env: [],
      resources: null,
      mounts: [{ name: passwdVolume.name, mountPath: passwdDir }],
    })],
  };

local master(p, store) = role(p, 'master', store) + {
  kind: if p.longLived then 'Deployment' else 'Job',
  command: runtime.run(
    ['spark-class', 'org.apache.spark.deploy.master.Master', '--host', '$(POD_IP)', '--port', std.toString(p.master.port), '--webui-port', std.toString(p.master.uiPort)],
    watch=watchDriver(p),
    hearEnd=endPort(p),
  ),
  ports: [{ name: 'spark', port: p.master.port }, { name: 'ui', port: p.master.uiPort }],
  readinessProbe: { tcpSocket: { port: 'spark' }, periodSeconds: 5 },
};

local worker(p, store) = role(p, 'worker', store) + {
  kind: if p.longLived then 'Deployment' else 'IndexedJob',
  count: p.worker.number,
  command: runtime.run(
    ['spark-class', 'org.apache.spark.deploy.worker.Worker', '--host', '$(POD_IP)', '--webui-port', std.toString(p.worker.uiPort), masterURL(p)],
    waits=waitMaster(p),
    watch=watchDriver(p),
    hearEnd=endPort(p),
  ),
  env+: [
    { name: 'SPARK_WORKER_CORES', value: std.toString(cores(p)) },
    { name: 'SPARK_WORKER_DIR', value: p.scratchDir + '/work' },
  ] + (if workerMemory(p) != null then [{ name: 'SPARK_WORKER_MEMORY', value: workerMemory(p) + 'm' }] else [])
  + (if gpuMode(p) then [{ name: 'TS_GPUS', value: std.toString(p.worker.gpu) }] else []),
  ports: [{ name: 'worker-ui', port: p.worker.uiPort }],
};

// Long-lived, the driver pod waits for sessions (kubectl exec), or serves
// driver.exec.
local idle = ['sh', '-c', 'trap "exit 0" TERM INT; echo "trainsonnet: the cluster is up; start a session here: kubectl exec -it deploy/$TS_DRIVER -- pyspark"; while :; do sleep 3600 & wait $!; done'];
local driver(p, store) = role(p, 'driver', store) + {
  kind: if p.longLived then 'Deployment' else 'Job',
  dns: true,
  [if p.longLived then 'strategy']: { type: 'Recreate' },
  lead: true,
  command: runtime.run(
    if p.driver.exec != null then ['sh', '-c', p.driver.exec]
    else if p.longLived then idle
    else ['spark-submit', p.driver.script] + p.driver.args,
    waits=waitMaster(p),
    tellEnd=endPort(p),
  ),
  env+: [
    { name: 'NUM_PROC', value: std.toString(slots(p)) },
    { name: 'HOROVOD_SPARK_START_TIMEOUT', value: std.toString(p.driver.startTimeout) },
  ] + (if p.longLived then [{ name: 'TS_DRIVER', value: p.name + '-driver' }] else []),
  ports: [{ name: 'driver', port: p.driver.port }, { name: 'block-manager', port: p.driver.blockManagerPort }],
};

local service(p) = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: common.metadata(proto, p, masterService(p), 'master'),
  spec: {
    selector: common.selector(proto, p, 'master'),
    ports: [
      { name: 'spark', port: p.master.port, targetPort: 'spark', protocol: 'TCP' },
      { name: 'ui', port: p.master.uiPort, targetPort: 'ui', protocol: 'TCP' },
    ],
  },
};

local uiService(p) = if p.ui.serviceType == 'ClusterIP' then null else {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: common.metadata(proto, p, p.name + '-ui', 'master'),
  spec: {
    type: p.ui.serviceType,
    selector: common.selector(proto, p, 'master'),
    ports: [{ name: 'ui', port: p.master.uiPort, targetPort: 'ui', protocol: 'TCP' }],
  },
};

// The job's pods reach each other on any TCP port (Horovod's services and
// Open MPI or Gloo use random ones); from elsewhere, only the master's UI.
local uiRule(p) = common.uiRule([p.master.uiPort], p.ui.from, p.ui.serviceType);

local ownConfKeys = [
  'spark.master', 'spark.task.cpus', 'spark.local.dir', 'spark.driver.host', 'spark.driver.bindAddress', 'spark.driver.port', 'spark.blockManager.port',
  'spark.worker.resource.gpu.amount', 'spark.worker.resource.gpu.discoveryScript', 'spark.executor.resource.gpu.amount', 'spark.task.resource.gpu.amount',
];

ts.prototype({
  name: proto,
  summary: 'Horovod on Spark: a Spark standalone cluster and a driver Job running your script, with cores that count GPUs and a cluster that ends with the driver',
  replaces: 'the setup Horovod\'s Spark docs leave to the reader (horovod.spark.run on a Spark cluster, 2019)',
  description: |||
    A Spark standalone master (a Job of one pod, reached at spark://<name>-master:7077
    through the ClusterIP Service <name>-master, web UI on 8080), worker.number workers (an
    Indexed Job; each one executor) pointing at it, and a driver Job that runs your script
    with spark-submit once the master answers. The driver has a stable address,
    <name>-driver.<name> (the job's headless Service), and fixed ports (spark.driver.port
    7078, spark.blockManager.port 7079), so the executors reach it with no manual edit.

    Every pod reads the cluster's settings from spark-defaults.conf, rendered into the
    ConfigMap <name>-spark and found through SPARK_CONF_DIR: the master URL, the driver's
    address and ports, spark.task.cpus (taskCpus), the GPU settings and sparkConf. The
    driver gets NUM_PROC (the Horovod processes: every slot of the workers, worker.number ×
    cores / taskCpus) and HOROVOD_SPARK_START_TIMEOUT (driver.startTimeout, 600 s).

    GPU mode (worker.gpu > 0), Horovod's recipe: each worker's Spark cores
    (SPARK_WORKER_CORES) are its GPUs, which are also its nvidia.com/gpu limit, so taskCpus
    is the GPUs of each Horovod process; Spark 3's GPU scheduling is set to match
    (spark.worker.resource.gpu.amount and a discovery script, spark.executor.resource.gpu.amount,
    spark.task.resource.gpu.amount = taskCpus). CPU mode: taskCpus as given, the same cluster
    serving ETL and training. Numbers that contradict each other are refused, saying why:
    cores other than the GPUs, GPUs a task size leaves idle, a task larger than a worker.
    NUM_PROC is always the slots there are, so Horovod never waits startTimeout for tasks
    Spark cannot start.

    The job ends by itself, with no operator and no RBAC: once spark-submit has ended, the
    driver says so on its end port (driver.port + 1) and the master and the workers stop
    (exit 0) at once; they also watch the driver's ready-only Service <name>-driver and stop
    once it has been gone for stopGrace (a driver deleted, or one that failed and is
    retried: with backoffLimit it says nothing then). The job's status is the driver Job's. With
    longLived the master, the workers and the driver pod are Deployments that run until
    deleted: the driver pod keeps the driver's address and ports and runs no script, so
    that the seed's interactive use works there: kubectl exec -it deploy/<name>-driver --
    pyspark (or driver.exec serves a notebook).

    The NetworkPolicy lets the job's pods reach each other on any TCP port (Horovod and
    Open MPI use random ports, unencrypted: Horovod's docs ask for isolation) and admits
    only the UI port from elsewhere (ui.from). The shared store (storage.*) holds storeDir
    for the Estimator's Store and Petastorm data. The pods run as user 1000 without
    privileges. Spark's Hadoop login needs a name for that user, which horovod/horovod's
    /etc/passwd lacks: an init container gives it one (spark, home scratchDir) in a copy of
    the image's /etc/passwd that the Spark containers see, unless the image has the user.
    With worker.memory, SPARK_WORKER_MEMORY is that limit less 1 GiB.
  |||,

  params: params_ + {
    runAsUser+: {
      default: 1000,
      doc: 'User id every pod runs as: 1000 by default, so that nothing runs as root (Pod Security restricted). Spark\'s Hadoop login needs a name for it: when the image\'s /etc/passwd has none, the pods get a copy with one (spark). 0 runs as root.',
    },
    runAsGroup+: { default: 1000 },
    networkPolicy+: { doc: 'Create a NetworkPolicy that lets the job\'s pods reach each other on any TCP port and admits only the UI port from elsewhere (ui.from). Turn off only if your cluster manages policies elsewhere.' },
  },

  validate(p)::
    storage.validate(p, ['storeDir']) + [
    ts.check(!(p.jobset && p.longLived), 'jobset',
             'cannot go with longLived: a long-lived cluster is Deployments, and a JobSet holds Jobs that end'),
    roles.nameFits(p, [{ name: 'worker', kind: 'IndexedJob', count: p.worker.number }, { name: 'master' }, { name: 'driver' }]),
    ts.check(!gpuMode(p) || p.worker.cores == null || p.worker.cores == p.worker.gpu, 'worker.cores',
             'must be ' + p.worker.gpu + ' (worker.gpu) or unset: with GPUs, a worker\'s Spark cores are its GPUs, so that taskCpus counts the GPUs of each Horovod process'),
    ts.check(p.taskCpus <= cores(p), 'taskCpus',
             'must be at most ' + cores(p) + ', the Spark cores of each worker' + (if gpuMode(p) then ' (its GPUs)' else '') + ': no task could ever start'),
    ts.check(!gpuMode(p) || p.taskCpus > cores(p) || std.floor(cores(p) / p.taskCpus) * p.taskCpus == cores(p), 'taskCpus',
             'must divide worker.gpu (' + p.worker.gpu + '): each Horovod process takes taskCpus GPUs, and the rest of a worker\'s GPUs would sit idle'),
    ts.check(gpuMode(p) || p.worker.cores == null || cpus(p.worker.cpu) == null || p.worker.cores <= std.ceil(cpus(p.worker.cpu)), 'worker.cores',
             'must be at most ' + (if cpus(p.worker.cpu) == null then '' else std.ceil(cpus(p.worker.cpu))) + ', the CPUs of worker.cpu (' + p.worker.cpu + '): Spark would run more tasks at once than the worker has CPUs'),
  ] + [
    ts.check(!std.member(ownConfKeys, k), 'sparkConf', k + ' is set by trainsonnet: ' + {
      'spark.master': 'the master is <name>-master',
      'spark.task.cpus': 'set taskCpus',
      'spark.local.dir': 'set scratchDir',
      'spark.driver.host': 'the driver is <name>-driver.<name>',
      'spark.driver.bindAddress': 'the driver binds every address of its pod',
      'spark.driver.port': 'set driver.port',
      'spark.blockManager.port': 'set driver.blockManagerPort',
      'spark.worker.resource.gpu.amount': 'set worker.gpu',
      'spark.worker.resource.gpu.discoveryScript': 'trainsonnet provides one',
      'spark.executor.resource.gpu.amount': 'set worker.gpu',
      'spark.task.resource.gpu.amount': 'set taskCpus',
    }[k])
    for k in std.objectFields(p.sparkConf)
  ],

  warnings(p):: storage.warnings(p, 'spark', [storage.dir(p, 'storeDir')]) + [
    if p.driver.exec != null then roles.shWarning('driver.exec', p.driver.exec),
    if p.longLived && (p.driver.script != defaultScript || p.driver.args != []) then 'driver.script and driver.args are not used with longLived: the driver pod runs no script; start sessions in it (kubectl exec -it deploy/' + p.name + '-driver -- pyspark), or set driver.exec to what it serves',
    if p.driver.exec != null && p.driver.args != [] then 'driver.args is not used: the driver runs driver.exec',
    if p.ui.serviceType != 'ClusterIP' then 'ui.serviceType ' + p.ui.serviceType + ': Spark\'s UI has no login, so whoever reaches it sees (and may kill) every application',
  ],

  render(p)::
    local store = storeOf(p);
    [
      common.networkPolicy(proto, p, [uiRule(p)]),
      storage.secret(proto, p, 'spark'),
      config(p),
      service(p),
      uiService(p),
    ] + roles.objects(proto, p, [master(p, store), worker(p, store), driver(p, store)]),
})
