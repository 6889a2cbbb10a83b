// tf-distributed: distributed TensorFlow with parameter servers, workers,
// an optional chief and an optional evaluator, that find each other by
// stable names and end together. Replaces the distrib-tensorflow chart of
// the distributed TensorFlow charts (seed 002).

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local kubeflow = import 'kubeflow.libsonnet';
local roles = import 'roles.libsonnet';
local runtime = import 'runtime.libsonnet';
local storage = import 'storage.libsonnet';
local tf = import 'tf.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local params = ts.params;
local proto = 'tf-distributed';

// Where the chart's image had its training script, and how its workers
// prepared their data first (the chart's worker image had both).
local chartScript = '/src/python/train.py';
local chartPrep = tf.chartPrep;
local defaultTag = '2.18.0';

// The chart's image blocks, <repository>/<name>:<tag>: tasks without GPUs
// run cpuImage, tasks with GPUs gpuImage (TensorFlow's own images, pinned,
// by default).
local imageGroup(which, tag, chartTag) = params.group(
  'Image of the tasks ' + which + ' GPUs, in the chart\'s shape <repository>/<name>:<tag> (its tag was ' + chartTag + '). A role\'s image replaces it.',
  {
    repository: params.string('Image repository (the chart\'s was the registry).', default='tensorflow', format='imageRepository'),
    name: params.string('Image name under repository (the chart\'s distrib-tensorflow-cars). Unset: repository is the whole name.', default='tensorflow', format='imageRepository'),
    tag: params.string('Image tag.', default=tag, format='imageTag'),
  }
);

// A role's parameters. who: "each parameter server"; job: the chart's
// clusterConfig.jobs key of the role, for the roles the chart had.
local roleGroup(doc, who, number, numberDoc, min, max, job=null) = params.group(doc, roles.params(
  who,
  gpu=null,
  exec='Command ' + who + ' runs with sh -c instead of exec (or the default command). TF_CONFIG, PSHOSTS, WORKERHOSTS, JOBNAME, TASKID, TRAINDIR and BATCHSIZE are in its environment.',
) + roles.envParams(who) + {
  number: params.int(numberDoc, default=number, min=min, max=max, replaces=if job != null then 'clusterConfig.jobs.' + job + '.num'),
  image: params.string('Container image of ' + who + '. Unset: the image block of imageBlock, else gpuImage with GPUs and cpuImage without.', format='image'),
  init: params.string('Command run with sh -c before ' + who + ' starts, in an init container with the same image, environment and volumes: to prepare data into scratchDir.' + (if job == 'worker' then ' Unset: the chart\'s data preparation when prepareData says so.' else ''), format='nonEmpty'),
} + (if job == null then {} else {
  isGPU: params.bool('The chart\'s clusterConfig.jobs.' + job + '.isGPU: true gives ' + who + ' one GPU, as the chart did, unless ' + job + '.gpu' + (if job == 'worker' then ' or gpu' else '') + ' says how many; false: none.', default=null, replaces='clusterConfig.jobs.' + job + '.isGPU'),
  imageBlock: params.enum('The image block ' + who + ' runs (the chart\'s clusterConfig.jobs.' + job + '.image): cpuImage or gpuImage. Unset: gpuImage with GPUs, cpuImage without. ' + job + '.image replaces it.', ['cpuImage', 'gpuImage'], replaces='clusterConfig.jobs.' + job + '.image'),
}));

local roleNames = ['ps', 'worker', 'chief', 'evaluator'];
local longName = { ps: 'parameter servers (ps)', worker: 'workers', chief: 'chief', evaluator: 'evaluator' };

