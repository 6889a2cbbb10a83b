// openmpi: an Open MPI job over ssh, a launcher and N workers.
// Replaces the Kubeflow openmpi ksonnet prototype (kubeflow/kubeflow, 2018).

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local kubeflow = import 'kubeflow.libsonnet';
local mpi = import 'mpi.libsonnet';
local roles = import 'roles.libsonnet';
local runtime = import 'runtime.libsonnet';
local trainer = import 'trainer.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local params = ts.params;
local proto = 'openmpi';

local s3Params = params.group(
  'Optional S3 staging: copy data into every worker before sshd starts, and results out of every worker after the launcher ends (to <uploadTo>/<namespace>/<name>/<pod>). Paths in the workers must be under dataDir or a volumeMount.',
  {
    secret: params.string('Secret whose keys become the environment of the S3 containers: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, and optionally AWS_SESSION_TOKEN, AWS_DEFAULT_REGION. Unset: the AWS CLI finds credentials itself (IRSA, instance profile).', format='dns1123Subdomain', aliases=['s3Secret'], replaces='s3Secret'),
    downloadFrom: params.string('s3:// URI copied recursively into each worker before the run.', format='s3URI', aliases=['downloadDataFrom'], replaces='downloadDataFrom'),
    downloadTo: params.string('Path in each worker the download goes to.', format='absPath', aliases=['downloadDataTo'], replaces='downloadDataTo'),
    uploadFrom: params.string('Path in each worker copied out after the launcher ends.', format='absPath', aliases=['uploadDataFrom'], replaces='uploadDataFrom'),
    uploadTo: params.string('s3:// URI the results go under, as <uploadTo>/<namespace>/<name>/<pod>.', format='s3URI', aliases=['uploadDataTo'], replaces='uploadDataTo'),
    endpoint: params.string('Endpoint URL of an S3-compatible store (MinIO, Ceph). Unset: AWS.', format='nonEmpty'),
    image: params.string('Image with the AWS CLI, for the S3 containers.', default='amazon/aws-cli:2.22.35', format='image'),
  }
);


// staging: whether the workers have S3 containers (they run s3.sh).
local staging(p) = p.s3.downloadFrom != null || p.s3.uploadFrom != null;

// The hostfile: one line per worker, "<name>-worker-<i>.<name> slots=<n>".
local slots(p) = if p.slots != null then p.slots else if p.gpu > 0 then p.gpu else 1;
local hostLinePrefix(p) = roles.podPrefix(p, 'worker');
local hostLineSuffix(p) = '.' + p.name + ' slots=' + slots(p);

// The Kubeflow prototype's hostfile, which its users wrote into exec and
// typed in kubectl exec (mpiexec --hostfile /kubeflow/openmpi/assets/hostfile):
// the same hostfile is mounted there too, so those commands still work.
local kubeflowDir = '/kubeflow/openmpi/assets';
local kubeflowHostfile = kubeflowDir + '/hostfile';

// kubeflowPaths: the Kubeflow prototype's paths a command names, other than
// its hostfile (its init.sh, gen_hostfile.sh, workdir), which trainsonnet's
// pods do not have.
local kubeflowPaths(cmd) =
  cmd != null && ts.contains(std.strReplace(cmd, kubeflowHostfile, ''), '/kubeflow/openmpi/');

// sharedPath checks that an S3 staging path is on a volume the S3
// container and the worker share: dataDir or one of the volumeMounts.
local sharedPath(p, param, path) =
  local dirs = [p.dataDir] + [m.mountPath for m in p.volumeMounts];
  local under(d) = path == d || std.startsWith(path, if d == '/' then '/' else d + '/');
  ts.check(path == null || std.length([d for d in dirs if under(d)]) > 0, param,
           'must be under dataDir (' + p.dataDir + ') or a volumeMount, so that the S3 container and the worker share it');

