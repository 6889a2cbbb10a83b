// pytorch: a PyTorch job without an operator: an Indexed Job of worker pods,
// each running torchrun, which meet at worker 0's stable DNS name. Takes the
// names a Kubeflow PyTorchJob's users know (nprocPerNode, elasticPolicy,
// runPolicy, the Master/Worker replica specs where they map) from a params
// file, with warnings that say what to do.

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local kubeflow = import 'kubeflow.libsonnet';
local roles = import 'roles.libsonnet';
local runtime = import 'runtime.libsonnet';
local storage = import 'storage.libsonnet';
local trainer = import 'trainer.libsonnet';
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
local templateWhatToDo = 'give the whole PyTorchJob (apiVersion, kind, metadata, spec) as the file, and its template is read; in a spec alone, the pods are rendered from typed parameters: image, exec (the training script, after torchrun\'s options), gpu, cpu, memory, nodeSelector, tolerations, env, volumes and volumeMounts; anything else goes into a kustomize patch of the generated base';
local replicasWhatToDo = 'give the whole PyTorchJob as the file, and workers is read from it; in a spec alone, workers counts every pod, the master included: worker 0 is rank 0 and the rendezvous, as the Master was; set workers to Master.replicas + Worker.replicas';
local restartWhatToDo = 'each worker pod is retried on its own, backoffLimit times (backoffLimitPerIndex; 0 unless set, where the operator\'s OnFailure restarted without limit); disruptions (preemption, a node drain) do not count';

local params_ = common.params('train', defaultImage) + batch.params('each worker') + storage.params(['trainDir']) + roleParams + {
  exec+: { default: defaultScript },
  backoffLimit+: {
    doc: 'Retries of each worker pod (the Job\'s backoffLimitPerIndex; the PyTorchJob\'s runPolicy.backoffLimit). A worker that fails more often fails the job, unless elastic training can go on without it (elastic.minNodes). With retries, delete the job (kubectl delete -f, or its Job) before its namespace: Kubernetes 1.33 and later delete a namespace\'s pods first, and keep a failed pod with retries left until its replacement exists, which a terminating namespace refuses.',
    replaces: 'runPolicy.backoffLimit',
    replacesNote: 'the operator counted the restarts of all pods together; backoffLimit retries each pod on its own (backoffLimitPerIndex): a pod that fails spends its own retry, the pods that a static job stops because one went spend none, and an error that fails the training in every pod at once costs each of them one',
  },
  activeDeadlineSeconds+: { replaces: 'runPolicy.activeDeadlineSeconds' },
  ttlSecondsAfterFinished+: {
    replaces: 'runPolicy.ttlSecondsAfterFinished',
    replacesNote: 'it deletes the Job and its pods; the Service and NetworkPolicy, which the operator\'s job owned, stay until kubectl delete -f of the manifests',
  },
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
              + { replacesNote: 'alone, the other bound (elastic.maxNodes) is workers here, where the operator made it this one: set both' }
              + params.atMost('workers', 'the training would wait for pods that never come'),
    maxNodes: params.int('Most pods the training runs with. Unset: workers. Above workers, the Job can be scaled up to it (change its completions and parallelism together); the rendezvous then waits 30 s for more pods than it has.', min=1, max=1000, replaces='elasticPolicy.maxReplicas')
              + { replacesNote: 'alone, the other bound (elastic.minNodes) is workers here, where the operator made it this one: set both' }
              + params.atLeast('workers', 'the rendezvous would turn pods of the job away'),
    maxRestarts: params.int('How often torchrun restarts the training of every pod (a new rendezvous) after a process failed or a pod came or went (--max_restarts). Unset: 0.', min=0, max=1000, replaces='elasticPolicy.maxRestarts'),
  }),
  command: params.list('The pods\' command as given (a container\'s command: the program and its arguments, each word one item), run instead of torchrun over exec: a command that runs torchrun itself, which reads the PET_* variables the pods have (PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT: the job\'s static rendezvous), as a Kubeflow TrainJob\'s command does, or a program that reads MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE itself. One item per --command flag.', items='nonEmpty', separator=''),
  args: params.list('Arguments after command, after the image\'s ENTRYPOINT (entrypoint), or after exec. One item per --args flag.', separator=''),
  entrypoint: params.bool('Run the image\'s ENTRYPOINT (with args, if given; else its CMD), as a container without a command runs, instead of torchrun over exec: for an image whose ENTRYPOINT is the training program, with the pods\' PET_*, MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE (an operator\'s job whose container gives only args).'),
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
// The pods run their command as given (command), or the image's
// ENTRYPOINT (entrypoint, or args alone), instead of torchrun over exec.
local asGiven(p) = p.command != [] || p.entrypoint;
local entrypoint(p) = p.command == [] && p.entrypoint;
local master(p) = roles.podHost(p, component, 0);

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
) + [p.exec] + [kubeflow.shell([a]) for a in p.args]);