local params_ = common.params('train') + batch.params('the workers (the chief, when there is one)') + storage.params(['trainDir'], tfCharts=true) + {
  ps: roleGroup('The parameter servers: they hold the variables and serve them to the other tasks until the workers (or the chief) are done, then stop.',
                'each parameter server', 2, 'Number of parameter servers (the chart\'s clusterConfig.jobs.ps.num). 0: none, for strategies whose workers hold the variables themselves (MultiWorkerMirroredStrategy).', 0, 100, 'ps'),
  worker: roleGroup('The workers. Their gpu, cpu, memory, nodeSelector and tolerations default to the top-level ones.',
                    'each worker', 2, 'Number of workers (the chart\'s clusterConfig.jobs.worker.num).', 1, 2000, 'worker'),
  chief: roleGroup('An optional chief (TensorFlow 2\'s coordinator, or a worker that leads): with one, the job ends when it does, and the workers stop with the parameter servers. Its gpu, cpu, memory, nodeSelector and tolerations default to the top-level ones.',
                   'the chief', 0, 'Chief tasks: 0 or 1.', 0, 1),
  evaluator: roleGroup('An optional evaluator: it evaluates the checkpoints while training runs (not part of the cluster in TF_CONFIG), and stops with the parameter servers.',
                       'the evaluator', 0, 'Evaluator tasks: 0 or 1.', 0, 1),
  gpu: params.int('GPUs of each worker and of the chief (a limit of gpuResource). Unset: none, or one for the workers with worker.isGPU (the chart\'s values).', min=0, max=1024),
  cpu: params.quantity('CPU limit of each worker and of the chief.'),
  memory: params.quantity('Memory limit of each worker and of the chief.', unit='bytes'),
  nodeSelector: params.map('Node labels the workers and the chief must run on (the chart hard-wired jobrole=worker and jobrole=ps).', keys='labelKey', values='labelValue'),
  tolerations: params.object('Tolerations of the workers and of the chief.', 'core/v1.Toleration', list=true),
  gpuResource: params.string('Extended resource that counts GPUs.', default='nvidia.com/gpu', format='extendedResourceName'),
  cpuImage: imageGroup('without', defaultTag, 'ps'),
  gpuImage: imageGroup('with', defaultTag + '-gpu', 'worker-gpu'),
  imagePullPolicy: params.enum('Image pull policy of every container. With the chart\'s values: Always, as the chart had, so that a tag pushed again (:ps, :worker-gpu) is pulled again. Unset: Always for an image tagged :latest or not tagged, else IfNotPresent, as Kubernetes picks it (written out, so the manifest says it).', ['Always', 'IfNotPresent', 'Never']),
  grpcPort: params.int('Port every task serves TensorFlow\'s gRPC on (the chart\'s clusterConfig.port). No hostPort: tasks share nodes.', default=2222, min=1024, max=65535, replaces='clusterConfig.port'),
  exec: params.string('Command every task runs with sh -c instead of the default command (a role\'s exec replaces it). TF_CONFIG, PSHOSTS, WORKERHOSTS, JOBNAME, TASKID, TRAINDIR (and TRAIN_DIR) and BATCHSIZE are in its environment.', format='nonEmpty'),
  script: params.string('Python script of the default command, the chart\'s: python <script> --ps_hosts=$PSHOSTS --worker_hosts=$WORKERHOSTS --job_name=$JOBNAME --task_id=$TASKID --data_dir=<hyperparameters.dataDir> --train_dir=<trainDir> --max_steps=<hyperparameters.maxSteps> --batch_size=<batchSize> <the other hyperparameters> <args> (the chart\'s image had ' + chartScript + ').', default=chartScript, format='nonEmpty'),
  batchSize: params.int('Batch size, passed as --batch_size and BATCHSIZE (the chart\'s clusterConfig.batchSize).', default=32, min=1, replaces='clusterConfig.batchSize'),
  hyperparameters: params.group('Arguments of the default command, each passed when set.', {
    learningRate: params.string('--learning_rate.', format='nonEmpty'),
    maxSteps: params.int('--max_steps: 300, what the chart passed (its train.py ran 1,000,000 steps without it).', default=300, min=1, replaces='hyperparameters.trainSteps'),
    dataDir: params.string('--data_dir: the chart\'s /mnt/data, on the scratch space, where the workers prepare the data first (prepareData).', default='/mnt/data', format='absPath'),
    hiddenUnits: params.string('--hidden_units.', format='nonEmpty'),
  }),
  prepareData: params.bool('Prepare the data before the workers start, as the chart did: with the default command and the chart\'s script, an init container of each worker runs ' + chartPrep + '<hyperparameters.dataDir> (the chart\'s worker image had that script and the zips). worker.init replaces it; false: none.', default=true),
  args: params.list('More arguments at the end of the default command, or (entrypoint) the arguments of the image\'s ENTRYPOINT, one per --args flag.', separator=''),
  entrypoint: params.bool('Every task without an exec of its own (ps.exec, worker.exec, ...) runs its image\'s ENTRYPOINT (with args; else its CMD), as a container without a command runs, instead of exec or the default command: for an image whose ENTRYPOINT is the training program (a TFJob whose containers give only args). TF_CONFIG and the chart\'s variables are in its environment. Nothing wraps it: the tasks that need the parameter servers wait for them in an init container (initTimeout), and only the JobSet controller ends the parameter servers, the evaluator (and, with a chief, the workers) with the lead: those need jobset, or an exec of their own.'),
  scratchDir: params.string('Where every task has node-local scratch space (an emptyDir; the chart mounted the node\'s /mnt there through hostPath).', default='/mnt', format='absPath'),
  initTimeout: params.seconds('How long the workers, the chief and the evaluator wait for every parameter server to accept connections before they fail with exit code 124: 15 minutes, for a parameter server whose node is still being added by an autoscaler or pulling a multi-GB image.', default=900, min=1, max=86400),
  leadTimeout: params.seconds('How long the parameter servers (and the evaluator; with a chief, the workers) wait for the workers (or the chief) to become Ready before they fail with exit code 124. 0, the default: as long as the job runs, as the chart\'s parameter servers did, since GPU node autoscaling, multi-GB image pulls and a long worker.init all take minutes; activeDeadlineSeconds bounds every Job of the job when set.', default=0, min=0, max=86400),
  stopGrace: params.seconds('How long the parameter servers (and the evaluator, and with a chief the workers) wait, once the workers (or the chief) are gone, before they stop: a retried or preempted worker must be back within it. A chief that has ended says so (on grpcPort + 1), and the parameter servers and the workers stop at once; the evaluator still waits, for the last checkpoint.', default=420, min=10, max=86400),
};

