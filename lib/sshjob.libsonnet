// sshjob: a launcher that reaches its workers over ssh, whatever it runs
// there (mpirun, deepspeed's pdsh, torchrun over ssh, a script of one's own):
// the ssh key Secret, the config ConfigMap (a hostfile, the runtime
// scripts, the ssh configuration), the headless Service that gives every
// pod a stable DNS name, and the launcher and worker pods that run
// lib/assets/mpi.sh: the workers serve ssh (a host key each, the job's key
// authorized); the launcher waits, bounded, until every worker answers on
// its ssh port, runs its command, then says on its end port that the job
// is over; a worker also stops once the launcher's DNS name has been gone
// for launcherGrace. Nothing talks to the Kubernetes API.
//
// Needs:    p with common.params, batch.params (the launcher is the lead
//           role, retried backoffLimit times), and shmSize and
//           launcherGrace (sshjob.params, or mpi.params); jobs takes the
//           rest in j, which it checks.
// Declares: sshjob.params(who, shmUsers, sessions) — shmSize,
//           launcherGrace, and the doc of common.params' env in such a
//           job (so after common.params); sshjob.sshParams(waitsFor) —
//           initTimeout and the group ssh {port, secret};
//           sshjob.launcherParams(doc) — the group launcher {cpu, memory,
//           nodeSelector, tolerations, env} (a prototype adds its own
//           with launcher+: {params+: {...}}).
// Returns:  jobs(proto, p, j) the Services and the two roles' workloads
//           (roles.objects); config, sshSecret, configFiles, the names and
//           paths; validate, checks, checkConfigSize (ts.check lists);
//           generatedKeyWarning.
//
//   local sshjob = import 'sshjob.libsonnet';
//   params: common.params(...) + batch.params('the launcher') + sshjob.params('the launcher and the workers', 'NCCL') + sshjob.sshParams() + sshjob.launcherParams('The launcher pod, ...') + {...}
//   validate(p):: sshjob.validate(p, p.workers, p.ssh.port) + sshjob.checks(p) + [sshjob.checkConfigSize(p, 'workers', prefix, suffix, 0, p.workers)]
//   render(p):: [sshjob.sshSecret(proto, p, p.ssh.secret), sshjob.config(proto, p, hostfile)] + sshjob.jobs(proto, p, {...})
//
// jobs(proto, p, j): j has
//   port, initTimeout, secretName   (required) the ssh port, the bound of
//                                   every start-up wait, the key Secret
//   launcher, worker                (required) the two roles, below
//   volumes, mounts                 more volumes and mounts of every pod
//   oneNode                         with host network, the group of pods
//                                   kept one per node: a component, or
//                                   null (the whole job)
//   launcherAsWorker                the launcher is worker 0 (its rankHost
//                                   the first hostfile entry): one Indexed
//                                   Job of the workers, which the Job
//                                   controller ends with index 0
//                                   (successPolicy) and fails once an index
//                                   has failed backoffLimit + 1 times; no
//                                   end port, no stop files, no launcher
//                                   Service. The launcher role gives exec,
//                                   init, rankHost, ownEnv and env; its pod
//                                   is worker 0's.
// Each role is a role of lib/roles.libsonnet (image required; name,
// resources, env, volumes, mounts, ports, initContainers, sidecars,
// nodeSelector, tolerations, affinity, hostNetwork, hostPID, privileged,
// container, pod, ...: every field roles takes reaches the pod) with these
// fields of its own:
//   launcher  name ['launcher']; kind Job or Deployment (a long-lived
//             launcher that is no rank, with strategy); exec (sh -c string,
//             null: stay up for interactive use); rankHost (its own
//             hostfile entry when it is a rank: it then serves ssh, and the
//             workers do not wait for it); entrypoint (null, or the args
//             of the image's ENTRYPOINT, which then runs as it is, with no
//             command: an init container "init" sets up ssh and waits for
//             the workers first (mpi.sh wait); no exec, init, rankHost or
//             initCommand beside it; in a JobSet only, whose controller
//             ends the workers with the launcher: unwrapped, it tells them
//             nothing)
//   worker    count (required); waitForGPUDriver; followsLauncher [true]
//             (false: the workers outlive the launcher, which comes back to
//             them: an interactive cluster, deleted as a whole)
//   either    init (a bootstrap script of the image's, run as `sh <init>
//             launcher|worker`, instead of mpi.sh); ownEnv (env of the
//             pod's own setup, not passed on to ssh sessions); sshNames
//             (more variables ssh sessions get, which that setup sets)
// jobs sets the roles' command, lead, readinessProbe and the workers'
// name and kind itself; a role that sets them, or a field neither roles
// nor jobs knows, is an error that names it.

