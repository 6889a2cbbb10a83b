// mpi: what every MPI-over-ssh prototype shares (openmpi, horovod,
// horovod-dask): the ssh key Secret, the config ConfigMap (hostfile, the
// runtime scripts, the ssh configuration), the headless Service that gives
// every pod a stable DNS name, and the pieces of the launcher and worker
// pods that run lib/assets/mpi.sh.
//
// Needs:    p with common.params, batch.params (the launcher is the lead
//           role, retried backoffLimit times), mpi.params, and the
//           prototype's own ssh.port and mca; mpi.jobs takes the rest in j.
// Declares: mpi.params — shmSize, launcherGrace (owned by mpi.params), and
//           the doc of common.params' env in an MPI job (so after
//           common.params).
// Returns:  jobs(proto, p, j) the Services and the two roles' workloads
//           (roles.objects); config, sshSecret, configFiles, the names;
//           validate, checks, checkConfigSize (ts.check lists);
//           generatedKeyWarning.
//
// The pods never talk to the Kubernetes API. The launcher waits (bounded)
// until every worker answers over ssh, runs the command, then tells the
// workers to stop; a worker also stops on its own once the launcher's DNS
// name has been gone for a while (the launcher died without telling it).

local common = import 'common.libsonnet';
local params = import 'params.libsonnet';
local roles = import 'roles.libsonnet';
local runtime = import 'runtime.libsonnet';
local ssh = import 'ssh.libsonnet';
local ts = import 'trainsonnet.libsonnet';

// Constants live at file level: an imported file's values are evaluated
// once per Jsonnet VM, not once per render.

// Where things live in every pod (mpi.sh reads the same defaults).
local configDir = runtime.dir;
local keyDir = '/etc/trainsonnet-ssh';
local runDir = '/var/run/trainsonnet';
local hostfilePath = configDir + '/hostfile';
local sshDir = runDir + '/ssh';  // made by mpi.sh
local sshConfigPath = configDir + '/ssh_config';

// The scripts of the ConfigMap, by key (ts.asset: their text stays in Go).
local scripts = {
  'mpi.sh': importstr 'assets/mpi.sh',
  's3.sh': importstr 'assets/s3.sh',
};

// The ssh configuration of a port, with its size; built once per VM for the
// default port, which nearly every job keeps.
local sshFiles(port) =
  local client = ssh.client(port, sshDir), server = ssh.server(port, sshDir);
  { ssh_config: client, sshd_config: server, bytes:: std.length(client) + std.length(server) };
local defaultSSHFiles = sshFiles(2022);
local sshFilesOf(port) = if port == 2022 then defaultSSHFiles else sshFiles(port);