local trainDir(p) = storage.dir(p, 'trainDir');

// The lead: the role whose end is the job's end.
local lead(p) = if p.chief.number > 0 then 'chief' else 'worker';
local count(p, r) = p[r].number;

// A role's hosts, <name>-<role>-<i>.<name>:<port> (the chief's and the
// evaluator's are Jobs of one pod, <name>-<role>).
local indexed(r) = r == 'ps' || r == 'worker';
local hostPrefix(p, r) = if indexed(r) then roles.podPrefix(p, r) else roles.podName(p, r);
local hostSuffix(p) = '.' + p.name + ':' + p.grpcPort;
local hostList(p, r, quote) =
  local q = if quote then '"' else '';
  if indexed(r) then ts.indexedList(q + hostPrefix(p, r), hostSuffix(p) + q, ',', 0, count(p, r))
  else if count(p, r) > 0 then q + hostPrefix(p, r) + hostSuffix(p) + q
  else '';

// The cluster (TF_CONFIG's, without the evaluator) by ConfigMap key.
local clusterRoles(p) = (if p.ps.number > 0 then ['ps'] else []) + ['worker'] + (if p.chief.number > 0 then ['chief'] else []);
local configName(p) = p.name + '-cluster';

local config(p) = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: common.metadata(proto, p, configName(p)),
  data: runtime.files + {
    [r + 'hosts']: hostList(p, r, false)
    for r in clusterRoles(p)
  } + {
    [r + '.json']: hostList(p, r, true)
    for r in clusterRoles(p)
  },
};

local execOf(p, r) = if p[r].exec != null then p[r].exec else p.exec;
// entry: whether task r runs its image's ENTRYPOINT, unwrapped.
local entry(p, r) = p.entrypoint && p[r].exec == null;
// neverEnds: whether a task of role r, in a job with a chief or not,
// would never end by itself: it stops once the lead has (the parameter
// servers, the evaluator, a chief's workers). watched: the same of p.
local neverEnds(r, chief) = r == 'ps' || r == 'evaluator' || r == 'worker' && chief;
local watched(p, r) = neverEnds(r, lead(p) == 'chief');
// waits: the parameter servers every other task waits for.
local waitsOf(p, r) = if r == 'ps' then [] else [hostPrefix(p, 'ps') + i + hostSuffix(p) for i in std.range(0, p.ps.number - 1)];

// The env of a task: where it is in the cluster, both as TF_CONFIG and as
// the chart's variables.
local upper = { ps: 'PS', worker: 'WORKER', chief: 'CHIEF' };  // std.asciiUpper works char by char
local clusterEnv(p, r) =
  local fromConfig(name, key) = { name: name, valueFrom: { configMapKeyRef: { name: configName(p), key: key } } };
  [
    if indexed(r) then { name: 'TASKID', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } }
    else { name: 'TASKID', value: '0' },
    { name: 'JOBNAME', value: r },
    if p.ps.number > 0 then fromConfig('PSHOSTS', 'pshosts') else { name: 'PSHOSTS', value: '' },
    fromConfig('WORKERHOSTS', 'workerhosts'),
  ] + (if p.chief.number > 0 then [fromConfig('CHIEFHOSTS', 'chiefhosts')] else [])
  + [fromConfig('TS_CLUSTER_' + upper[x], x + '.json') for x in clusterRoles(p)]
  + [{
    name: 'TF_CONFIG',
    value: '{"cluster":{' + std.join(',', ['"' + x + '":[$(TS_CLUSTER_' + upper[x] + ')]' for x in clusterRoles(p)])
           // environment: as the Kubeflow operator writes it (TensorFlow
           // treats any value but google alike)
           + '},"task":{"type":"' + r + '","index":$(TASKID)},"environment":"cloud"}',
  }]
  + [
    { name: 'TRAIN_DIR', value: trainDir(p) },
    // the chart's names of the two
    { name: 'TRAINDIR', value: trainDir(p) },
    { name: 'BATCHSIZE', value: std.toString(p.batchSize) },
    { name: 'TS_INIT_TIMEOUT', value: std.toString(p.initTimeout) },
    { name: 'TS_WATCH_TIMEOUT', value: std.toString(p.leadTimeout) },
    { name: 'TS_WATCH_GRACE', value: std.toString(p.stopGrace) },
  ] + (if p.chief.number > 0 && !entry(p, 'chief') then runtime.endEnv(roles.presenceName(p, 'chief'), p.ps.number + p.worker.number, p.backoffLimit) else []);