// The variables a PyTorchJob's pods had (RANK is the pod's node rank,
// WORLD_SIZE counts processes; torchrun gives its processes their own), and
// the checkpoint directory.
local ownEnv(p) = (
  // a command run as given meets the others through torchrun's
  // variables, as the Trainer's and the operator's pods did
  if asGiven(p) then [
    { name: 'PET_NNODES', value: std.toString(p.workers) },
    { name: 'PET_NPROC_PER_NODE', value: nproc(p) },
    { name: 'PET_NODE_RANK', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } },
    { name: 'PET_MASTER_ADDR', value: master(p) },
    { name: 'PET_MASTER_PORT', value: std.toString(p.port) },
  ] else []
) + [
  { name: 'MASTER_ADDR', value: master(p) },
  { name: 'MASTER_PORT', value: std.toString(p.port) },
  // as the operator counts it: pods times processes per pod, where a
  // render knows them (a PyTorchJob with nprocPerNode cpu or auto counts 1)
  // (a command as given is one process per pod unless it runs torchrun,
  // which gives its processes their own)
  { name: 'WORLD_SIZE', value: std.toString(p.workers * (if procs(p) == null || asGiven(p) then 1 else procs(p))) },
  { name: 'RANK', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } },
  { name: 'TRAIN_DIR', value: trainDir(p) },
];

// A static rendezvous is every pod or none: torchrun runs under the
// runtime as a group (lib/assets/runtime.sh run --group), which ends every
// pod's torchrun once one of them has been made again (it failed, was
// deleted or cut off), for the Job to make them again, no retry spent, and
// meet again at once, rather than wait for the training's own timeout and
// torchrun's exit barrier (5 minutes in PyTorch 1.13). Elastic training handles its pods
// coming and going itself. A JobSet needs no group: a pod that fails
// fails the set's attempt, and the JobSet controller makes every pod again.
// An image's ENTRYPOINT runs as it is, without the runtime around it: a
// pod made again is met by the others' rendezvous timeout, as under an
// operator.
local grouped(p) = !elastic(p) && p.workers > 1 && !batch.jobset(p) && !entrypoint(p);
local configName(p) = p.name + '-config';
local config(p) = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: common.metadata(proto, p, configName(p)),
  data: runtime.scriptFile,
};

local worker(p) =
  local store = storage.pod(p, component, [trainDir(p)]);
  local group = grouped(p);  // (asked once: the form costs a look at p)
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
    local cmd = if p.command != [] then [kubeflow.kubelet(w) for w in p.command + p.args] else ['sh', '-c', torchrun(p)],
    [if !entrypoint(p) then 'command']:
      if group then runtime.run(cmd, group=roles.group(p, component, p.workers))
      else cmd,
    [if entrypoint(p) && p.args != [] then 'args']: [kubeflow.kubelet(w) for w in p.args],
    env: ownEnv(p) + common.env({ PYTHONUNBUFFERED: '1' } + p.env),
    resources: roles.resources(cpu=p.cpu, memory=p.memory, gpu=p.gpu, gpuResource=p.gpuResource),
    nodeSelector: p.nodeSelector,
    tolerations: p.tolerations,
    volumes: store.volumes + roles.shm(p).volumes + (if group then [runtime.volume(configName(p))] else []),
    mounts: store.mounts + roles.shm(p).mounts + (if group then [runtime.mount] else []),
    job: {
      // the training goes on without a pod that failed for good only
      // while elastic training has enough pods left
      maxFailedIndexes: if elastic(p) then p.workers - std.min(minNodes(p), p.workers) else 0,
      // the job ends when rank 0's pod ends: it hosts the rendezvous, and
      // torchrun's exit barrier has every pod finish with it
      successPolicy: { rules: [{ succeededIndexes: '0' }] },
    },
  };