// Interfaces MPI must not use between pods: loopback, and the bridges and
// tunnels of container runtimes and CNI plugins, which a pod in its node's
// network sees (Open MPI takes names, not patterns).
local ifExclude = 'lo,docker0,cni0,flannel.1,tunl0,vxlan.calico,cilium_host,cilium_net,cilium_vxlan,kube-ipvs0,kube-bridge,weave,virbr0';
// Open MPI 4 (ORTE) reads OMPI_MCA_<name>: these, with the user's --mca.
local ompiDefaults = {
  orte_keep_fqdn_hostnames: 'true',
  orte_default_hostfile: hostfilePath,
  plm_rsh_args: '-F ' + sshConfigPath,
  btl_tcp_if_exclude: ifExclude,
  hwloc_base_binding_policy: 'none',
  rmaps_base_mapping_policy: 'slot',
};
// Open MPI 5 runs its daemons with PRRTE, which ignores the ORTE names
// above and reads PRTE_MCA_<name>: the same settings (the user's --mca of
// them too) under its names. btl_tcp_if_exclude is still Open MPI's own.
local prteNames = {
  hwloc_base_binding_policy: 'hwloc_default_binding_policy',
  orte_default_hostfile: 'prte_default_hostfile',
  orte_keep_fqdn_hostnames: 'prte_keep_fqdn_hostnames',
  plm_rsh_args: 'plm_ssh_args',
  rmaps_base_mapping_policy: 'rmaps_default_mapping_policy',
};
local prteEnv(all) = std.sort([
  { name: 'PRTE_MCA_' + prteNames[k], value: all[k] }
  for k in std.objectFields(prteNames)
  if std.objectHas(all, k)
], function(e) e.name);
local ompiRoot = [
  { name: 'OMPI_ALLOW_RUN_AS_ROOT', value: '1' },
  { name: 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', value: '1' },
];
// hwloc, which Open MPI's mpirun and orted run at start, has a GL plugin
// that probes X displays :0 to :63 at TCP ports 6000-6063 of localhost,
// and waits forever on whatever listens there and is no X server:
// TensorBoard's default port 6006 in the same pod (horovod-dask), or on
// the node with host network. Nothing in a training pod needs GL
// discovery. The ranks' hosts get it through TS_SSH_ENV, as orted starts
// over ssh; a user's own HWLOC_COMPONENTS replaces it.
local hwlocName = 'HWLOC_COMPONENTS';
local hwlocEnv = [{ name: hwlocName, value: '-gl' }];
local hwlocOf(env) = if std.member([e.name for e in env], hwlocName) then [] else hwlocEnv;

local ompiDefaultEnv = [{ name: 'OMPI_MCA_' + k, value: ompiDefaults[k] } for k in std.objectFields(ompiDefaults)] + prteEnv(ompiDefaults) + ompiRoot;
local keyMode(p) =
  if !common.nonRoot(p) then 256  // 0400
  else if p.fsGroup != null || p.runAsGroup != null then 288  // 0440
  else 292;  // 0444
local ownMounts = [
  runtime.mount,
  { name: 'trainsonnet-ssh', mountPath: keyDir, readOnly: true },
  { name: 'trainsonnet-run', mountPath: runDir },
];

// What a job's roles leave out (mpi.jobs).
local launcherDefaults = { kind: 'Job', strategy: null, ports: [], initContainers: [], volumes: [], mounts: [] };
local workerDefaults = { ports: [], volumes: [], mounts: [], ownEnv: [], sshNames: [], followsLauncher: true, replacesVolumes: [] };


{
  configDir:: configDir,
  keyDir:: keyDir,
  runDir:: runDir,
  scriptPath:: configDir + '/mpi.sh',
  s3ScriptPath:: configDir + '/s3.sh',
  hostfilePath:: hostfilePath,

  // params: the parameters of every MPI job (shmSize, launcherGrace), and
  // how the common env reads in one: after common.params.
  params:: {
    env:
      if 'env' in super then super.env + { doc: 'Environment variables of every job container. In pods that serve ssh, the processes mpirun starts there get them too.' }
      else ts.fail('mpi.params tells how the env of common.params reads in an MPI job: put it after common.params'),
  } + ts.declare('mpi.params', {
    shmSize: roles.shmParam('the launcher and the workers', 'NCCL and Open MPI\'s shared-memory transport').shmSize,
    launcherGrace: params.seconds('How long a worker waits, once the launcher is gone without telling it to stop, before it stops on its own. A launcher that is preempted, evicted or retried must be back within it, or its workers are gone.', default=420, min=10, max=86400),
  }),

  // validate: the rules every MPI job obeys: every pod's host name fits
  // (the workers' are the longest: '-worker-<n>' against '-launcher' or
  // '-driver'), and sshd can bind its port.
  validate(p, workers, port):: [
    roles.nameFits(p, [{ name: 'worker', kind: 'IndexedJob', count: workers }]),
    roles.nonRootPort(p, 'ssh.port', port, 'sshd'),
  ],

  // Names.
  configName(p):: p.name + '-config',
  generatedSecretName(p):: p.name + '-ssh',
  secretName(p, existing):: if existing != null then existing else $.generatedSecretName(p),

  // sshSecret: a freshly generated key pair, unless the user names an
  // existing Secret (then nothing secret is in the output).
  sshSecret(proto, p, existing)::
    if existing != null then null else
      local key = ts.sshKeyPair(p.name);
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: common.metadata(proto, p, $.generatedSecretName(p)),
        type: 'kubernetes.io/ssh-auth',
        data: {
          'ssh-privatekey': std.base64(key.privateKey),
          'ssh-publickey': std.base64(key.publicKey),
        },
      },

  // generatedKeyWarning: flag is the flag that names an existing Secret.
  generatedKeyWarning(p, existing, flag)::
    if existing != null then null
    else 'the output holds a private ssh key generated for this job (Secret ' + $.generatedSecretName(p)
         + '), and every render makes a new one: keep it out of version control, and apply a new render only in place of a finished job '
         + '(applied to a running one, its pods end up with different keys and ssh between them fails); '
         + 'to keep one key, create the Secret yourself and pass its name with ' + flag,

  // maxConfigBytes: the API server refuses a ConfigMap whose data is larger.
  maxConfigBytes:: 1048576,

  // configFiles: the ConfigMap's data besides the hostfile: the scripts
  // (s3.sh with S3 staging only) and the ssh configuration, rendered here
  // (ssh.libsonnet) for p.ssh.port. The Open MPI defaults stay env of the
  // launcher (ompiEnv): kubectl exec sessions get the container's env, and
  // pointing Open MPI at a file of ours (mca_base_param_files) would drop
  // the image's own (Debian's excludes transports there).
  configFiles(p, s3=false):: sshFilesOf(p.ssh.port) + runtime.files + {
    'mpi.sh': ts.asset('assets/mpi.sh', scripts['mpi.sh']),
    [if s3 then 's3.sh']: ts.asset('assets/s3.sh', scripts['s3.sh']),
  },

  // checkConfigSize: the hostfile (head, then the hosts [from, to)),
  // configFiles(p, s3) and extraBytes of the prototype's own must fit in
  // one ConfigMap; the message says how many hosts would.
  checkConfigSize(p, param, prefix, suffix, from, to, head='', s3=false, extraBytes=0)::
    local fixed = extraBytes + sshFilesOf(p.ssh.port).bytes
                  + runtime.bytes + ts.assetBytes('assets/mpi.sh', scripts['mpi.sh'])
                  + (if s3 then ts.assetBytes('assets/s3.sh', scripts['s3.sh']) else 0);
    local bytes(n) = ts.indexedLinesBytes(prefix, suffix, from, n, head) + fixed;
    // the largest n that fits, by bisection (bytes grows with n)
    local fits(lo, hi) =
      if lo >= hi then lo
      else local mid = std.floor((lo + hi + 1) / 2); if bytes(mid) <= $.maxConfigBytes then fits(mid, hi) else fits(lo, mid - 1);
    ts.check(bytes(to) <= $.maxConfigBytes, param,
             'the hostfile would make the ConfigMap ' + bytes(to) + ' bytes, over the 1 MiB Kubernetes allows; at most '
             + (fits(from, to) - from) + ' hosts fit with this name'),

  // config: the hostfile and configFiles(p, s3), mounted at configDir.
  config(proto, p, hostfile, s3=false):: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: common.metadata(proto, p, $.configName(p)),
    data: { hostfile: hostfile } + $.configFiles(p, s3),
  },

  // launcherServiceName: the name the workers' watchdog resolves
  // (TS_LAUNCHER), the presence Service of the launcher (lib/roles.libsonnet):
  // it goes away as soon as the launcher's container has ended, however it
  // ended. role is the launcher's component: launcher (openmpi), driver
  // (horovod).
  launcherServiceName(p, role='launcher'):: roles.presenceName(p, role),

  // jobs builds what runs: the job's headless Service, the launcher's
  // presence Service, the launcher Job and the Indexed Job of the workers,
  // as two roles of lib/roles.libsonnet. j describes the job:
  //   port, initTimeout        ssh port, bound of every start-up wait
  //   secretName               the ssh key Secret
  //   volumes, mounts          trainsonnet's extra volumes (besides its own three)
  //   oneNode                  with host network, the group of pods kept
  //                            one per node: a component, or null (the job)
  //   launcher {role, image, imagePullPolicy, init, exec, rankHost, env,
  //             resources, nodeSelector, tolerations, privileged,
  //             hostNetwork, hostPID}
  //     rankHost: the launcher's own hostfile entry when it is a rank (it runs
  //     sshd and the workers do not wait for it); exec: the command (null:
  //     stay up for interactive use).
  //   worker {count, image, imagePullPolicy, init, env, resources,
  //           nodeSelector, tolerations, privileged, hostNetwork, hostPID,
  //           waitForGPUDriver, initContainers, sidecars}
  //   Optional in either role: volumes, mounts (the role's own, besides
  //   j's), initContainers (native sidecars among them), ports (besides
  //   ssh); in the workers also ownEnv (env of the pod's own setup, not
  //   passed on to ssh sessions), sshNames (variables that setup sets
  //   and ssh sessions get), replacesVolumes (lib/roles.libsonnet) and
  //   followsLauncher (false: the workers
  //   outlive the launcher, which comes back to them; an interactive
  //   cluster, deleted as a whole); in the launcher also kind: 'Deployment' for a long-lived
  //   launcher that is no rank (the interactive cluster of horovod-dask:
  //   restarted when it fails, never complete), with strategy.
  jobs(proto, p, j)::
    local l = launcherDefaults + j.launcher;
    local w = workerDefaults + j.worker;
    local lHwloc = hwlocOf(l.env), wHwloc = hwlocOf(w.env);
    local ssh = [{ name: 'ssh', port: j.port }];
    local volumes = $.volumes(p, j.secretName, j.volumes);
    local mounts = ownMounts + roles.shm(p).mounts + j.mounts;
    // A pod in its node's network binds the ssh port on the node: at most
    // one pod of the group j.oneNode (a component, or null: the whole job)
    // per node.
    local shared(r) = {
      volumes: if r.volumes == [] then volumes else volumes + r.volumes,
      mounts: if r.mounts == [] then mounts else mounts + r.mounts,
      initContainers: r.initContainers,
      image: r.image,
      imagePullPolicy: r.imagePullPolicy,
      resources: r.resources,
      nodeSelector: r.nodeSelector,
      tolerations: r.tolerations,
      privileged: r.privileged,
      hostNetwork: r.hostNetwork,
      hostPID: r.hostPID,
      affinity: if r.hostNetwork then roles.onePodPerNode(proto, p, j.oneNode) else null,
    };
    local rs = [
      shared(l) + {
        name: l.role,
        kind: l.kind,
        [if l.kind == 'Deployment' then 'strategy']: l.strategy,
        lead: true,
        resources: roles.withRequests(l.resources, $.launcherRequests),
        command: $.command(l.init, 'launcher'),
        env: $.scriptEnv(j.port, j.initTimeout)
             + (if l.rankHost != null then [{ name: 'TS_SELF', value: l.rankHost }] else [])
             + (if l.exec != null then [{ name: 'TS_EXEC', value: l.exec }] else [])
             + (if p.backoffLimit > 0 then [{ name: 'TS_END_ON_FAILURE', value: '0' }] else [])
             + $.ompiEnv(p.mca)
             + lHwloc
             + (if l.rankHost != null then $.sshEnv(l.env, [e.name for e in lHwloc]) else [])
             + l.env,
        ports: (if l.rankHost != null then ssh else []) + l.ports,
      },
      shared(w) + {
        name: 'worker',
        kind: 'IndexedJob',
        count: w.count,
        command: $.command(w.init, 'worker'),
        env: $.scriptEnv(j.port, j.initTimeout) + $.watchEnv(p, l.role, w.followsLauncher)
             + (if w.waitForGPUDriver then [{ name: 'TS_WAIT_FOR_GPU_DRIVER', value: '1' }] else [])
             + w.ownEnv
             + wHwloc
             + $.sshEnv(w.env, w.sshNames + [e.name for e in wHwloc])
             + w.env,
        ports: if w.ports == [] then ssh else ssh + w.ports,
        readinessProbe: $.readinessProbe,
        initContainers: w.initContainers,
        sidecars: w.sidecars,
        replacesVolumes: w.replacesVolumes,
      },
    ];
    [roles.presence(proto, p, l.role)] + roles.objects(proto, p, rs),

  // launcherRequests: what the launcher asks for unless its cpu or memory
  // is set: it runs mpirun and ssh, little, but never BestEffort.
  launcherRequests:: { cpu: '100m', memory: '128Mi' },

  // sshEnv: the user's env of a pod that runs sshd, named in TS_SSH_ENV so
  // that the processes mpirun starts there over ssh see it too (sshd gives
  // sessions a fresh environment).
  // names: more variables to pass on, which the pod's own setup sets.
  sshEnv(env, names=[])::
    if env == [] && names == [] then []
    else [{ name: 'TS_SSH_ENV', value: std.join(' ', [e.name for e in env] + names) }],

  // watchEnv: how a worker (or a sidecar of one) knows the launcher is
  // gone; with follow false, it does not stop when it is (grace 0).
  watchEnv(p, role='launcher', follow=true):: [
    { name: 'TS_LAUNCHER', value: $.launcherServiceName(p, role) },
    { name: 'TS_LAUNCHER_GRACE', value: if follow then std.toString(p.launcherGrace) else '0' },
  ],

  // volumes of every MPI pod. The key files are read-only: 0400 for root,
  // 0440 with the pod's fsGroup for a non-root user, 0444 for a non-root
  // user without a group (runAsUser alone: the files stay root's, and
  // only the pod's own containers see them). The script copies the private
  // key to a 0600 file of its own.
  volumes(p, secretName, extra=[])::
    [
      runtime.volume($.configName(p)),
      { name: 'trainsonnet-ssh', secret: { secretName: secretName, defaultMode: keyMode(p) } },
      { name: 'trainsonnet-run', emptyDir: {} },
    ] + roles.shm(p).volumes
    + extra,


  // ownEnv: the variables of Open MPI that its prototypes' ownEnv adds
  // to the library's (ts.ownEnv): trainsonnet sets them, or mca does.
  ownEnv:: {
    'OMPI_MCA_*': 'Open MPI reads it as a parameter of its own: set Open MPI parameters with --mca NAME=VALUE',
    'PRTE_MCA_*': "Open MPI's runtime (PRRTE) reads it as a parameter of its own: set Open MPI parameters with --mca NAME=VALUE",
    'OMPI_ALLOW_RUN_AS_ROOT*': 'trainsonnet sets it where the pods run as root',
  },

  // checks: the rules every MPI prototype applies beyond the pod check
  // every render passes (generator/podcheck.go). The env parameters'
  // variables of Open MPI and of the runtime are refused by ownEnv, for
  // every env parameter: envMaps, which named them, is not needed.
  checks(p, envMaps={})::
    [
      roles.shmCheck(p),
    ],

  // command runs the runtime script (or the user's replacement) in a role.
  command(init, role):: ['sh', if init == null then $.scriptPath else init, role],

  // ompiEnv: what Open MPI needs on the launcher. mpirun keeps host names as
  // written in the hostfile (it would cut them at the first dot), uses our
  // ssh config, and may run as root inside the container. mca adds or
  // overrides OMPI_MCA_* settings.
  ompiEnv(mca)::
    if mca == {} then ompiDefaultEnv
    else
      local all = ompiDefaults + mca;
      [{ name: 'OMPI_MCA_' + k, value: all[k] } for k in std.objectFields(all)] + prteEnv(all) + ompiRoot,

  // scriptEnv: the settings of mpi.sh common to every role.
  scriptEnv(port, initTimeout):: [
    { name: 'TS_SSH_PORT', value: std.toString(port) },
    { name: 'TS_INIT_TIMEOUT', value: std.toString(initTimeout) },
  ],

  // readinessProbe: workers are ready once sshd listens: it writes its pid
  // file then (mpi.sh removes a stale one first). Asked in the container,
  // not over TCP: a connection that never speaks ssh is two lines of
  // sshd's log, every period, in every worker.
  readinessProbe:: {
    exec: { command: ['sh', '-c', 'kill -0 "$(cat ' + sshDir + '/sshd.pid)"'] },
    periodSeconds: 10,
    failureThreshold: 3,
  },
}