// job: the launcher and the workers, for mpi.jobs.
local job(p) =
  local dataMount = [{ name: 'trainsonnet-data', mountPath: p.dataDir }];
  local containerSecurity = common.containerSecurityContext(p);
  local s3Env(pairs) =
    [{ name: k, value: pairs[k] } for k in std.objectFields(pairs) if pairs[k] != null]
    + (if p.s3.endpoint != null then [{ name: 'TS_S3_ENDPOINT', value: p.s3.endpoint }] else []);
  local s3Container(name, role, env) = {
    name: name,
    image: p.s3.image,
    imagePullPolicy: roles.pullPolicy(p.s3.image, p.imagePullPolicy),
    command: ['sh', mpi.s3ScriptPath, role],
    env: env,
    [if p.s3.secret != null then 'envFrom']: [{ secretRef: { name: p.s3.secret } }],
    securityContext: containerSecurity,
    volumeMounts: [runtime.mount,
                   { name: 'trainsonnet-run', mountPath: mpi.runDir }] + dataMount + p.volumeMounts,
  };
  {
    port: p.ssh.port,
    initTimeout: p.initTimeout,
    secretName: mpi.secretName(p, p.ssh.secret),
    volumes: [
      { name: 'trainsonnet-data', emptyDir: {} },
      { name: 'trainsonnet-hostfile', configMap: { name: mpi.configName(p), items: [{ key: 'hostfile', path: 'hostfile' }], defaultMode: 292 } },
    ],
    mounts: dataMount + [{ name: 'trainsonnet-hostfile', mountPath: kubeflowDir, readOnly: true }],
    oneNode: 'worker',  // only the workers share their node's network
    launcherAsWorker: p.launcherAsWorker,
    launcher: {
      role: 'launcher',
      image: if p.launcher.image != null then p.launcher.image else p.image,
      imagePullPolicy: p.imagePullPolicy,
      init: p.init,
      exec: if !p.entrypoint then p.exec,
      entrypoint: if p.entrypoint then [kubeflow.kubelet(a) for a in p.args],
      rankHost: if p.launcherAsWorker then roles.podHost(p, 'worker', 0),
      env: common.env(p.env + p.launcher.env),
      resources: roles.resources(cpu=p.launcher.cpu, memory=p.launcher.memory, gpu=p.launcher.gpu, gpuResource=p.gpuResource),
      nodeSelector: p.launcher.nodeSelector,
      tolerations: p.launcher.tolerations,
      privileged: false,
      hostNetwork: false,
      hostPID: false,
    },
    worker: {
      count: p.workers,
      image: p.image,
      imagePullPolicy: p.imagePullPolicy,
      init: p.init,
      env: common.env(p.env),
      resources: roles.resources(cpu=p.cpu, memory=p.memory, gpu=p.gpu, gpuResource=p.gpuResource, custom=p.customResources),
      nodeSelector: p.nodeSelector,
      tolerations: p.tolerations,
      privileged: false,
      waitForGPUDriver: p.waitForGPUDriver,
      hostNetwork: p.useHostNetwork,
      hostPID: false,
      initContainers: if p.s3.downloadFrom == null then [] else [
        s3Container('s3-download', 's3-download', s3Env({ TS_S3_FROM: p.s3.downloadFrom, TS_S3_TO: p.s3.downloadTo })),
      ],
      sidecars: if p.s3.uploadFrom == null then [] else [
        s3Container('s3-upload', 's3-upload', s3Env({ TS_S3_FROM: p.s3.uploadFrom, TS_S3_TO: p.s3.uploadTo, TS_JOB_NAME: p.name })
                                              + mpi.watchEnv(p, sidecar=true)
                                              + [
                                                { name: 'TS_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                                                { name: 'TS_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                                              ]),
      ],
    },
  };

// entrypointWarnings: what differs for an operator's launcher that runs
// its image's ENTRYPOINT (field: where the command is missing): a JobSet,
// and with the launcher as a rank (asRank: the field that says so) a
// launcher of its own beside one more worker (workers of them).
local entrypointWarnings(field, asRank, workers) = [
  field + ': none: the image\'s ENTRYPOINT runs in the launcher as it is, unwrapped, and tells the workers nothing when it ends: rendered as a JobSet (jobset), whose controller ends them with the launcher (it needs the JobSet controller, which the Kubeflow Trainer\'s clusters run); for plain Jobs set exec to the command the ENTRYPOINT runs',
  if asRank != null then
    asRank + ': the launcher runs its image\'s ENTRYPOINT, which trainsonnet\'s worker 0 cannot (it runs sshd): the launcher is a pod of its own here, no rank, beside ' + workers + ' workers, the same hosts and slots',
];

// ---- An MPIJob (kubeflow.org/v2beta1) as the parameters (from) --------

local fromMPIJob(o) =
  local at = 'spec.mpiReplicaSpecs';
  local spec = std.get(o, 'spec', {});
  local rs = std.get(spec, 'mpiReplicaSpecs', {});
  local launcher = std.get(rs, 'Launcher');
  local worker = std.get(rs, 'Worker');
  local none = { params: {}, warnings: [], errors: [], fields: {} };
  local wpod = if worker == null then none else kubeflow.pod(worker, '', at + '.Worker', ['hostNetwork']);
  local hostNet = worker != null && std.get(std.get(std.get(worker, 'template', {}), 'spec', {}), 'hostNetwork') == true;
  local lpod = if launcher == null then none else kubeflow.pod(launcher, '', at + '.Launcher');
  local lc = if launcher == null then null else kubeflow.container(std.get(std.get(launcher, 'template', {}), 'spec', {}), '');
  local wc = if worker == null then null else kubeflow.container(std.get(std.get(worker, 'template', {}), 'spec', {}), '');
  local lAt = at + '.Launcher.template.spec.containers[' + std.get(lc, 'name', '0') + ']';
  local wAt = at + '.Worker.template.spec.containers[' + std.get(wc, 'name', '0') + ']';
  local words = if lc == null then [] else kubeflow.words(lc);
  local wwords = if wc == null then [] else kubeflow.words(wc);
  local w = wpod.params;
  local l = lpod.params;
  local wenv = std.get(w, 'env', {});
  local lenv = std.get(l, 'env', {});
  local impl = std.get(spec, 'mpiImplementation', 'OpenMPI');
  local run = kubeflow.runPolicy(o);
  // the launcher's retries, as the operator's launcher Job had them
  local backoff = std.get(std.get(spec, 'runPolicy', {}), 'backoffLimit');
  // what every pod takes from the Worker's template, and the launcher's
  // where it differs (only these have launcher.* parameters)
  local launcherOwn = ['cpu', 'memory', 'gpu', 'nodeSelector', 'tolerations', 'env', 'image'];
  // runLauncherAsWorker: the launcher is a rank, worker 0 here, with the
  // Worker's template
  local asWorker = std.get(spec, 'runLauncherAsWorker') == true;
  local lEntry = lc != null && std.get(lc, 'command') == null;
  local shared = [k for k in std.objectFields(w + l) if !std.member(launcherOwn + ['gpuResource'], k)];
  {
    fields: wpod.fields + kubeflow.meta(o).fields + run.fields + {
      workers: at + '.Worker.replicas',
      slots: 'spec.slotsPerWorker',
      exec: lAt + '.command',
      entrypoint: lAt + '.command',
      args: lAt + '.args',
      jobset: lAt + '.command',
      launcher: at + '.Launcher.template.spec',
      useHostNetwork: at + '.Worker.template.spec.hostNetwork',
      launcherAsWorker: 'spec.runLauncherAsWorker',
    },
    params: kubeflow.meta(o).params + run.params + { [k]: w[k] for k in std.objectFields(w) if k != 'env' || wenv != {} } + {
      [if worker != null then 'workers']: kubeflow.replicas(worker) + (if asWorker then 1 else 0),
      [if asWorker && !lEntry then 'launcherAsWorker']: true,
      // the workers on their nodes' network: useHostNetwork, which also
      // keeps sshd off port 22 and lets the NetworkPolicy admit the nodes
      [if hostNet then 'useHostNetwork']: true,
      // the operator's hostfile has slotsPerWorker slots (1 unset), GPUs or not
      slots: std.get(spec, 'slotsPerWorker', 1),
      [if lc != null && std.get(lc, 'command') != null then 'exec']: kubeflow.shell(words),
      // a launcher of args only runs its image's ENTRYPOINT, as under the
      // operator; with runLauncherAsWorker in a pod of its own (worker 0
      // runs trainsonnet's sshd), the ranks on one more worker
      [if lEntry then 'entrypoint']: true,
      [if lEntry then 'jobset']: true,
      [if lEntry && std.get(lc, 'args') != null then 'args']: lc.args,
      // the operator's launcher Job retried as the Job API's default does
      backoffLimit: if backoff != null then std.min(backoff, 100) else 6,
      [if !asWorker || lEntry then 'launcher']: {
        [if std.objectHas(l, 'image') && l.image != std.get(w, 'image') then 'image']: l.image,
      } + {
        [k]: l[k]
        for k in ['cpu', 'memory', 'gpu', 'nodeSelector', 'tolerations']
        if std.objectHas(l, k)
      } + {
        [if [k for k in std.objectFields(lenv) if std.get(wenv, k) != lenv[k]] != [] then 'env']: { [k]: lenv[k] for k in std.objectFields(lenv) if std.get(wenv, k) != lenv[k] },
      },
    },
    warnings: wpod.warnings + lpod.warnings + run.warnings + kubeflow.meta(o).warnings + [
      if wc != null && !(wwords != [] && std.endsWith(wwords[0], 'sshd')) then
        wAt + '.command: ' + (if wwords == [] then 'none (the image\'s ENTRYPOINT)' else kubeflow.shell(wwords)) + ' is not run: the workers run trainsonnet\'s sshd (ssh.port), which the launcher reaches with the job\'s key',
      if !std.objectHas(spec, 'slotsPerWorker') && std.get(w, 'gpu', 0) > 1 then
        'spec.slotsPerWorker: unset: 1 slot per worker, as the operator\'s hostfile has it, though each worker has ' + w.gpu + ' GPUs: set slotsPerWorker (or slots) to ' + w.gpu + ' to run a rank per GPU',
      if std.objectHas(spec, 'sshAuthMountPath') then
        'spec.sshAuthMountPath: not used: the key is mounted where trainsonnet\'s ssh client and sshd read it, whatever the user\'s home',
      if std.get(spec, 'launcherCreationPolicy') == 'AtStartup' then
        'spec.launcherCreationPolicy AtStartup: the launcher starts at once here too, and runs ' + (if lEntry then 'its image\'s ENTRYPOINT' else 'exec') + ' only once every worker answers over ssh (initTimeout)',
    ] + (if lEntry then entrypointWarnings(lAt + '.command', if asWorker then 'spec.runLauncherAsWorker', kubeflow.replicas(worker) + 1) else []) + [
      at + '.Launcher.template.spec.' + k + ': differs from the Worker\'s: every pod takes the Worker\'s'
      for k in shared + (if asWorker then launcherOwn else [])
      if std.get(l, k) != std.get(w, k)
    ] + [
      at + '.' + r + ': not carried: an MPIJob has Launcher and Worker'
      for r in std.objectFields(rs)
      if r != 'Launcher' && r != 'Worker'
    ] + [
      'spec.' + k + ': not carried'
      for k in std.objectFields(spec)
      if !std.member(['mpiReplicaSpecs', 'runPolicy', 'slotsPerWorker', 'mpiImplementation', 'launcherCreationPolicy', 'runLauncherAsWorker', 'sshAuthMountPath'], k)
    ],
    errors: [
      kubeflow.refuse(worker != null && kubeflow.replicas(worker) > 0, at + '.Worker', 'none: the openmpi prototype runs ranks on workers; give a Worker'),
      kubeflow.refuse(impl == 'OpenMPI', 'spec.mpiImplementation', impl + ' is not rendered: openmpi sets up Open MPI (its hostfile and OMPI_MCA_* settings); keep the operator for ' + impl + ' jobs, or build the image with Open MPI'),
    ],
  };

// ---- A Kubeflow Trainer TrainJob on an mpi runtime (from) --------------

// fromTrainJob(o): mlx-distributed's shape, or a runtime of the mpi policy
// of the cluster's own: the launcher runs the trainer's command (mpirun),
// a host of ranks itself where the runtime runs the launcher as a node.
local fromTrainJob(o) =
  local m = trainer.mpi(o);
  {
    fields: m.fields + { entrypoint: 'spec.trainer.command', args: 'spec.trainer.args', jobset: 'spec.trainer.command' },
    params: m.params + {
      workers: m.numNodes,
      [if m.asNode && !m.entrypoint then 'launcherAsWorker']: true,
      [if m.entrypoint then 'entrypoint']: true,
      // the image's ENTRYPOINT, unwrapped, tells the workers nothing: the
      // JobSet controller (which the Trainer's cluster runs) ends them
      [if m.entrypoint then 'jobset']: true,
      [if m.entrypoint && std.get(m.container, 'args') != null then 'args']: m.container.args,
      slots: m.slots,
      // the Trainer's hostfile is /etc/mpi/hostfile; trainsonnet's the
      // same lines at its own path (Open MPI's default hostfile too)
      [if !m.entrypoint && m.words != [] then 'exec']: std.strReplace(kubeflow.shell(m.words), '/etc/mpi/hostfile', '/etc/trainsonnet/hostfile'),
    },
    warnings: m.warnings + [
      if std.get(std.get(std.get(o.runtime, 'metadata', {}), 'labels', {}), 'trainer.kubeflow.org/framework') == 'deepspeed' then
        'runtime ' + m.runtime + ': a DeepSpeed runtime whose trainer has no command: its launcher runs the image\'s ENTRYPOINT under Open MPI\'s settings, as the Trainer runs it (DeepSpeed reads Open MPI\'s ranks); gen deepspeed runs DeepSpeed\'s own runner over a command instead',
      if ts.contains(kubeflow.shell(m.words), '/etc/mpi/hostfile') then
        'spec.trainer.command: /etc/mpi/hostfile, the Trainer\'s hostfile, is /etc/trainsonnet/hostfile here (Open MPI\'s default hostfile too)',
    ] + (if m.entrypoint then entrypointWarnings('spec.trainer.command', if m.asNode then 'runtime ' + m.runtime + ', mlPolicy.mpi.runLauncherAsNode', m.numNodes) else []),
    errors: m.errors,
  };

ts.prototype({
  name: proto,
  summary: 'An Open MPI job over ssh: a launcher and N workers (replaces the Kubeflow openmpi ksonnet prototype)',
  replaces: 'the Kubeflow openmpi ksonnet prototype (kubeflow/kubeflow:kubeflow/openmpi, 2018-2019)',
  description: |||
    A launcher Job and an Indexed Job of workers, found by stable DNS names through a
    headless Service: <name>-launcher.<name> and <name>-worker-<i>.<name>. Every worker runs
    sshd on an unprivileged port (ssh.port) with a host key of its own. The launcher waits
    until every worker answers over ssh, at most initTimeout seconds (then it exits 124
    and names the workers that never answered), then runs exec with sh -c. The job's exit
    code is exec's. When exec ends the launcher tells the workers to stop, so all pods end;
    a worker also stops on its own once the launcher is gone. Nothing talks to the
    Kubernetes API: no ServiceAccount, no RBAC (the Kubeflow prototype needed a
    ClusterRoleBinding to "view" for this).

    The hostfile (/etc/trainsonnet/hostfile, also Open MPI's default hostfile in the
    launcher, and the Kubeflow prototype's /kubeflow/openmpi/assets/hostfile) lists the
    workers, not the launcher, each with slots = gpu (1 without GPUs, or the slots
    parameter), so `mpirun -np <workers x slots>` starts one rank per slot. exec runs with
    sh -c: trainsonnet warns when it uses bash syntax ([[, source, {1..4}, ...).

    The ssh key is generated at render time into the Secret <name>-ssh (the output then
    holds a private key: trainsonnet warns on stderr), or taken from an existing Secret
    (ssh.secret). A NetworkPolicy admits only the job's own pods (networkPolicy=false to
    leave it out). With useHostNetwork the workers share their node's network, at most one
    per node, and ssh.port must not be 22; the NetworkPolicy then also admits nodeNetworks,
    the nodes' address ranges, from which the workers' Open MPI daemons call mpirun back.

    Scheduling and resources (cpu, memory, gpu, customResources, nodeSelector, tolerations)
    apply to the workers; launcher.* sets them for the launcher. image, env, volumes and the
    security settings apply to every pod.
  |||,

  ownEnv: mpi.ownEnv,
  from: { 'kubeflow.org/v2beta1/MPIJob': fromMPIJob, 'trainer.kubeflow.org/v1alpha1/TrainJob': fromTrainJob },
  params: common.params(proto, 'mpioperator/openmpi:v0.6.0') + batch.params('the launcher') + mpi.params + mpi.sshParams()
          + mpi.launcherParams('The launcher pod, which waits for the workers and runs exec (the Kubeflow prototype called it "master"). The top-level cpu, memory, gpu, nodeSelector and tolerations describe the workers; these describe the launcher.') + {
    workers: params.int('Number of worker pods. At most 5,000, the largest job the pods\' runtime is tested at (test/scripts).', default=4, min=1, max=5000),
    gpu: params.int('GPUs per worker (a limit of gpuResource); also the slots of each worker in the hostfile.', default=0, min=0, max=1024, aliases=['gpus']),
    gpuResource: params.string('Extended resource that counts GPUs.', default='nvidia.com/gpu', format='extendedResourceName'),
    slots: params.int('MPI slots per worker in the hostfile. Unset: gpu, or 1 without GPUs.', min=1, max=1024),
    cpu: params.quantity('CPU limit of each worker.'),
    memory: params.quantity('Memory limit of each worker.', unit='bytes'),
    customResources: params.map('More limits of each worker, such as rdma/hca_shared_devices_a=1 or hugepages-2Mi=1Gi.', keys='resourceName', values='quantity'),
    nodeSelector: params.map('Node labels the workers must run on, such as cloud.google.com/gke-accelerator=nvidia-tesla-t4.', keys='labelKey', values='labelValue'),
    tolerations: params.object('Tolerations of the workers.', 'core/v1.Toleration', list=true),
    exec: params.string('Command the launcher runs with sh -c once every worker answers; the job ends with its exit code. Unset: the launcher stays up for interactive use (kubectl exec ... mpirun ...).', format='nonEmpty'),
    entrypoint: params.bool('Run the launcher image\'s ENTRYPOINT (with args; else its CMD) instead of exec, as a container without a command runs: for an image whose ENTRYPOINT starts mpirun (an MPIJob or TrainJob whose launcher gives only args). Nothing wraps it: an init container sets up ssh and waits for the workers first (initTimeout), and the JobSet controller ends the workers with the launcher, so it needs jobset.'),
    args: params.list('Arguments of the launcher image\'s ENTRYPOINT (entrypoint), as a container\'s args: $(VAR) is the kubelet\'s. One item per --args flag.', separator=''),
    init: params.string('Path of a bootstrap script in the image to run instead of the built-in one (lib/assets/mpi.sh), as `sh <init> launcher|worker`, with the same environment.', format='absPath'),
    // ssh (mpi.sshParams): the Kubeflow prototype's key was secret
    ssh+: { params+: {
      secret+: { aliases: ['secret'], replaces: 'secret' },
      port+: { doc: 'Port of sshd in every worker, unprivileged so it runs without root; must not be 22 with useHostNetwork.' },
    } },
    useHostNetwork: params.bool('Run the workers in their node\'s network (faster than most overlays). At most one worker per node; ssh.port must not be 22; set nodeNetworks too (or networkPolicy=false).'),
    nodeNetworks: params.list('The address ranges of the nodes (such as 10.128.0.0/20), which the NetworkPolicy admits to the job\'s pods with useHostNetwork: the workers then run in their node\'s network, and their Open MPI daemons call mpirun on the launcher back from their node\'s address. Needed with useHostNetwork unless networkPolicy is off.', items='cidr'),
    waitForGPUDriver: params.bool('Workers wait, up to initTimeout, for the NVIDIA driver (/proc/driver/nvidia/version) before starting sshd.'),
    launcherAsWorker: params.bool('Run the launcher as worker 0, a rank with the workers\' resources (mpi-operator\'s runLauncherAsWorker): one Indexed Job that the Job controller ends when worker 0 ends (successPolicy), stopping the other workers itself; backoffLimit retries each worker. The launcher.* parameters do not apply: worker 0 is the launcher\'s pod.'),
    mca: params.map('Open MPI MCA parameters for the launcher (OMPI_MCA_<name>), added to or replacing the defaults: orte_keep_fqdn_hostnames=true, orte_default_hostfile, plm_rsh_args (the ssh config), btl_tcp_if_exclude=lo and the bridges and tunnels of runtimes and CNI plugins (docker0, cni0, flannel.1, tunl0, vxlan.calico, cilium_*, kube-ipvs0, ...), hwloc_base_binding_policy=none, rmaps_base_mapping_policy=slot. The defaults are also set under Open MPI 5\'s PRRTE names (PRTE_MCA_<name>).', keys='envName'),
    dataDir: params.string('Where an emptyDir scratch volume is mounted in every job container; S3 staging goes through it.', default='/trainsonnet/data', format='absPath'),
    s3: s3Params,
    // the launcher's own image and GPUs, beside sshjob.launcherParams'
    launcher+: { params+: {
      image: params.string('Image of the launcher. Unset: the job image.', format='image'),
      gpu: params.int('GPUs of the launcher (a limit of gpuResource). It is not a rank, so it rarely needs one.', default=0, min=0, max=1024),
    } },
  },

  removed: {
    controllerImage: 'there is no controller: the launcher waits for the workers itself (initTimeout) and stops them when exec ends, and a worker stops once the launcher is gone, with no RBAC; drop controllerImage',
  },

  // The Kubeflow prototype's own parameter names in use (ks generate
  // openmpi ... --secret ...).
  chart: {
    name: 'the Kubeflow openmpi prototype',
    keys: ['secret', 'gpus', 's3Secret', 'downloadDataFrom', 'downloadDataTo', 'uploadDataFrom', 'uploadDataTo', 'controllerImage'],
    notes: [
      'the launcher is the Job <name>-launcher (kubectl logs -f job/<name>-launcher), where the prototype\'s was the pod <name>-master; the workers are <name>-worker-<i> as before, in an Indexed Job',
      'exec runs in the image\'s working directory: the prototype ran it in /kubeflow/openmpi/data, a scratch emptyDir, which is dataDir here (/trainsonnet/data by default): write results there, or set dataDir: /kubeflow/openmpi/data',
    ],
  },

  validate(p):: mpi.validate(p, p.workers, p.ssh.port) + [
    ts.check(!p.launcherAsWorker || p.launcher[k] == null || p.launcher[k] == 0 || p.launcher[k] == {} || p.launcher[k] == [], 'launcher.' + k,
             'is the launcher pod\'s, and with launcherAsWorker the launcher is worker 0, whose pod is a worker\'s: set it for every worker (' + k + '), or drop launcherAsWorker')
    for k in ['image', 'cpu', 'memory', 'gpu', 'nodeSelector', 'tolerations', 'env']
  ] + [
    ts.check(!p.entrypoint || !p.launcherAsWorker, 'entrypoint',
             'runs the image\'s ENTRYPOINT in a launcher of its own, and with launcherAsWorker the launcher is worker 0, which runs trainsonnet\'s sshd: drop one of them'),
    ts.check(!p.entrypoint || p.init == null, 'entrypoint',
             'runs the image\'s ENTRYPOINT in the launcher, and init replaces trainsonnet\'s runtime (mpi.sh) there: drop one of them'),
    ts.check(!p.entrypoint || batch.jobset(p), 'entrypoint',
             'runs the image\'s ENTRYPOINT in the launcher as it is, which tells the workers nothing when it ends: only the JobSet controller ends them with it, so set jobset; for plain Jobs set exec to the command the ENTRYPOINT runs (mpirun ...) instead'),
    ts.check(p.entrypoint || p.args == [], 'args',
             'are the arguments of the image\'s ENTRYPOINT in the launcher: set entrypoint too, or put them into exec'),
    ts.check(!(p.launcherAsWorker && p.s3.uploadFrom != null), 's3.uploadFrom',
             'uploads once the launcher has gone, and with launcherAsWorker the Job controller stops the workers as worker 0 ends: stage results out from your command instead, or drop launcherAsWorker'),
    roles.hostNetworkPort('ssh.port', p.ssh.port, p.useHostNetwork, 'the workers share'),
    ts.check(!(p.useHostNetwork && p.networkPolicy && p.nodeNetworks == []), 'useHostNetwork',
             'needs nodeNetworks, the nodes\' address ranges, while networkPolicy is on: the workers\' Open MPI daemons call the launcher back from their node\'s address, which the NetworkPolicy would drop (or set networkPolicy=false)'),
    ts.check((p.s3.downloadFrom == null) == (p.s3.downloadTo == null), 's3.downloadTo',
             'set s3.downloadFrom and s3.downloadTo together'),
    ts.check((p.s3.uploadFrom == null) == (p.s3.uploadTo == null), 's3.uploadTo',
             'set s3.uploadFrom and s3.uploadTo together'),
    sharedPath(p, 's3.downloadTo', p.s3.downloadTo),
    sharedPath(p, 's3.uploadFrom', p.s3.uploadFrom),
    ts.check(!(std.length([k for k in std.objectFields(p.customResources) if std.startsWith(k, 'hugepages-')]) > 0
               && p.cpu == null && p.memory == null
               && !std.objectHas(p.customResources, 'cpu') && !std.objectHas(p.customResources, 'memory')), 'customResources',
             'hugepages need a cpu or memory limit too (set cpu or memory)'),
    // A limit given twice, by its own parameter and in customResources,
    // would be whichever roles.resources applied last (nvidia.com/gpu=4
    // beside gpu 2 gave 4 GPUs and 2 slots).
    ts.check(!std.objectHas(p.customResources, p.gpuResource), 'customResources',
             'holds ' + p.gpuResource + ', the gpuResource that gpu sets (it is also the slots of each worker): set it with gpu only'),
    ts.check(p.cpu == null || !std.objectHas(p.customResources, 'cpu'), 'customResources',
             'holds cpu, which cpu sets too (' + p.cpu + '): set it once'),
    ts.check(p.memory == null || !std.objectHas(p.customResources, 'memory'), 'customResources',
             'holds memory, which memory sets too (' + p.memory + '): set it once'),
    mpi.checkConfigSize(p, 'workers', hostLinePrefix(p), hostLineSuffix(p), 0, p.workers, s3=staging(p)),
    ts.check(p.init == null || !std.startsWith(p.init, '/kubeflow/openmpi/'), 'init',
             'must not be a file of the Kubeflow prototype (' + p.init + '), which trainsonnet\'s pods do not have: leave init unset, trainsonnet\'s runtime (mpi.sh) replaces its init.sh'),
  ] + mpi.checks(p, { env: p.env, 'launcher.env': p.launcher.env }),

  warnings(p):: [
    mpi.generatedKeyWarning(p, p.ssh.secret, '--ssh-secret'),
    roles.hostNetworkWarning(p, p.useHostNetwork, 'the workers\' sshd (port ' + p.ssh.port + ') is'),
    if p.nodeNetworks != [] && !p.useHostNetwork then 'nodeNetworks is not used: it is for useHostNetwork (without it the job\'s pods talk only to each other)',
    if p.waitForGPUDriver && p.gpu == 0 then 'waitForGPUDriver is set but gpu is 0: the workers will wait for a driver they do not use',
    if kubeflowPaths(p.exec) then 'exec names a path under /kubeflow/openmpi/ that trainsonnet\'s pods do not have: of the Kubeflow prototype\'s files only its hostfile is there (' + kubeflowHostfile + ', the same as ' + mpi.hostfilePath + ', Open MPI\'s default hostfile in the launcher)',
    roles.shWarning('exec', p.exec),
    if p.entrypoint && p.exec != null then 'exec is not run: the image\'s ENTRYPOINT runs in the launcher instead (entrypoint)',
  ],

  render(p)::
    [
      // with host network, the workers' daemons call back from node addresses
      common.networkPolicy(proto, p, if p.useHostNetwork then [{ from: [{ ipBlock: { cidr: c } } for c in p.nodeNetworks] }] else []),
      mpi.sshSecret(proto, p, p.ssh.secret),
      mpi.config(proto, p, ts.indexedLines(hostLinePrefix(p), hostLineSuffix(p), 0, p.workers), s3=staging(p)),
    ] + mpi.jobs(proto, p, job(p)),
})
