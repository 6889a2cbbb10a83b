// horovod: a Horovod job over ssh in the shape of the Helm stable/horovod
// chart, its values as typed parameters, with the chart's bugs fixed.

local batch = import 'batch.libsonnet';
local chart = import 'chart.libsonnet';
local common = import 'common.libsonnet';
local mpi = import 'mpi.libsonnet';
local roles = import 'roles.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local params = ts.params;
local proto = 'horovod';

local execOf(p) = chart.exec(p.exec, p.driver.args, 'driver.args');

// The driver runs as worker 0 (one Indexed Job that the Job controller
// ends when worker 0 ends) where its pod would be a worker's: the same
// image, resources, scheduling, privilege and env, and a command to run
// (without one it stays up, a Deployment).
local asWorker(p) = p.driverAsWorker && execOf(p) != null
                    && chart.roleOf(p, p.driver) == chart.roleOf(p, p.worker) && p.driver.env == p.worker.env;
// Its pods: the workers, and worker 0 too when the driver is it.
local pods(p) = p.worker.number + (if asWorker(p) then 1 else 0);

// The hostfile: the driver first (it is a rank), then the workers.
local driverHost(p) = if asWorker(p) then roles.podHost(p, 'worker', 0) else roles.podHost(p, 'driver');
local hostHead(p) = if asWorker(p) then '' else driverHost(p) + ' slots=' + chart.slotsOf(p, p.driver) + '\n';
local hostLinePrefix(p) = roles.podPrefix(p, 'worker');
local hostLineSuffix(p) = '.' + p.name + ' slots=' + chart.slotsOf(p, p.worker);

// The chart mounted its hostfile at /horovod/generated/hostfile, and its
// users wrote that path into master.args; it still works.
local chartDir = '/horovod/generated';

local params_ = common.params(proto) + batch.params('the driver') + mpi.params + mpi.sshParams() + chart.shared('the driver and of every worker', ['driver', 'worker']) + {
  // The chart's fullnameOverride was the name of every object.
  name+: { replaces: 'fullnameOverride' },
  useHostNetwork: params.bool('Run the driver and the workers in their nodes\' network, as the chart\'s README advised for speed. At most one pod of the job per node; ssh.port must not be 22.'),
  useHostPID: params.bool('Share the nodes\' process namespace with the job\'s pods (the chart\'s useHostPID).'),
  exec: params.string('Command the driver runs with sh -c once every worker answers, as one string: the same as driver.args, which it replaces when both are set (a warning says so).', format='nonEmpty'),
  initTimeout+: { doc: 'How long the driver waits for every worker to answer over ssh before it fails with exit code 124; also how long a worker waits for the driver to appear. (The chart tried 30 times, then restarted the pod.)' },
  mca: params.map('Open MPI MCA parameters for the driver (OMPI_MCA_<name>), added to or replacing the defaults (see describe openmpi).', keys='envName'),
  ssh+: { params+: {
    port+: { doc: 'Port of sshd in every pod, of the ssh client, the Services and the containerPort; unprivileged by default so it runs without root (the chart used 22). Must not be 22 with useHostNetwork.' },
  } },
  driverAsWorker: params.bool('Run the driver as worker 0 where its pod would be a worker\'s (the same image, resources, scheduling, privilege and env, and a command: driver.args or exec): one Indexed Job of worker.number + 1 pods, <name>-worker-0 the driver, that the Job controller ends when worker 0 ends (successPolicy), stopping the others itself. false: a driver Job of its own, <name>-driver.', default=true),
  worker: params.group('The workers: ranks 1 to number, in an Indexed Job that ends when the driver does (the chart\'s StatefulSet never ended).', {
    number: params.int('Number of worker pods, at most 5,000 (the largest job the pods\' runtime is tested at). The job has number + 1 ranks\' pods: the driver is one too.', default=3, min=1, max=5000, aliases=['workers']),
    podManagementPolicy: params.enum('How the worker pods start. They always start together (Parallel): an Indexed Job has no OrderedReady.', ['Parallel', 'OrderedReady'], default='Parallel'),
    image: chart.image('workers', 'worker', 'horovod/horovod', '0.28.1', 'IfNotPresent'),
  } + chart.role('each worker', '(The chart documented worker.env but never used it.)')),
  driver: params.group('The driver: rank 0, which waits for the workers and runs args. The chart called it master; Horovod renamed it driver (master.* keys still work, with a warning).', {
    image: chart.image('driver', 'master', null, null, null),
    args: params.list('Command the driver runs once every worker answers: the items joined by spaces and run with sh -c, or with bash -c, as the chart ran them, when they use bash syntax ([[, source, arrays, {1..4}; a warning says so, and the image must have bash). The job ends with its exit code. Unset (or empty: [], or the chart\'s {}): the driver stays up for interactive use. One item per --driver-args flag; an empty item is refused, as an empty exec.', items='nonEmpty', separator=''),
  } + chart.role('the driver', '(The chart gave master.env to the workers too.)'), replaces='master'),
};

