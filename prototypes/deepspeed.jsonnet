// deepspeed: a DeepSpeed job over ssh: `deepspeed --hostfile` run on
// worker 0, as DeepSpeed is usually run, and N GPU workers serving ssh, on
// lib/sshjob.libsonnet (no Open MPI), as Jsonnet alone.

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local roles = import 'roles.libsonnet';
local kubeflow = import 'kubeflow.libsonnet';
local sshjob = import 'sshjob.libsonnet';
local trainer = import 'trainer.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local params = ts.params;
local proto = 'deepspeed';

// DeepSpeed's own image: deepspeed, pdsh, sshd and PyTorch with CUDA.
local defaultImage = 'deepspeed/deepspeed:v072_torch112_cu117';
// DeepSpeed's runner starts pdsh with a fan-out of 1,024 (PDSH_MAX_FAN_OUT):
// with more workers, the sessions past it would wait for the first ones
// to end, which they never do while training.
local maxWorkers = 1024;

// The hostfile DeepSpeed reads: one line per worker, "<host> slots=<n>".
local slots(p) = if p.slots != null then p.slots else if p.gpu > 0 then p.gpu else 1;
local hostLinePrefix(p) = roles.podPrefix(p, 'worker');
local hostLineSuffix(p) = '.' + p.name + ' slots=' + slots(p);
// Worker 0 is rank 0: the rendezvous of torch.distributed (MASTER_ADDR).
local masterAddr(p) = roles.podHost(p, 'worker', 0);

// pdsh's ssh, as DeepSpeed's runner calls it (PDSH_RCMD_TYPE=ssh): the
// job's ssh configuration (port, key, options), %u and %h filled by pdsh.
local pdshSSHArgs = '-F ' + sshjob.sshConfigPath + ' -x -l%u %h';

// launch: the launcher's command, run with sh -c once every worker answers.
local launch(p) = std.join(' ', [
  'deepspeed',
  '--hostfile',
  sshjob.hostfilePath,
  '--master_addr',
  masterAddr(p),
  '--master_port',
  std.toString(p.masterPort),
  p.exec,
]);

// deepspeed's own options (its runner's) that take a value; and those
// trainsonnet gives it, which exec must not give again.
local dsValued = ['--num_gpus', '--num_nodes', '--include', '-i', '--exclude', '-e', '--master_port', '--master_addr', '--hostfile', '-H',
                  '--launcher', '--launcher_args', '--bind_core_list', '--ssh_port', '--min_elastic_nodes', '--max_elastic_nodes',
                  '--autotuning', '--comment', '--venv_script', '--node_rank'];
local dsOwn = ['--hostfile', '-H', '--master_addr', '--master_port', '--launcher', '--no_ssh', '--node_rank'];

// the options exec gives deepspeed, before its script: their names
local dsOptions(words, i=0, acc=[]) =
  if i >= std.length(words) || !std.startsWith(words[i], '-') then acc
  else
    local name = std.split(words[i], '=')[0];
    dsOptions(words, if std.member(dsValued, name) && !std.member(words[i], '=') then i + 2 else i + 1, acc + [name]);

local execWords(p) = [w for w in std.split(std.strReplace(p.exec, '\t', ' '), ' ') if w != ''];

local job(p) = {
  launcherAsWorker: p.launcherAsWorker,
  port: p.ssh.port,
  initTimeout: p.initTimeout,
  secretName: sshjob.secretName(p, p.ssh.secret),
  launcher: {
    image: p.image,
    imagePullPolicy: p.imagePullPolicy,
    exec: launch(p),
    rankHost: if p.launcherAsWorker then masterAddr(p),
    ownEnv: [{ name: 'PDSH_SSH_ARGS', value: pdshSSHArgs }],
    env: common.env(p.env + p.launcher.env),
    resources: roles.resources(cpu=p.launcher.cpu, memory=p.launcher.memory),
    nodeSelector: p.launcher.nodeSelector,
    tolerations: p.launcher.tolerations,
  },
  worker: {
    count: p.workers,
    image: p.image,
    imagePullPolicy: p.imagePullPolicy,
    env: common.env(p.env),
    resources: roles.resources(cpu=p.cpu, memory=p.memory, gpu=p.gpu, gpuResource=p.gpuResource),
    nodeSelector: p.nodeSelector,
    tolerations: p.tolerations,
    waitForGPUDriver: p.waitForGPUDriver,
  },
};

// ---- A Kubeflow Trainer TrainJob on deepspeed-distributed (from) ------

// mpirun's options that take a value (two: --mca and its kin), which the
// command's program comes after.
local mpirunValued = ['-np', '-n', '-c', '--np', '-H', '--host', '-host', '--hostfile', '-hostfile', '--machinefile', '-machinefile', '-x', '--map-by',
                      '--bind-to', '--rank-by', '-npernode', '--npernode', '-N', '--prefix', '-wdir', '--wdir', '-output-filename', '--output-filename'];