// The default command, the chart's, in its order; Kubernetes puts in
// $(VAR).
local defaultCommand(p) =
  local h = p.hyperparameters;
  ['python', p.script,
   '--ps_hosts=$(PSHOSTS)', '--worker_hosts=$(WORKERHOSTS)', '--job_name=$(JOBNAME)', '--task_id=$(TASKID)',
   '--data_dir=' + h.dataDir, '--train_dir=' + trainDir(p), '--max_steps=' + h.maxSteps, '--batch_size=' + p.batchSize]
  + (if h.learningRate != null then ['--learning_rate=' + h.learningRate] else [])
  + (if h.hiddenUnits != null then ['--hidden_units=' + h.hiddenUnits] else [])
  + p.args;


// A role's init command: its own, or on the workers the chart's data
// preparation before the chart's script.
local prepares(p) = p.prepareData && p.script == chartScript && execOf(p, 'worker') == null && !entry(p, 'worker');
local initOf(p, r) =
  if p[r].init != null then p[r].init
  else if r == 'worker' && prepares(p) then chartPrep + p.hyperparameters.dataDir;

// Every task runs under the lifecycle runtime (lib/assets/runtime.sh):
// the tasks that need the parameter servers wait for them (bounded); the
// ones that would never end by themselves stop once the lead is gone. A
// chief, one pod, says when it is over (its end port, grpcPort + 1), and
// the parameter servers and the workers stop then; the evaluator keeps
// stopGrace for the last checkpoint. Workers that lead are many pods, and
// none of them knows that the others are done: the parameter servers stop
// stopGrace after the last.
// A chief that runs its image's ENTRYPOINT says nothing: its followers
// stop stopGrace after it has gone (in a JobSet, its controller ends them).
local command(p, r) =
  local endPort = if lead(p) == 'chief' && !entry(p, 'chief') then runtime.endPort(p.grpcPort);
  runtime.run(
    if execOf(p, r) != null then ['sh', '-c', execOf(p, r)] else defaultCommand(p),
    waits=waitsOf(p, r),
    watch=if watched(p, r) then roles.presenceName(p, lead(p)),
    tellEnd=if r == 'chief' then endPort,
    hearEnd=if watched(p, r) && r != 'evaluator' then endPort,
  );

// initCommand: a task's init command (initOf), and before the image's
// ENTRYPOINT (nothing wraps it) the wait for the parameter servers too.
local initCommand(p, r) =
  local init = if initOf(p, r) != null then ['sh', '-c', initOf(p, r)];
  if entry(p, r) && waitsOf(p, r) != [] then runtime.run(if init != null then init else ['true'], waits=waitsOf(p, r))
  else init;

// A role's effective scheduling: its own, or (workers and chief) the
// top-level ones.
local shares(r) = r == 'worker' || r == 'chief';
local chartJob(r) = r == 'ps' || r == 'worker';
local gpuOf(p, r) =
  if p[r].gpu != null then p[r].gpu
  else if shares(r) && p.gpu != null then p.gpu
  else if chartJob(r) && p[r].isGPU == true then 1
  else 0;
// (maps and lists count as set when not empty: std.length, not a
// comparison with {}, which walks both objects)
local orShared(p, r, k, none) =
  local own = p[r][k];
  if own != null && (std.isString(own) || std.isNumber(own) || std.length(own) > 0) then own else if shares(r) then p[k] else none;

local imageOf(p, r) =
  local block = if chartJob(r) && p[r].imageBlock != null then p[r].imageBlock else if gpuOf(p, r) > 0 then 'gpuImage' else 'cpuImage';
  local img = p[block];
  if p[r].image != null then p[r].image
  else img.repository + (if img.name != null then '/' + img.name else '') + ':' + img.tag;