// job: the driver and the workers, for mpi.jobs.
local job(p) =
  local roleOf(r) = chart.roleOf(p, r) + { init: null, env: common.env(p.env + r.env) };
  {
    port: p.ssh.port,
    initTimeout: p.initTimeout,
    secretName: mpi.secretName(p, p.ssh.secret),
    volumes: [{ name: 'trainsonnet-hostfile', configMap: { name: mpi.configName(p), items: [{ key: 'hostfile', path: 'hostfile' }], defaultMode: 292 } }],
    mounts: [{ name: 'trainsonnet-hostfile', mountPath: chartDir, readOnly: true }],
    oneNode: null,  // host network: no two pods of the job on one node
    launcherAsWorker: asWorker(p),
    launcher: roleOf(p.driver) + {
      role: 'driver',
      rankHost: driverHost(p),
      exec: execOf(p),
    },
    worker: roleOf(p.worker) + {
      count: pods(p),
      waitForGPUDriver: false,
      initContainers: [],
      sidecars: [],
    },
  };

ts.prototype({
  name: proto,
  summary: 'A Horovod job over ssh in the shape of the Helm stable/horovod chart: a driver and N workers',
  replaces: 'the Helm stable/horovod chart (helm/charts:stable/horovod, 2018-2020)',
  // Its values files' spellings ("" for unset, quoted numbers, 2GB, {}), taken with a warning.
  spellings: ts.params.chartSpellings,
  description: |||
    The chart's values as typed parameters: worker.number, worker.image, driver.args,
    resources, ssh.port, useHostNetwork, ... The chart called the driver "master"; Horovod
    renamed it, and so does trainsonnet (a values file with master: still works, with a
    warning). The driver is rank 0 and runs sshd like the workers; the hostfile
    (/etc/trainsonnet/hostfile, Open MPI's default in the driver, and the chart's
    /horovod/generated/hostfile) lists the driver first, then the workers, each with slots =
    the pod's GPU limit (1 without GPUs). So run `mpirun -np <(worker.number + 1) x slots>`:
    the chart's example ran -np 3 on 2 workers of 1 GPU.

    The driver waits until every worker answers over ssh, at most initTimeout seconds (then
    it exits 124 naming the workers that never answered), runs driver.args with sh -c (with
    bash -c, as the chart did, when they use bash syntax: a warning says so) and ends with
    its exit code; the workers, an Indexed Job ready once their sshd runs,
    end with it (the chart's StatefulSet ran until helm delete). Where the driver's pod would
    be a worker's (the same image, resources, scheduling, privilege and env), it is worker 0
    of one Indexed Job of worker.number + 1 pods (driverAsWorker), which the Job controller
    ends when worker 0 ends, stopping the other workers itself. ssh keys are generated at
    render time (trainsonnet warns that the output holds a private key) or taken from an
    existing Secret (ssh.secret); keys pasted into values are not used. ssh.port is used by
    sshd, the client, the Services and the containerPorts alike. With useHostNetwork every
    pod shares its node's network, one pod of the job per node, and ssh.port must not be 22
    (the node's sshd has it: the chart's pods stayed Pending, helm/charts#7209). Selectors use
    only stable labels (the chart's heritage selector broke upgrades). Nothing is
    privileged unless asked.

    env applies to every pod, worker.env to the workers and driver.env to the driver (the
    chart applied master.env to the workers by mistake). The training processes that
    mpirun starts over ssh see them too, with their pod's values: sshd alone would hand
    them a bare environment, so the chart's users had to repeat every variable with -x.
  |||,

  ownEnv: mpi.ownEnv,
  params: params_,

  removed: {
    'ssh.useSecrets': 'ssh keys are always used: trainsonnet generates a key pair for every job, or takes an existing Secret (ssh.secret)',
    'ssh.hostKey': 'keys pasted into values end up in your files and release history; trainsonnet generates a key pair for every job, or create a Secret of type kubernetes.io/ssh-auth and set ssh.secret',
    'ssh.hostKeyPub': 'keys pasted into values end up in your files and release history; trainsonnet generates a key pair for every job, or create a Secret of type kubernetes.io/ssh-auth and set ssh.secret',
    nameOverride: 'every object is named after name (<name>-driver, <name>-worker, ...)',
    capabilities: 'containers keep the default capabilities (root sshd needs them); add more with a kustomize patch if you must',
  },

  // The chart's values.yaml (or a values file written for it) in use.
  chart: {
    name: 'the stable/horovod chart',
    keys: ['master', 'ssh.useSecrets', 'ssh.hostKey', 'ssh.hostKeyPub', 'nameOverride', 'fullnameOverride', 'capabilities'],
    defaults: {
      'worker.image.pullPolicy': { value: 'Always', why: 'its values.yaml pulled the images again at every start' },
    },
    differs: {
      'worker.image.tag': 'horovod/horovod:0.28.1 here, where the chart\'s values.yaml had horovod/horovod:0.19.3-tf2.1.0-torch-mxnet1.6.0-py3.6-gpu (TensorFlow 2.1, PyTorch, MXNet 1.6): set worker.image.tag to keep that',
      'ssh.port': '2022 here, so that sshd needs no privileged port (the chart\'s was 22); the pods\' ssh configuration has it, so mpirun needs no port of its own: set ssh.port: 22 to keep the chart\'s',
    },
    notes: [
      'the pods are <name>-driver and <name>-worker-<i> (the hostfile lists them, the driver first, with slots = GPUs; where the driver\'s pod would be a worker\'s, it is worker 0: driverAsWorker), where the chart\'s were <name>-master and <name>-<i> with slots always 1',
      'driver.env (the chart\'s master.env) is the driver\'s alone: the chart gave master.env to the workers too, by mistake; put what every rank needs in env (every pod) or worker.env',
    ],
  },

  validate(p):: mpi.validate(p, p.worker.number, p.ssh.port) + [
    roles.hostNetworkPort('ssh.port', p.ssh.port, p.useHostNetwork, 'the pods share', ' (the chart\'s pods stayed Pending)'),
    ts.check(p.worker.podManagementPolicy == 'Parallel', 'worker.podManagementPolicy',
             'must be Parallel: the workers are an Indexed Job, whose pods always start together; an MPI job needs all of them anyway'),
    mpi.checkConfigSize(p, 'worker.number', hostLinePrefix(p), hostLineSuffix(p), 0, pods(p), hostHead(p)),
  ] + chart.gpuChecks(p, ['driver', 'worker']) + mpi.checks(p, { env: p.env, 'worker.env': p.worker.env, 'driver.env': p.driver.env }),

  warnings(p):: [
    mpi.generatedKeyWarning(p, p.ssh.secret, '--ssh-secret'),
    roles.hostNetworkWarning(p, p.useHostNetwork, 'the pods\' sshd (port ' + p.ssh.port + ') is'),
  ] + chart.execWarnings(p.exec, p.driver.args, 'driver.args', 'the driver') + [
    if p.driver.privileged then 'driver.privileged: the driver\'s container is privileged and can do anything on its node',
    if p.worker.privileged then 'worker.privileged: the workers\' containers are privileged and can do anything on their nodes',
  ],

  render(p):: [
    common.networkPolicy(proto, p),
    mpi.sshSecret(proto, p, p.ssh.secret),
    mpi.config(proto, p, ts.indexedLines(hostLinePrefix(p), hostLineSuffix(p), 0, pods(p), hostHead(p))),
  ] + mpi.jobs(proto, p, job(p)),
})