local batch = import 'batch.libsonnet';
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
local sshDir = runDir + '/ssh';  // made by mpi.sh

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

local keyMode(p) =
  if !common.nonRoot(p) then 256  // 0400
  else if p.fsGroup != null || p.runAsGroup != null then 288  // 0440
  else 292;  // 0444
local ownMounts = [
  runtime.mount,
  { name: 'trainsonnet-ssh', mountPath: keyDir, readOnly: true },
  { name: 'trainsonnet-run', mountPath: runDir },
];

// The contract of jobs' j and its roles: the fields each takes with their
// defaults, those it needs, and, for a role, what jobs sets itself (a
// role takes roles' fields too).
local jFields = { port: null, initTimeout: null, secretName: null, launcher: null, worker: null, volumes: [], mounts: [], oneNode: null, launcherAsWorker: false };
local jNeeds = ['port', 'initTimeout', 'secretName', 'launcher', 'worker'];
local launcherOwn = { name: 'launcher', kind: 'Job', init: null, exec: null, rankHost: null, entrypoint: null, ownEnv: [], sshNames: [] };
local workerOwn = { init: null, waitForGPUDriver: false, followsLauncher: true, ownEnv: [], sshNames: [] };
local roleKnown = roles.defaults + { name: null, image: null };
local launcherKnown = roleKnown + launcherOwn, workerKnown = roleKnown + workerOwn;
// What roles must not see of a role: jobs' own fields, hidden.
local launcherHidden = { init:: null, exec:: null, rankHost:: null, entrypoint:: null, ownEnv:: null, sshNames:: null };
local workerHidden = { init:: null, waitForGPUDriver:: null, followsLauncher:: null, ownEnv:: null, sshNames:: null };
local setHere = {
  command: 'jobs runs mpi.sh in every pod (or init): give the launcher\'s command as exec',
  args: 'jobs runs mpi.sh in every pod (or init): give the launcher\'s command as exec',
  lead: 'the launcher is the lead role, always',
  readinessProbe: 'a worker is ready once its sshd listens; jobs sets that probe',
  initCommand: 'use initContainers, or init (a bootstrap script run instead of mpi.sh)',
};
local workerSetHere = setHere + {
  name: 'the workers are the role "worker": <name>-worker-<i> in the hostfile',
  kind: 'the workers are an IndexedJob, one index per hostfile entry',
};

// The usual j and roles pass these, a merge, a length and a few lookups
// (no comprehension: they run on every render of every such job).
local nJ = std.length(jFields), nLauncher = std.length(launcherKnown), nWorker = std.length(workerKnown);
local jNeeded = { [k]: null for k in jNeeds };
// r + absent: a role that has every field it needs and none that jobs
// sets has as many visible fields as before (a needed field shows, one
// that jobs sets is hidden).
local launcherAbsent = { image: null, command:: null, args:: null, lead:: null, readinessProbe:: null, initCommand:: null };
local workerAbsent = launcherAbsent + { count: null, name:: null, kind:: null };
local jOK(j) = std.isObject(j) && std.length(jFields + j) == nJ && std.length(j + jNeeded) == std.length(j);
local roleOK(r, known, n, absent) = std.isObject(r) && std.length(known + r) == n && std.length(r + absent) == std.length(r);

// contract: known + r (r with every default) when ok (r has every field of needs, none of refused
// and none but known's: own's and, for a role, roles', which roles checks
// further); else ts.fail naming what is wrong (what: 'j', 'j.launcher',
// 'j.worker').
local contract(what, r, ok, own, known, needs, refused={}) =
  if ok then known + r
  else
    local fail(msg) = ts.fail('sshjob.jobs: ' + what + ': ' + msg);
    if !std.isObject(r) then fail('must be an object, not ' + std.type(r))
    else
      local missing = [k for k in needs if std.get(r, k) == null];
      local set = [k for k in std.objectFields(r) if std.objectHas(refused, k)];
      local unknown = [k for k in std.objectFields(r) if !std.objectHas(known, k)];
      if missing != [] then fail('missing ' + std.join(', ', missing))
      else if set != [] then fail('sets ' + std.join(', ', set) + ', which jobs sets itself: ' + std.join('; ', std.set([refused[k] for k in set])))
      else
        fail((if std.length(unknown) == 1 then 'unknown field ' else 'unknown fields ') + std.join(', ', unknown)
             + ' (it takes ' + std.join(', ', std.objectFields(own)) + (if std.length(known) > std.length(own) then ', and the fields of a role of roles.libsonnet' else '') + ')');