// role r; store is the storage's {volumes, mounts}, the same in every task.
local role(p, r, store) =
  {
    name: r,
    kind: if indexed(r) then 'IndexedJob' else 'Job',
    count: count(p, r),
    lead: r == lead(p),
    image: imageOf(p, r),
    imagePullPolicy: p.imagePullPolicy,
    command: if !entry(p, r) then command(p, r),
    args: if entry(p, r) && p.args != [] then [kubeflow.kubelet(a) for a in p.args],
    env: clusterEnv(p, r) + common.env(p.env + p[r].env),
    ports: if r == 'evaluator' then [] else [{ name: 'grpc', port: p.grpcPort }],
    resources: roles.resources(cpu=orShared(p, r, 'cpu', null), memory=orShared(p, r, 'memory', null), gpu=gpuOf(p, r), gpuResource=p.gpuResource),
    nodeSelector: orShared(p, r, 'nodeSelector', {}),
    tolerations: orShared(p, r, 'tolerations', []),
    volumes: [runtime.volume(configName(p)), roles.scratch(p.scratchDir).volume] + store.volumes,
    mounts: [runtime.mount, roles.scratch(p.scratchDir).mount] + store.mounts,
    initCommand: initCommand(p, r),
  };

local rolesOf(p) =
  local store = storage.pod(p, 'train', [trainDir(p)]);
  [role(p, r, store) for r in roleNames if count(p, r) > 0];

// ---- A TFJob (kubeflow.org/v1) as the parameters (from) ---------------

// The TFJob's replica types, as these roles.
local tfRoles = { Chief: 'chief', Master: 'chief', PS: 'ps', Worker: 'worker', Evaluator: 'evaluator' };