// The PyTorchJob's keys that trainsonnet no longer takes, with what to do.
local removed = {
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
};

// ---- A PyTorchJob (kubeflow.org/v1) as the parameters (from) ----------

// torchrun's options that take a value; any other option is a flag.
local torchrunValued = std.set([
  'nnodes', 'nproc_per_node', 'rdzv_backend', 'rdzv_endpoint', 'rdzv_id', 'rdzv_conf', 'max_restarts', 'monitor_interval',
  'start_method', 'role', 'node_rank', 'master_addr', 'master_port', 'local_addr', 'log_dir', 'redirects', 'r', 'tee', 't',
  'local_ranks_filter', 'logs_specs', 'event_log_handler', 'signals_to_handle',
]);
// The ones trainsonnet gives torchrun itself, from the parameters.
local torchrunOwn = std.set(['nnodes', 'rdzv_backend', 'rdzv_endpoint', 'rdzv_id', 'rdzv_conf', 'node_rank', 'master_addr', 'master_port', 'standalone']);
local flagName(w) = std.strReplace(std.lstripChars(std.split(w, '=')[0], '-'), '-', '_');
local baseName(w) = local parts = std.split(w, '/'); parts[std.length(parts) - 1];
local isPython(w) = std.startsWith(baseName(w), 'python') && std.stripChars(std.substr(baseName(w), 6, 99), '0123456789.') == '';

// torchrunOpts(ws, i, acc): torchrun's options in ws from i on, each
// {name, value, words: as written}, then the script and its arguments.
local torchrunOpts(ws, i, acc) =
  if i < std.length(ws) && std.startsWith(ws[i], '-') then
    local n = flagName(ws[i]);
    if ts.contains(ws[i], '=') then
      torchrunOpts(ws, i + 1, acc + [{ name: n, value: std.join('=', std.split(ws[i], '=')[1:]), words: [ws[i]] }])
    else if std.member(torchrunValued, n) && i + 1 < std.length(ws) then
      torchrunOpts(ws, i + 2, acc + [{ name: n, value: ws[i + 1], words: ws[i:i + 2] }])
    else torchrunOpts(ws, i + 1, acc + [{ name: n, value: true, words: [ws[i]] }])
  else { opts: acc, exec: ws[i:] };

// launch(words): how a container's command started the training:
// {launcher: torchrun, python, program or null (no command), opts:
// torchrun's options, exec: the words after them}.
local launch(words) =
  if words == [] then { launcher: null, opts: [], exec: [] }
  else if baseName(words[0]) == 'torchrun' then { launcher: 'torchrun' } + torchrunOpts(words, 1, [])
  else if isPython(words[0]) && std.length(words) > 2 && words[1] == '-m' && std.member(['torch.distributed.run', 'torch.distributed.launch'], words[2]) then
    { launcher: 'torchrun' } + torchrunOpts(words, 3, [])
  else if isPython(words[0]) then
    // python's own flags (-u, -B, ...) before the script or -m: torchrun
    // runs python -u itself
    local rest = words[1:];
    local first = [j for j in std.range(0, std.length(rest) - 1) if !std.startsWith(rest[j], '-') || rest[j] == '-m'];
    { launcher: 'python', opts: [], exec: if first == [] then [] else rest[first[0]:] }
  else { launcher: 'program', opts: [], exec: words };

// innerTorchrun(words): a shell's -c script that runs torchrun (or
// torch.distributed.run) itself
local innerTorchrun(words) =
  std.length(words) >= 3 && std.member(['sh', 'bash', 'dash', 'zsh', 'ash'], baseName(words[0]))
  && std.length([w for w in words[1:] if std.startsWith(w, '-') && std.member(w, 'c')]) > 0
  && std.length([w for w in words[1:] if ts.contains(w, 'torchrun') || ts.contains(w, 'torch.distributed.run') || ts.contains(w, 'torch.distributed.launch')]) > 0;

local opt(l, name) = local o = [x.value for x in l.opts if x.name == name]; if o == [] then null else o[0];