local mpirunTwo = ['--mca', '-mca', '--gmca', '-gmca'];
local base(w) = local parts = std.split(w, '/'); parts[std.length(parts) - 1];
local isPython(w) = std.startsWith(base(w), 'python') && std.stripChars(std.substr(base(w), 6, 99), '0123456789.') == '';
// afterMpirun(ws, i): the words of the program mpirun runs
local afterMpirun(ws, i=1) =
  if i >= std.length(ws) || !std.startsWith(ws[i], '-') then ws[i:]
  else if std.member(mpirunTwo, ws[i]) then afterMpirun(ws, i + 3)
  else if std.member(mpirunValued, ws[i]) && !std.member(ws[i], '=') then afterMpirun(ws, i + 2)
  else afterMpirun(ws, i + 1);
// script(ws): a python program's script and its arguments (python's own
// flags dropped: DeepSpeed's launcher runs python -u itself)
local script(ws) =
  local first = [j for j in std.range(1, std.length(ws) - 1) if !std.startsWith(ws[j], '-') || ws[j] == '-m'];
  if first == [] then [] else ws[first[0]:];

// fromTrainJob(o): deepspeed-distributed's shape. The Trainer's SDK runs
// DeepSpeed under mpirun from a launcher that is a host of ranks; here
// DeepSpeed's own runner on worker 0 starts the same script on every slot
// (the same hosts: worker 0 is the launcher), as DeepSpeed is usually run.
local fromTrainJob(o) =
  local m = trainer.mpi(o);
  local ws = m.words;
  local mpirun = ws != [] && std.member(['mpirun', 'mpiexec', 'orterun'], base(ws[0]));
  local prog = if mpirun then afterMpirun(ws) else ws;
  local exec =
    if prog == [] then []
    else if base(prog[0]) == 'deepspeed' then prog[1:]
    else if isPython(prog[0]) then script(prog)
    else ['--no_python'] + prog;
  {
    fields: m.fields,
    params: m.params + {
      workers: m.numNodes,
      launcherAsWorker: m.asNode,
      slots: m.slots,
      [if exec != [] then 'exec']: kubeflow.shell(exec),
    },
    warnings: m.warnings + [
      if mpirun then
        'spec.trainer.command: the Trainer ran it in its launcher, mpirun starting a rank per slot (DeepSpeed reads Open MPI\'s ranks); here DeepSpeed\'s runner on worker 0 runs ' + kubeflow.shell(exec) + ' on every slot of the same hosts, over ssh (pdsh)' + (if afterMpirun(ws) != ws[1:] then ', and mpirun\'s options (' + kubeflow.shell(ws[1:std.length(ws) - std.length(prog)]) + ') are not carried' else ''),
    ],
    errors: m.errors + [
      if m.entrypoint || exec == [] then
        [{ param: 'exec', field: 'spec.trainer.command', rule: (if m.entrypoint then 'none: the image\'s ENTRYPOINT runs in the launcher' else kubeflow.shell(ws) + ' names no program to run') + ', which DeepSpeed\'s runner cannot start: set exec to the training script and its arguments' }]
      else [],
    ],
  };