local fromTFJob(o) =
  local at = 'spec.tfReplicaSpecs';
  local spec = std.get(o, 'spec', {});
  local rs = std.get(spec, 'tfReplicaSpecs', {});
  local types = [t for t in std.objectFields(rs) if std.objectHas(tfRoles, t)];
  local pod(t) = kubeflow.pod(rs[t], 'tensorflow', at + '.' + t);
  local c(t) = kubeflow.container(std.get(std.get(rs[t], 'template', {}), 'spec', {}), 'tensorflow');
  local cAt(t) = at + '.' + t + '.template.spec.containers[' + std.get(c(t), 'name', '0') + ']';
  local words(t) = if c(t) == null then [] else kubeflow.words(c(t));
  local hasCommand(t) = c(t) != null && std.get(c(t), 'command') != null;
  // what every task shares: the first role's (the lead's when there is one)
  local first = if std.objectHas(rs, 'Chief') then 'Chief' else if std.objectHas(rs, 'Master') then 'Master' else if std.objectHas(rs, 'Worker') then 'Worker' else if types != [] then types[0] else null;
  local sharedOf(t) = { [k]: pod(t).params[k] for k in std.objectFields(pod(t).params) if !std.member(['image', 'gpu', 'cpu', 'memory', 'nodeSelector', 'tolerations', 'env'], k) };
  local shared = if first == null then {} else sharedOf(first);
  local execs = std.set([kubeflow.shell(words(t)) for t in types if hasCommand(t)]);
  // the tasks without a command run their image's ENTRYPOINT with their
  // args (entrypoint), the others their command (as their role's exec);
  // those that would never end by themselves need the JobSet controller
  local entries = [t for t in types if !hasCommand(t)];
  local argsOf(t) = std.get(c(t), 'args', []);
  local chief = std.objectHas(rs, 'Chief') || std.objectHas(rs, 'Master');
  local unended = [t for t in entries if neverEnds(tfRoles[t], chief)];
  local run = kubeflow.runPolicy(o);
  local backoff = std.get(std.get(spec, 'runPolicy', {}), 'backoffLimit');
  local restarts = std.set([std.get(rs[t], 'restartPolicy', 'Never') for t in types]);
  local successPolicy = std.get(spec, 'successPolicy', '');
  local port = std.join([], [[x.containerPort for x in std.get(c(t), 'ports', []) if std.get(x, 'name') == 'tfjob-port'] for t in types]);
  {
    fields: (if first == null then {} else pod(first).fields) + kubeflow.meta(o).fields + run.fields + {
      [r]: std.join(', ', [at + '.' + t for t in types if tfRoles[t] == r])
      for r in std.set([tfRoles[t] for t in types])
    } + {
      exec: at,
      grpcPort: at,
      entrypoint: at,
      args: at,
      jobset: at,
    },
    params: kubeflow.meta(o).params + run.params + shared + {
      // every role the TFJob has, and none it has not
      ps: { number: 0 },
      chief: { number: 0 },
      evaluator: { number: 0 },
    } + {
      [tfRoles[t]]: { number: kubeflow.replicas(rs[t]) } + {
        [k]: pod(t).params[k]
        for k in ['image', 'gpu', 'cpu', 'memory', 'nodeSelector', 'tolerations', 'env']
        if std.objectHas(pod(t).params, k)
      } + (if hasCommand(t) && (std.length(execs) > 1 || entries != []) then { exec: kubeflow.shell(words(t)) } else {})
      for t in types
    } + {
      [if std.length(execs) == 1 && entries == [] then 'exec']: execs[0],
      [if entries != [] then 'entrypoint']: true,
      [if entries != [] && argsOf(entries[0]) != [] then 'args']: argsOf(entries[0]),
      [if unended != [] then 'jobset']: true,
      [if port != [] then 'grpcPort']: port[0],
      [if first != null && std.objectHas(pod(first).params, 'gpuResource') then 'gpuResource']: pod(first).params.gpuResource,
      // OnFailure and ExitCode restarted without limit; Never did not
      backoffLimit: if backoff != null then std.min(backoff, 100) else if restarts == ['Never'] then 0 else 6,
    },
    warnings: std.join([], [pod(t).warnings for t in types]) + run.warnings + kubeflow.meta(o).warnings + [
      at + '.' + t + '.template.spec: ' + k + ' differs from ' + first + '\'s: every task takes ' + first + '\'s'
      for t in types
      for k in std.objectFields(sharedOf(t) + shared)
      if std.get(sharedOf(t), k) != std.get(shared, k)
    ] + [
      if backoff == null && restarts != ['Never'] then
        at + ' restartPolicy ' + std.join('/', restarts) + ' and no runPolicy.backoffLimit: the operator restarted failed tasks without limit; here the job is retried 6 times (backoffLimit), disruptions not counted: set backoffLimit to change it',
      if backoff != null then
        'spec.runPolicy.backoffLimit ' + backoff + ': the operator counted every task\'s restarts together; here the lead\'s pod is retried ' + std.min(backoff, 100) + ' times, and a lost task of another role is replaced as often',
      if std.member(restarts, 'ExitCode') then
        at + ' restartPolicy ExitCode: the operator failed the job on exit codes 1-127 and restarted on the others; here every failure is retried, backoffLimit times',
      if successPolicy == 'AllWorkers' then
        'spec.successPolicy AllWorkers: the job ends when ' + (if std.objectHas(rs, 'Chief') || std.objectHas(rs, 'Master') then 'the chief ends' else 'every worker has ended') + ', the parameter servers then stop',
      if std.objectHas(rs, 'Master') then
        at + '.Master: the chief (TensorFlow\'s name for it since 1.x); TF_CONFIG names it chief',
      if std.objectHas(spec, 'enableDynamicWorker') then 'spec.enableDynamicWorker: not carried: the workers are a fixed set',
      if unended != [] then
        at + '.' + std.join(', ', unended) + ': no command: the image\'s ENTRYPOINT runs as it is, unwrapped, and nothing but the JobSet controller ends ' + (if std.length(unended) == 1 then 'it' else 'them') + ' with the ' + (if chief then 'chief' else 'workers') + ': rendered as a JobSet (jobset), which needs the JobSet controller; for plain Jobs give ' + std.join(' and ', [tfRoles[t] + '.exec' for t in unended]) + ' the command the image runs',
    ] + [
      at + '.' + r + ': not carried: a TFJob has Chief, PS, Worker and Evaluator'
      for r in std.objectFields(rs)
      if !std.objectHas(tfRoles, r)
    ] + [
      'spec.' + k + ': not carried'
      for k in std.objectFields(spec)
      if !std.member(['tfReplicaSpecs', 'runPolicy', 'successPolicy', 'enableDynamicWorker'], k)
    ],
    errors: [
      kubeflow.refuse(std.objectHas(rs, 'Worker') && kubeflow.replicas(rs.Worker) > 0, at + '.Worker', 'none: tf-distributed needs workers'),
      kubeflow.refuse(!(std.objectHas(rs, 'Chief') && std.objectHas(rs, 'Master')), at + '.Master', 'beside Chief: a TFJob has one chief'),
    ] + [
      kubeflow.refuse(kubeflow.replicas(rs[t]) <= 1, at + '.' + t + '.replicas', 'at most 1: TensorFlow has one ' + tfRoles[t])
      for t in types
      if tfRoles[t] == 'chief' || tfRoles[t] == 'evaluator'
    ] + [
      // the tasks that run their image's ENTRYPOINT share args (the
      // TFJob gives args itself: a field's problem, not a parameter's)
      kubeflow.refuse(t == entries[0] || argsOf(t) == argsOf(entries[0]), cAt(t) + '.args',
                      kubeflow.shell(argsOf(t)) + ' differs from ' + entries[0] + '\'s (' + kubeflow.shell(argsOf(entries[0])) + '): every task that runs its image\'s ENTRYPOINT takes the same args here; give the others a command (their role\'s exec)')
      for t in entries
    ],
  };