{
  configDir:: configDir,
  keyDir:: keyDir,
  runDir:: runDir,
  sshDir:: sshDir,
  scriptPath:: configDir + '/mpi.sh',
  s3ScriptPath:: configDir + '/s3.sh',
  hostfilePath:: configDir + '/hostfile',
  // sshConfigPath: the ssh client's configuration (port, key, options):
  // ssh -F <it> reaches any pod of the job.
  sshConfigPath:: configDir + '/ssh_config',

  // params: the parameters every such job has (shmSize, launcherGrace),
  // and how the common env reads in one: after common.params. who: the
  // pods with /dev/shm; shmUsers: what uses it; sessions: what the
  // launcher starts in the workers over ssh.
  params(who='the launcher and the workers', shmUsers='NCCL', sessions='the processes the launcher starts there over ssh', owner='sshjob.params', job='a job over ssh'):: {
    env:
      if 'env' in super then super.env + { doc: 'Environment variables of every job container. In pods that serve ssh, ' + sessions + ' get them too.' }
      else ts.fail(owner + ' tells how the env of common.params reads in ' + job + ': put it after common.params'),
  } + ts.declare(owner, {
    shmSize: roles.shmParam(who, shmUsers).shmSize,
    launcherGrace: params.seconds('How long a worker waits, once the launcher is gone without telling it to stop, before it stops on its own. A launcher that is preempted, evicted or retried must be back within it, or its workers are gone.', default=420, min=10, max=86400),
  }),

  // sshParams: the start-up bound (what the launcher waits for: waitsFor)
  // and ssh between the pods. A prototype may refine a text of its own
  // (initTimeout+: {doc: ...}, ssh+: {params+: {port+: {...}}}).
  sshParams(waitsFor='every worker to answer over ssh'):: ts.declare('sshjob.sshParams', {
    initTimeout: params.seconds('How long the launcher waits for ' + waitsFor + ' before it fails with exit code 124; also how long a worker waits for the launcher to appear.', default=300, min=1, max=86400),
    ssh: params.group('ssh between the pods.', {
      secret: params.string('Existing Secret holding the ssh key: type kubernetes.io/ssh-auth with keys ssh-privatekey and ssh-publickey. Unset: trainsonnet generates a key pair into the Secret <name>-ssh.', format='dns1123Subdomain'),
      port: params.int('Port of sshd in every worker, unprivileged so it runs without root.', default=2022, min=1, max=65535),
    }),
  }),

  // launcherParams(doc): the launcher's own scheduling and resources, the
  // group launcher (the top-level cpu, memory, nodeSelector and tolerations
  // are the workers'); jobs' j.launcher takes them from p.launcher.
  launcherParams(doc):: ts.declare('sshjob.launcherParams', {
    launcher: params.group(doc, {
      cpu: params.quantity('CPU limit of the launcher. Unset: it requests 100m, so that it is never BestEffort.'),
      memory: params.quantity('Memory limit of the launcher. Unset: it requests 128Mi.', unit='bytes'),
      nodeSelector: params.map('Node labels the launcher must run on.', keys='labelKey', values='labelValue'),
      tolerations: params.object('Tolerations of the launcher.', 'core/v1.Toleration', list=true),
      env: params.map('Environment variables of the launcher only, on top of env.', keys='envName'),
    }),
  }),

  // validate: the rules every such job obeys: every pod's host name fits
  // (the workers' are the longest: '-worker-<n>' against '-launcher' or
  // '-driver'), and sshd can bind its port.
  validate(p, workers, port):: [
    roles.nameFits(p, [{ name: 'worker', kind: 'IndexedJob', count: workers }]),
    roles.nonRootPort(p, 'ssh.port', port, 'sshd'),
  ],

  // checks: the rules beyond the pod check every render passes
  // (generator/internal/check/podcheck.go).
  checks(p, envMaps={}):: [
    roles.shmCheck(p),
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
  // (ssh.libsonnet) for p.ssh.port.
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
  // ended. role is the launcher's name.
  launcherServiceName(p, role='launcher'):: roles.presenceName(p, role),

  // jobs: the launcher's presence Service, the job's headless Service,
  // the launcher's workload and the workers' Indexed Job (the contract of
  // j is at the top of this file).
  jobs(proto, p, j)::
    local jj = contract('j', j, jOK(j), jFields, jFields, jNeeds);
    local l = contract('j.launcher', jj.launcher, roleOK(jj.launcher, launcherKnown, nLauncher, launcherAbsent), launcherOwn, launcherKnown, ['image'], setHere);
    local w = contract('j.worker', jj.worker, roleOK(jj.worker, workerKnown, nWorker, workerAbsent), workerOwn, workerKnown, ['image', 'count'], workerSetHere);
    local sshPort = [{ name: 'ssh', port: jj.port }];
    local ep = l.entrypoint != null;
    local epFail(what) = ts.fail('sshjob.jobs: j.launcher.entrypoint: the image\'s ENTRYPOINT runs as it is, so ' + what);
    local volumes = $.volumes(p, jj.secretName, jj.volumes);
    local mounts = ownMounts + roles.shm(p).mounts + jj.mounts;
    // A pod in its node's network binds the ssh port on the node: at most
    // one pod of the group jj.oneNode (a component, or null: the whole
    // job) per node.
    local shared(r) = {
      volumes: volumes + r.volumes,
      mounts: mounts + r.mounts,
      affinity:
        if r.hostNetwork then roles.onePodPerNode(proto, p, jj.oneNode)
        else r.affinity,
    };
    local rs = [
      l + launcherHidden + shared(l) + {
        name: l.name,
        kind: l.kind,
        strategy: if l.kind == 'Deployment' then l.strategy else null,
        lead: true,
        // in a JobSet, the launcher's pod is made once the workers' sshd
        // serve (mpi-operator's WaitForWorkersReady)
        after: if l.kind == 'Job' then 'worker',
        resources: roles.withRequests(l.resources, $.launcherRequests),
        command: if !ep then $.command(l.init, 'launcher'),
        // the image's ENTRYPOINT, after its ssh and the workers (mpi.sh
        // wait, in the init container, which shares the pod's run dir)
        args: if ep && l.entrypoint != [] then l.entrypoint,
        initCommand: if ep then $.command(null, 'wait'),
        env: $.scriptEnv(jj.port, jj.initTimeout)
             + (if batch.jobset(p) then [{ name: 'TS_END_BY', value: 'job' }] else [])
             + (if l.rankHost != null then [{ name: 'TS_SELF', value: l.rankHost }] else [])
             + (if l.exec != null then [{ name: 'TS_EXEC', value: l.exec }] else [])
             + (if p.backoffLimit > 0 then [{ name: 'TS_END_ON_FAILURE', value: '0' }] else [])
             + l.ownEnv
             + (if l.rankHost != null then $.sshEnv(l.env, l.sshNames) else [])
             + l.env,
        ports: (if l.rankHost != null then sshPort else []) + l.ports,
      },
      w + workerHidden + shared(w) + {
        name: 'worker',
        kind: 'IndexedJob',
        count: w.count,
        // the workers stop with the launcher (mpi.sh's watchdog, its
        // presence Service, which roles.objects makes)
        follows: if w.followsLauncher then l.name,
        command: $.command(w.init, 'worker'),
        env: $.scriptEnv(jj.port, jj.initTimeout) + $.watchEnv(p, l.name, w.followsLauncher)
             + (if w.waitForGPUDriver then [{ name: 'TS_WAIT_FOR_GPU_DRIVER', value: '1' }] else [])
             + w.ownEnv
             + $.sshEnv(w.env, w.sshNames)
             + w.env,
        ports: sshPort + w.ports,
        readinessProbe: $.readinessProbe,
      },
    ];
    // The launcher as worker 0: the workers' pod, with the launcher's
    // command and env besides; a variable both set is the launcher's.
    local lenv = l.ownEnv + l.env;
    local lnames = { [e.name]: true for e in lenv };
    local indexed = w + workerHidden + shared(w) + {
      name: 'worker',
      kind: 'IndexedJob',
      count: w.count,
      lead: true,
      retryPerIndex: true,
      job: w.job + {
        maxFailedIndexes: 0,
        successPolicy: { rules: [{ succeededIndexes: '0' }] },
      },
      // a bootstrap script of the image's (init) takes launcher|worker
      command: if w.init == null then $.command(null, 'indexed')
      else ['sh', '-c', 'if [ "$JOB_COMPLETION_INDEX" = 0 ]; then exec sh "$0" launcher; fi; exec sh "$0" worker', w.init],
      env: $.scriptEnv(jj.port, jj.initTimeout)
           + [
             { name: 'TS_END_BY', value: 'job' },
             { name: 'TS_SELF', value: l.rankHost },
             // A worker watches worker 0 only to learn that this pod is
             // cut off (its name and the cluster's gone: exit 69); the
             // Job controller ends the job, and a retried worker 0 comes
             // back.
             { name: 'TS_LAUNCHER', value: l.rankHost },
           ]
           + (if l.exec != null then [{ name: 'TS_EXEC', value: l.exec }] else [])
           + (if w.waitForGPUDriver then [{ name: 'TS_WAIT_FOR_GPU_DRIVER', value: '1' }] else [])
           + [e for e in w.ownEnv if !std.objectHas(lnames, e.name)] + l.ownEnv
           + $.sshEnv(w.env + [e for e in l.env if !std.member([x.name for x in w.env], e.name)], w.sshNames + [n for n in l.sshNames if !std.member(w.sshNames, n)])
           + [e for e in w.env if !std.objectHas(lnames, e.name)] + l.env,
      ports: sshPort + w.ports,
      readinessProbe: $.readinessProbe,
    };
    if ep && (l.exec != null || l.init != null || l.rankHost != null || jj.launcherAsWorker || !batch.jobset(p)) then
      epFail(if !batch.jobset(p) then 'it tells the workers nothing when it ends: only in a JobSet, whose controller ends them'
             else if jj.launcherAsWorker then 'the launcher cannot be worker 0 (j.launcherAsWorker), whose pod runs mpi.sh'
             else if l.rankHost != null then 'the launcher is no rank (j.launcher.rankHost): it serves no ssh'
             else 'it takes no ' + (if l.exec != null then 'exec' else 'init'))
    else if jj.launcherAsWorker then
      if l.rankHost == null then ts.fail('sshjob.jobs: j.launcherAsWorker: the launcher is worker 0, a rank: give j.launcher.rankHost, the first hostfile entry')
      else if l.kind != 'Job' then ts.fail('sshjob.jobs: j.launcherAsWorker: the launcher is worker 0, a Job\'s pod, not a ' + l.kind)
      else roles.objects(proto, p, [indexed])
    else roles.objects(proto, p, rs),

  // launcherRequests: what the launcher asks for unless its cpu or memory
  // is set: it runs ssh and a launcher, little, but never BestEffort.
  launcherRequests:: { cpu: '100m', memory: '128Mi' },

  // sshEnv: the user's env of a pod that runs sshd, named in TS_SSH_ENV so
  // that the processes started there over ssh see it too (sshd gives
  // sessions a fresh environment).
  // names: more variables to pass on, which the pod's own setup sets.
  sshEnv(env, names=[])::
    if env == [] && names == [] then []
    else [{ name: 'TS_SSH_ENV', value: std.join(' ', [e.name for e in env] + names) }],

  // watchEnv: how a worker (or a sidecar of one) knows the launcher is
  // gone; with follow false, it does not stop when it is (grace 0). In a
  // JobSet, the JobSet controller ends the workers with the launcher
  // (TS_END_BY=job): the worker watches the launcher's pod only to learn
  // that it is cut off itself, and a sidecar waits for its worker alone.
  watchEnv(p, role='launcher', follow=true, sidecar=false)::
    if batch.jobset(p) then
      if sidecar then [] else [
        { name: 'TS_END_BY', value: 'job' },
        { name: 'TS_LAUNCHER', value: roles.podHost(p, role) },
      ]
    else [
      { name: 'TS_LAUNCHER', value: $.launcherServiceName(p, role) },
      { name: 'TS_LAUNCHER_GRACE', value: if follow then std.toString(p.launcherGrace) else '0' },
    ],

  // volumes of every pod. The key files are read-only: 0400 for root,
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

  // command runs the runtime script (or the user's replacement) in a role.
  command(init, role):: ['sh', if init == null then $.scriptPath else init, role],

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