local fromPyTorchJob(o) =
  local at = 'spec.pytorchReplicaSpecs';
  local spec = std.get(o, 'spec', {});
  local rs = std.get(spec, 'pytorchReplicaSpecs', {});
  local master = std.get(rs, 'Master');
  local worker = std.get(rs, 'Worker');
  local leadName = if master != null then 'Master' else 'Worker';
  local lead = if master != null then master else worker;
  local pods = kubeflow.replicas(master) + kubeflow.replicas(worker);
  local pod = if lead == null then { params: {}, warnings: [], errors: [], fields: {} } else kubeflow.pod(lead, 'pytorch', at + '.' + leadName);
  local tmpl = if lead == null then {} else std.get(std.get(lead, 'template', {}), 'spec', {});
  local c = if lead == null then null else kubeflow.container(tmpl, 'pytorch');
  local words = if c == null then [] else kubeflow.words(c);
  // args alone run under the image's ENTRYPOINT, as the operator ran them
  local argsOnly = c != null && std.get(c, 'command') == null;
  local cmdAt = at + '.' + leadName + '.template.spec.containers[' + (if c == null then '0' else std.get(c, 'name', '0')) + ']';
  local l = if argsOnly then launch([]) else launch(words);
  local envOf = std.get(pod.params, 'env', {});
  local ep = std.get(spec, 'elasticPolicy');
  local run = std.get(spec, 'runPolicy', {});
  local restart = if lead == null then 'OnFailure' else std.get(lead, 'restartPolicy', 'OnFailure');
  local gpu = std.get(pod.params, 'gpu', 0);
  // nprocPerNode: torchrun's flag in the command (which wins in
  // torchrun), the spec's, the deprecated elasticPolicy's or PET_'s
  local nprocGiven =
    if opt(l, 'nproc_per_node') != null then opt(l, 'nproc_per_node')
    else if std.get(spec, 'nprocPerNode') != null then spec.nprocPerNode
    else if ep != null && std.get(ep, 'nProcPerNode') != null then ep.nProcPerNode
    else std.get(envOf, 'PET_NPROC_PER_NODE');
  local port = [x.containerPort for x in (if c == null then [] else std.get(c, 'ports', [])) if std.get(x, 'name') == 'pytorchjob-port'];
  // the operator's defaults: a missing bound is the other one
  local minR = if ep == null then null else std.get(ep, 'minReplicas', std.get(ep, 'maxReplicas'));
  local maxR = if ep == null then null else std.get(ep, 'maxReplicas', std.get(ep, 'minReplicas'));
  local maxRestarts = if ep != null && std.get(ep, 'maxRestarts') != null then ep.maxRestarts
  else if opt(l, 'max_restarts') != null then std.parseInt(opt(l, 'max_restarts'));
  local ownPET = ['PET_NNODES', 'PET_NPROC_PER_NODE', 'PET_NODE_RANK', 'PET_MASTER_ADDR', 'PET_MASTER_PORT', 'PET_RDZV_BACKEND',
                  'PET_RDZV_ENDPOINT', 'PET_RDZV_ID', 'PET_RDZV_CONF', 'PET_MAX_RESTARTS', 'PET_STANDALONE'];
  local operatorEnv = ['MASTER_ADDR', 'MASTER_PORT', 'WORLD_SIZE', 'RANK'];
  local execWords =
    std.join([], [x.words for x in l.opts if !std.member(torchrunOwn, x.name) && x.name != 'nproc_per_node' && x.name != 'max_restarts'])
    + (if l.launcher == 'program' then ['--no-python'] else [])
    + l.exec;
  local backoff = std.get(run, 'backoffLimit');
  // deadline, TTL, priority class; the PyTorchJob's other run policy keys
  // said with this prototype's texts of them
  local runPolicy = kubeflow.runPolicy(o, removed);
  local workerParams = if worker == null || master == null then null
  else kubeflow.pod(worker, 'pytorch', '').params + { cmd: kubeflow.words(kubeflow.container(std.get(std.get(worker, 'template', {}), 'spec', {}), 'pytorch')) };
  {
    fields: pod.fields + kubeflow.meta(o).fields + runPolicy.fields + {
      workers: std.join(' + ', [at + '.' + r + '.replicas' for r in ['Master', 'Worker'] if std.objectHas(rs, r)]),
      exec: cmdAt + '.command',
      command: cmdAt + '.command',
      args: cmdAt + '.args',
      entrypoint: cmdAt + '.command',
      nprocPerNode: if opt(l, 'nproc_per_node') != null then cmdAt + '.command' else 'spec.nprocPerNode',
      port: cmdAt + '.ports',
      elastic: 'spec.elasticPolicy',
    },
    params: pod.params + kubeflow.meta(o).params + runPolicy.params + {
      [if pods > 0 then 'workers']: pods,
      [if l.exec != [] && !innerTorchrun(words) then 'exec']: kubeflow.shell(execWords),
      [if argsOnly && words != [] then 'args']: words,
      // a shell script that runs torchrun itself: run as given, its
      // torchrun meets the others through the pods' PET_* variables
      [if !argsOnly && innerTorchrun(words) then 'command']: words,
      [if argsOnly then 'entrypoint']: true,
      // the operator ran a command without torchrun once per pod
      [if argsOnly || l.launcher == 'python' || l.launcher == 'program' || nprocGiven != null then 'nprocPerNode']:
        if argsOnly || l.launcher == 'python' || l.launcher == 'program' then '1' else std.toString(nprocGiven),
      [if std.objectHas(pod.params, 'env') then 'env']: { [k]: envOf[k] for k in std.objectFields(envOf) if !std.member(ownPET + operatorEnv, k) },
      // the operator's rendezvous port: its pytorchjob-port, 23456 unset
      port: if port != [] then port[0] else 23456,
      backoffLimit: if backoff != null then std.min(backoff, 100) else if restart == 'Never' then 0 else 6,
      [if ep != null || maxRestarts != null then 'elastic']: {
        [if minR != null then 'minNodes']: minR,
        [if maxR != null then 'maxNodes']: maxR,
        [if maxRestarts != null then 'maxRestarts']: maxRestarts,
      },
    },
    warnings: pod.warnings + runPolicy.warnings + kubeflow.meta(o).warnings + [
      if workerParams != null && workerParams != pod.params + { cmd: words } then
        at + '.Worker.template differs from Master\'s: every pod here runs Master\'s (worker 0 is rank 0): make them one, or render two jobs',
      if l.launcher == 'python' then
        cmdAt + '.command: the operator ran ' + words[0] + ' once in each pod; here torchrun runs the script, one process per pod (nprocPerNode 1), with the same RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT'
        + (if gpu > 1 then ' (nprocPerNode gpu would start one per GPU, which the script must then place by LOCAL_RANK)' else ''),
      if l.launcher == 'program' then
        cmdAt + '.command: not a Python launcher: torchrun runs it as a program (--no-python), once per pod, with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set',
      if l.launcher == 'torchrun' && nprocGiven == null && gpu == 0 then
        'nprocPerNode: the operator\'s default, auto, starts one process per CPU of the node on a pod without GPUs; this job starts 1: set nprocPerNode (a number, or auto) to change it',
    ] + [
      cmdAt + ': torchrun\'s ' + x.words[0] + ' is dropped: trainsonnet gives it (workers, elastic.*, port)'
      for x in l.opts
      if std.member(torchrunOwn, x.name)
    ] + [
      cmdAt + '.env.' + k + ': dropped: ' + (if std.member(ownPET, k) then 'torchrun takes it as a flag, which trainsonnet gives from the parameters' else 'trainsonnet sets it, with the meaning torchrun gives it')
      for k in std.objectFields(envOf)
      if std.member(ownPET + operatorEnv, k)
    ] + [
      if backoff != null then
        'spec.runPolicy.backoffLimit ' + backoff + ': the operator counted the restarts of all pods together; here each pod is retried ' + std.min(backoff, 100) + ' times on its own (backoffLimitPerIndex): a pod that fails spends its own retry, the pods that a static job stops because one went spend none, and an error that fails the training in every pod at once costs each of them one'
      else if restart != 'Never' then
        at + '.' + leadName + '.restartPolicy ' + restart + ' and no runPolicy.backoffLimit: the operator restarted failed pods without limit; here each pod is retried 6 times (backoffLimit), disruptions not counted: set backoffLimit to change it',
      if restart == 'ExitCode' then
        at + '.' + leadName + '.restartPolicy ExitCode: the operator failed the job on exit codes 1-127 and restarted it on the others; torchrun exits 1 whenever a process fails, so here every failure is retried, backoffLimit times',
      if ep != null && (std.get(ep, 'minReplicas') == null) != (std.get(ep, 'maxReplicas') == null) then
        'spec.elasticPolicy: one bound given: the other is the same, as the operator sets it (' + minR + ':' + maxR + ')',
      if ep != null && std.get(ep, 'rdzvBackend', 'c10d') != 'c10d' then
        'spec.elasticPolicy.rdzvBackend ' + ep.rdzvBackend + ': the rendezvous is c10d on worker 0 (no etcd)',
    ] + [
      'spec.elasticPolicy.' + k + ': ' + removed['elasticPolicy.' + k]
      for k in ['rdzvHost', 'rdzvId', 'rdzvConf', 'standalone', 'metrics']
      if ep != null && std.objectHas(ep, k)
    ] + [
      at + '.' + r + ': not carried: a PyTorchJob has Master and Worker'
      for r in std.objectFields(rs)
      if r != 'Master' && r != 'Worker'
    ] + [
      'spec.' + k + ': not carried'
      for k in std.objectFields(spec)
      if !std.member(['pytorchReplicaSpecs', 'elasticPolicy', 'runPolicy', 'nprocPerNode'], k)
    ],
    errors: [
      kubeflow.refuse(lead != null, at, 'has neither Master nor Worker: nothing to run'),
      if !argsOnly && c != null && (l.launcher == 'torchrun' || l.launcher == 'python') && l.exec == [] then
        [{ param: 'exec', field: cmdAt + '.command', rule: kubeflow.shell(words) + ' names no script to run: give it in the command, or set exec to the script and its arguments' }]
      else [],
    ],
  };