ts.prototype({
  name: proto,
  summary: 'Distributed TensorFlow with parameter servers that stop when training ends (replaces the distributed TensorFlow charts\' distrib-tensorflow chart)',
  replaces: 'the distrib-tensorflow chart of the distributed TensorFlow charts (CatalystCode/autonomous-vehicle-control-development, 2017)',
  // Its values files' spellings ("" for unset, quoted numbers, 2GB, {}), taken with a warning.
  spellings: ts.params.chartSpellings,
  description: |||
    Parameter servers (ps), workers, and optionally a chief and an evaluator, each an
    Indexed Job (ps, workers) or a Job of one pod (chief, evaluator), found by stable DNS
    names through the job's headless Service: <name>-ps-<i>.<name>:<grpcPort>,
    <name>-worker-<i>.<name>:<grpcPort>, <name>-chief.<name>:<grpcPort>.

    Every task gets the cluster two ways. TF_CONFIG, as TensorFlow reads it:
    {"cluster": {"ps": [...], "worker": [...], "chief": [...]}, "task": {"type": <role>,
    "index": <i>}, "environment": "cloud"}, as the Kubeflow training operator writes it, the
    evaluator left out of the cluster as TensorFlow wants. And the
    chart's variables: PSHOSTS and WORKERHOSTS (host:port lists, the chart's cluster-map,
    here the ConfigMap <name>-cluster), JOBNAME (ps, worker, chief, evaluator), TASKID
    (the pod's completion index), TRAINDIR and BATCHSIZE. The default command is the
    chart's: python <script> --ps_hosts=$PSHOSTS --worker_hosts=$WORKERHOSTS
    --job_name=$JOBNAME --task_id=$TASKID --data_dir=/mnt/data --train_dir=<trainDir>
    --max_steps=300 --batch_size=<batchSize>, then the other hyperparameters that are set
    and args; before it, each worker prepares the data into /mnt/data with the chart's
    prepare_cars_data.sh (prepareData). exec (or a role's exec) replaces the command.

    The job ends by itself, with no operator and no RBAC. The lead is the chief when there
    is one, else the workers: the job's end is the lead Job's. The workers, the chief and
    the evaluator wait (at most initTimeout) until every parameter server accepts
    connections. The parameter servers and the evaluator (with a chief, the workers too)
    wait for the lead to become Ready (without a bound by default, as the chart's did:
    leadTimeout), watch its ready-only Service <name>-<lead>, and once it has been gone for
    stopGrace they stop and exit 0: the chart's parameter servers ran until helm delete. A
    chief that has ended says so on its end port (grpcPort + 1; the chief's retry, with
    backoffLimit, only after a success), and the parameter servers and the workers stop at
    once, without stopGrace. A
    failing worker fails the worker Job (backoffLimit retries), whose other pods the Job
    controller then stops, and the rest follow. Disruptions do not count as failures.

    Checkpoints go to trainDir on the shared storage (storage.*: an existing claim, NFS, or
    an Azure Files share through the CSI driver), which eval and tensorboard read with the
    same params file. Every task has node-local scratch space at scratchDir (/mnt, where the
    chart mounted the node's), where a role's init command can prepare data first.

    The chart's values work as a params file (-f): clusterConfig.port, clusterConfig.batchSize
    and clusterConfig.jobs.*.{num, isGPU, image} are read with a warning naming the new key
    (isGPU: true gives the role one GPU, image names the image block it runs), cpuImage and
    gpuImage keep their shape, traindir and storage.* are the shared storage's; with them,
    the images are pulled Always, as the chart's were. What changed:
    no hostPort (the chart's forced one task per node); node selectors per role instead of the
    chart's jobrole node labels; GPUs are nvidia.com/gpu (gpu, worker.gpu), not
    alpha.kubernetes.io/nvidia-gpu with the driver mounted from the node; nothing is
    privileged and the tasks run as user 1000; object names start with name, so two jobs
    share a namespace (the chart's cluster-map and ps-0 collided).
  |||,

  from: { 'kubeflow.org/v1/TFJob': fromTFJob },
  params: params_ + {
    runAsUser+: {
      default: 1000,
      doc: 'User id every task runs as: 1000 by default, so the tasks run without root (Pod Security restricted); it must be able to write trainDir on the storage. 0 runs them as root. The user need not exist in the image.',
    },
    runAsGroup+: { default: 1000 },
  },

  removed: tf.removed(proto, params_),

  // The chart's values.yaml, or the values.override.yaml the three charts
  // shared, in use.
  chart: {
    name: 'the distrib-tensorflow chart',
    keys: tf.chartKeys,
    defaults: {
      imagePullPolicy: { value: 'Always', why: 'its Jobs pulled every image again, so that a tag pushed again (:ps, :worker-gpu) ran' },
    },
    notes: [
      'the tasks are <name>-ps-<i>.<name> and <name>-worker-<i>.<name> (PSHOSTS, WORKERHOSTS and TF_CONFIG list them), not the chart\'s ps-<i> and worker-<i>, which collided between two jobs in a namespace',
      'no hostPort ' + '(the chart\'s forced one task per node) and no jobrole node selector: to keep the chart\'s pools, set ps.nodeSelector: {jobrole: ps} and nodeSelector: {jobrole: worker}',
      'GPUs come from the device plugin (' + 'nvidia.com/gpu), without the chart\'s driver 384 hostPaths and LD_LIBRARY_PATH; nothing is privileged, and the tasks run as user 1000 (runAsUser: 0 runs them as root)',
      'the parameter servers stop by themselves stopGrace after the workers end (the chart\'s ran until helm delete)',
    ],
  },

  validate(p)::
    local unended = [r for r in roleNames if count(p, r) > 0 && entry(p, r) && watched(p, r)];
    storage.validate(p, ['trainDir']) + [
    ts.check(unended == [] || batch.jobset(p), 'entrypoint',
             'the ' + std.join(', ', [longName[r] for r in unended]) + ' would run the image\'s ENTRYPOINT, which nothing but the JobSet controller ends once the ' + lead(p) + (if lead(p) == 'worker' then 's are' else ' is') + ' done: set jobset, or ' + std.join(' and ', [r + '.exec' for r in unended]) + ' (run under trainsonnet\'s runtime)'),
    // the longest names: the last worker's (or a parameter server's)
    roles.nameFits(p, [{ name: 'worker', kind: 'IndexedJob', count: p.worker.number }, { name: 'ps', kind: 'IndexedJob', count: p.ps.number }]
                      + [{ name: r } for r in ['chief', 'evaluator'] if count(p, r) > 0]),
  ],

  warnings(p):: storage.warnings(p, 'train', [trainDir(p)]) + [
    // the chart's command trains with parameter servers
    if p.ps.number == 0 && std.length([r for r in roleNames if count(p, r) > 0 && execOf(p, r) == null && !entry(p, r)]) > 0 then
      'ps.number 0: the default command, the chart\'s, trains with parameter servers (--ps_hosts is empty): set exec (or each role\'s exec) to a command of your own, such as a MultiWorkerMirroredStrategy script',
    roles.shWarning('exec', p.exec),
  ] + [
    roles.shWarning(r + '.exec', p[r].exec)
    for r in roleNames
    if p[r].exec != null
  ] + [
    if p.args != [] && std.length([r for r in roleNames if count(p, r) > 0 && (execOf(p, r) == null || entry(p, r))]) == 0 then
      'args is not used: every task runs an exec',
    if p.entrypoint && p.exec != null && [r for r in roleNames if count(p, r) > 0 && entry(p, r)] != [] then
      'exec is not run: the tasks without an exec of their own run their image\'s ENTRYPOINT (entrypoint)',
    if p.entrypoint && entry(p, 'chief') && count(p, 'chief') > 0 && !batch.jobset(p) then
      'the chief runs its image\'s ENTRYPOINT and says nothing when it ends: the tasks that follow it stop stopGrace (' + p.stopGrace + 's) after it has gone; with jobset the JobSet controller ends them with it',
    if p.entrypoint && p.cpuImage.repository == 'tensorflow' && p.gpuImage.repository == 'tensorflow'
       && std.length([r for r in roleNames if count(p, r) > 0 && entry(p, r) && p[r].image == null]) > 0 then
      'entrypoint: the default images (tensorflow/tensorflow) run no training program as their ENTRYPOINT: set cpuImage and gpuImage (or a role\'s image) to your training image',
    if !p.entrypoint && p.exec == null && p.script == chartScript && p.cpuImage.repository == 'tensorflow' && p.gpuImage.repository == 'tensorflow'
       && std.length([r for r in roleNames if count(p, r) > 0 && p[r].exec == null && p[r].image == null]) > 0 then
      'the default images (tensorflow/tensorflow) have no ' + chartScript + (if prepares(p) && p.worker.init == null then ' and no /src/prepare_cars_data.sh' else '')
      + ': set cpuImage and gpuImage (or a role\'s image) to your training image (the chart\'s were <registry>/distrib-tensorflow-cars:ps and :worker-gpu), or set exec',
  ],

  render(p):: [
    common.networkPolicy(proto, p),
    storage.secret(proto, p, 'train'),
    config(p),
  ] + roles.objects(proto, p, rolesOf(p)),
})