ts.prototype({
  name: proto,
  summary: 'A DeepSpeed job over ssh: deepspeed --hostfile run on worker 0 of N GPU workers',
  description: |||
    An Indexed Job of workers, found by stable DNS names through a headless Service:
    <name>-worker-<i>.<name>. Every worker runs sshd on an unprivileged port (ssh.port) with
    a host key of its own. Worker 0 is the launcher too, as DeepSpeed is usually run: it
    waits until every other worker answers over ssh, at most initTimeout seconds (then it
    exits 124 and names the workers that never answered), then runs

      deepspeed --hostfile /etc/trainsonnet/hostfile --master_addr <name>-worker-0.<name> --master_port <masterPort> <exec>

    DeepSpeed's runner reads the hostfile (a line per worker, "<host> slots=<n>", slots =
    gpu, or the slots parameter) and starts its launcher on every worker over ssh with pdsh,
    which reaches them with the job's key and ssh configuration (PDSH_SSH_ARGS); worker 0
    is rank 0, the rendezvous. The job ends with worker 0, with deepspeed's exit code: the
    Job controller then stops the other workers (successPolicy), and retries each worker
    backoffLimit times on its own. Nothing talks to the Kubernetes API: no ServiceAccount,
    no RBAC. With launcherAsWorker false, the launcher is a Job of its own that holds no
    rank (launcher.* sets its scheduling and resources), and it tells the workers to stop.

    The image needs deepspeed and pdsh (on worker 0), sshd (in every worker) and the
    training script at the same path in every pod: DeepSpeed's own image has them. The ssh
    key is generated at render time into the Secret <name>-ssh (the output then holds a
    private key: trainsonnet warns on stderr), or taken from an existing Secret
    (ssh.secret). A NetworkPolicy admits only the job's own pods.

    Scheduling and resources (gpu, cpu, memory, nodeSelector, tolerations) apply to the
    workers, worker 0 among them.
  |||,

  from: { 'trainer.kubeflow.org/v1alpha1/TrainJob': fromTrainJob },

  ownEnv: {
    PDSH_SSH_ARGS: 'trainsonnet sets it on the launcher: pdsh reaches the workers with the job\'s ssh configuration',
  },
  params: common.params(proto, defaultImage) + batch.params('the launcher')
          + sshjob.params('the launcher and the workers', 'NCCL', 'the processes deepspeed starts there')
          + sshjob.sshParams() + sshjob.launcherParams('The launcher pod, with launcherAsWorker false: a Job of its own that waits for the workers and runs deepspeed. It holds no rank.')
          + roles.params('each worker', gpu=1) + {
    workers: params.int('Number of worker pods, each running deepspeed\'s launcher for its slots. At most 1,024: DeepSpeed\'s runner reaches the workers through pdsh with a fan-out of 1,024.', default=2, min=1, max=maxWorkers),
    gpu+: { doc: 'GPUs per worker (a limit of gpuResource); also the slots of each worker in the hostfile: the processes deepspeed starts there.', aliases: ['gpus'] },
    gpuResource: params.string('Extended resource that counts GPUs.', default='nvidia.com/gpu', format='extendedResourceName'),
    slots: params.int('Slots per worker in the hostfile: the processes deepspeed starts in each. Unset: gpu, or 1 without GPUs.', min=1, max=1024)
           + params.atMost('gpu', 'deepspeed gives each slot a GPU of its own', unlessZero=true),
    exec: params.string('What deepspeed runs on every slot, after the options trainsonnet gives it (--hostfile, --master_addr, --master_port): the training script and its arguments (train.py --deepspeed --deepspeed_config ds_config.json), relative to the image\'s working directory, the same in every pod. deepspeed options of your own may come first (--num_gpus 4, --no_python, --module). Run with sh -c.', default='train.py --deepspeed --deepspeed_config ds_config.json', format='nonEmpty'),
    masterPort: params.int('Port of rank 0, on worker 0, where the ranks meet (MASTER_PORT).', default=29500, min=1, max=65535),
    waitForGPUDriver: params.bool('Workers wait, up to initTimeout, for the NVIDIA driver (/proc/driver/nvidia/version) before starting sshd.'),
    launcherAsWorker: params.bool('Run deepspeed on worker 0, as DeepSpeed is usually run: one Indexed Job that the Job controller ends when worker 0 ends (successPolicy), stopping the other workers itself. false: a launcher Job of its own, which holds no rank (launcher.*).', default=true),
  },

  validate(p):: sshjob.validate(p, p.workers, p.ssh.port) + sshjob.checks(p) + [
    ts.check(!p.launcherAsWorker || p.launcher[k] == null || p.launcher[k] == {} || p.launcher[k] == [], 'launcher.' + k,
             'is the launcher pod\'s, and deepspeed runs on worker 0 (launcherAsWorker), whose pod is a worker\'s: set it for every worker (' + k + '), or set launcherAsWorker=false for a launcher pod of its own')
    for k in ['cpu', 'memory', 'nodeSelector', 'tolerations', 'env']
  ] + [
    ts.check(p.masterPort != p.ssh.port, 'masterPort', 'must not be ssh.port (' + p.ssh.port + '): worker 0 serves both'),
    ts.check(!std.member(p.exec, '\n') && !std.member(p.exec, '\r'), 'exec', 'must be one line: it ends deepspeed\'s command line, where a line break would start another command'),
    ts.check(execWords(p) == [] || std.split(execWords(p)[0], '/')[std.length(std.split(execWords(p)[0], '/')) - 1] != 'deepspeed', 'exec',
             'must not start with deepspeed: trainsonnet runs deepspeed (with --hostfile, --master_addr and --master_port); give what it runs: the script and its arguments, after options of your own'),
  ] + [
    ts.check(false, 'exec', 'must not give ' + o + ': trainsonnet gives deepspeed ' + {
      '--hostfile': 'the job\'s hostfile', '-H': 'the job\'s hostfile', '--master_addr': 'worker 0 as the master',
      '--master_port': 'masterPort (set that)', '--launcher': 'the pdsh launcher', '--no_ssh': 'ssh, which reaches the workers',
      '--node_rank': 'each node its rank',
    }[o])
    for o in std.set(dsOptions(execWords(p)))
    if std.member(dsOwn, o)
  ] + [
    sshjob.checkConfigSize(p, 'workers', hostLinePrefix(p), hostLineSuffix(p), 0, p.workers),
  ],

  warnings(p):: [
    sshjob.generatedKeyWarning(p, p.ssh.secret, '--ssh-secret'),
    if p.waitForGPUDriver && p.gpu == 0 then 'waitForGPUDriver is set but gpu is 0: the workers will wait for a driver they do not use',
    roles.shWarning('exec', p.exec),
  ],

  render(p)::
    [
      common.networkPolicy(proto, p, []),
      sshjob.sshSecret(proto, p, p.ssh.secret),
      sshjob.config(proto, p, ts.indexedLines(hostLinePrefix(p), hostLineSuffix(p), 0, p.workers)),
    ] + sshjob.jobs(proto, p, job(p)),
})