// ---- A Kubeflow Trainer TrainJob on a torch runtime (from) -------------

// The variables the Trainer's torch policy sets (and refuses in env).
local trainerPET = ['PET_NNODES', 'PET_NPROC_PER_NODE', 'PET_NODE_RANK', 'PET_MASTER_ADDR', 'PET_MASTER_PORT'];

// fromTrainJob(o): the job the Trainer runs: every node runs the trainer's
// command as given (it runs torchrun itself, which reads PET_*), or the
// image's ENTRYPOINT; the nodes, processes per node and rendezvous are
// trainsonnet's, with the Trainer's values.
local fromTrainJob(o) =
  local t = trainer.job(o, trainerPET);
  local c = t.container;
  local tr = std.get(std.get(o, 'spec', {}), 'trainer', {});
  local cmd = std.get(c, 'command');
  local args = std.get(c, 'args');
  local gpu = std.get(t.params, 'gpu', 0);
  local res = std.get(c, 'resources', {});
  // the CPUs of the node's resources, as the Trainer counts them
  // (requests first, at least 1)
  local cpuOf(q) = local s = std.toString(q); if std.endsWith(s, 'm') then std.parseInt(std.substr(s, 0, std.length(s) - 1)) / 1000 else std.parseJson(s);
  local cpus = local q = std.get(std.get(res, 'requests', {}), 'cpu', std.get(std.get(res, 'limits', {}), 'cpu')); if q == null then 1 else std.max(1, std.floor(cpuOf(q)));
  // numProcPerNode: the TrainJob's, the runtime's (v2.1), else auto
  local given = if std.get(tr, 'numProcPerNode') != null then tr.numProcPerNode else std.get(std.get(t.policy, 'torch', {}), 'numProcPerNode', 'auto');
  local nproc = if std.isNumber(given) then std.toString(given)
  else if given == 'auto' && gpu > 0 || given == 'gpu' then given
  else std.toString(cpus);
  {
    fields: t.fields + {
      nprocPerNode: if std.get(tr, 'numProcPerNode') != null then 'spec.trainer.numProcPerNode' else 'runtime ' + t.runtime + ', mlPolicy.torch',
      entrypoint: 'spec.trainer.command',
    },
    params: t.params + {
      workers: t.numNodes,
      [if cmd != null then 'command']: cmd,
      [if args != null then 'args']: args,
      [if cmd == null then 'entrypoint']: true,
      nprocPerNode: nproc,
      port: 29500,
      [if std.objectHas(t.params, 'env') then 'env']: { [k]: t.params.env[k] for k in std.objectFields(t.params.env) if !std.member(trainerPET, k) },
    },
    warnings: t.warnings + t.indexed('worker 0 (rank 0)') + [
      if (given == 'auto' || given == 'cpu') && gpu == 0 then
        'nprocPerNode ' + given + ': the Trainer counts the CPUs of the node\'s resources (' + nproc + '), not torchrun\'s (the node\'s): nprocPerNode is ' + nproc,
      if cmd == null && args == null && std.get(tr, 'image') == null then
        'the runtime\'s image (' + std.get(c, 'image', '') + ') runs its ENTRYPOINT: give the trainer an image and a command',
    ],
    errors: t.errors,
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
    the training script and its arguments. MASTER_ADDR, MASTER_PORT, WORLD_SIZE (pods times
    processes per pod) and RANK (the pod's index) are set as a PyTorchJob set them, for programs that read them;
    torchrun gives its processes their own RANK, LOCAL_RANK and WORLD_SIZE. With elastic.*,
    torchrun uses its c10d rendezvous on worker 0 and runs with minNodes to maxNodes pods,
    restarting the training maxRestarts times when a process fails or a pod comes or goes.

    Each pod is retried on its own, backoffLimit times (backoffLimitPerIndex); disruptions
    (preemption, a node drain) do not count. A static rendezvous is every pod or none: once
    a pod is made again (it failed, was deleted or cut off), the others' torchrun is stopped
    (exit 75, which the Job ignores) and all meet again, in seconds rather than after the
    training's timeout. A pod that fails for good fails the job (elastic:
    once fewer than minNodes are left). The job ends when worker 0, rank 0, ends: it
    completes then, and the other pods still running are stopped. /dev/shm is a memory
    volume (shmSize). TRAIN_DIR is trainDir on the shared storage (storage.*: a claim, NFS or
    Azure Files), where rank 0 writes checkpoints that eval and tensorboard read. The
    NetworkPolicy admits only the job's own pods. The pods need no ssh and no RBAC.

    A whole PyTorchJob (kubeflow.org/v1) works as a params file: workers, the image, command,
    GPUs, limits, env, volumes, nprocPerNode, elasticPolicy and runPolicy are derived from it,
    and what is not carried or differs from the operator is said in warnings. Its spec alone
    works as a params file for what maps: nprocPerNode (8, gpu, auto),
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

  removed: removed,

  from: { 'kubeflow.org/v1/PyTorchJob': fromPyTorchJob, 'trainer.kubeflow.org/v1alpha1/TrainJob': fromTrainJob },


  validate(p):: storage.validate(p, ['trainDir']) + [
    roles.nameFits(p, [worker(p)]),
    roles.shmCheck(p),
    ts.check(nproc(p) != 'gpu' || p.gpu > 0, 'nprocPerNode', 'gpu starts one process per GPU, and the pods have none: set gpu, or a number'),
    roles.nonRootPort(p, 'port', p.port, 'worker 0\'s rendezvous'),
    ts.check(!p.entrypoint || p.command == [], 'entrypoint', 'runs the image\'s ENTRYPOINT, which command replaces: set one of them'),
    ts.check(!asGiven(p) || !elastic(p), if p.command != [] then 'command' else 'entrypoint',
             'is run as given, and elastic training is torchrun\'s c10d rendezvous, which trainsonnet runs over exec: unset elastic.*, or give the script as exec'),
  ],

  warnings(p):: storage.warnings(p, component, [trainDir(p)]) + [
    if asGiven(p) && p.exec != defaultScript then
      'exec is not run: ' + (if p.command != [] then 'command' else 'the image\'s ENTRYPOINT') + ' runs instead of torchrun over exec',
    if entrypoint(p) && p.workers > 1 && !elastic(p) && !batch.jobset(p) then
      'the image\'s ENTRYPOINT runs as it is, without trainsonnet\'s runtime around it: a pod made again (it failed, or was deleted) is met by the others\' rendezvous timeout, as under an operator, not at once; a command (command) runs under the runtime',
    if !asGiven(p) && p.image == defaultImage && p.exec == defaultScript then
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
    if grouped(p) then config(p),
  ] + roles.objects(proto, p, [worker(p)]),
})
