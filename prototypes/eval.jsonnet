// eval: one Job that evaluates the checkpoints of a training job. Replaces
// the eval-tensorflow chart of the distributed TensorFlow charts (seed 002).

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local roles = import 'roles.libsonnet';
local storage = import 'storage.libsonnet';
local tf = import 'tf.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local params = ts.params;
local proto = 'eval';
local component = 'eval';

// TensorFlow's own images, pinned; the -gpu one has CUDA.
local defaultRepository = 'tensorflow/tensorflow';
local defaultTag = '2.18.0';
// Where the chart's image had its evaluation script, and how it prepared
// the data first.
local chartScript = '/src/python/eval.py';
local chartPrep = tf.chartPrep;

local roleParams = roles.params(
  'the evaluator',
  exec='Command the evaluator runs with sh -c instead of python <script> --eval_dir=<evalDir> --checkpoint_dir=<trainDir> --data_dir=<dataDir> <args>; $EVALDIR and $TRAINDIR (also $EVAL_DIR and $TRAIN_DIR) hold the two directories. The Job ends with its exit code.',
);

local params_ = common.params('train') + batch.params('the evaluator') + storage.params(['trainDir', 'evalDir'], tfCharts=true) + roleParams + {
  runAsUser+: {
    default: 1000,
    doc: 'User id the evaluator runs as: 1000 by default, so it runs without root (Pod Security restricted); it must be able to write evalDir on the storage. 0 runs it as root. The user need not exist in the image.',
  },
  runAsGroup+: { default: 1000 },
  gpu+: { default: null, doc: 'GPUs of the evaluator (a limit of gpuResource). Unset: none, or one with the chart\'s values, as the chart gave it.' },
  image: params.group('Image of the evaluator, in the eval-tensorflow chart\'s shape: <repository>/<name>:<tag>, or <repository>:<tag> without name.', {
    repository: params.string('Image repository (the chart\'s was the registry, <REPO NAME>).', default=defaultRepository, format='imageRepository'),
    name: params.string('Image name under repository (the chart\'s distrib-tensorflow-cars). Unset: repository is the whole name.', format='imageRepository'),
    tag: params.string('Image tag (the chart\'s worker-gpu). Unset: ' + defaultTag + ', or ' + defaultTag + '-gpu with gpu (TensorFlow\'s images).', format='imageTag'),
    pullPolicy: params.enum('Image pull policy. Unset: Always for an image tagged :latest or not tagged, else IfNotPresent, as Kubernetes picks it (written out, so the manifest says it).', ['Always', 'IfNotPresent', 'Never']),
  }),
  gpuResource: params.string('Extended resource that counts GPUs.', default='nvidia.com/gpu', format='extendedResourceName'),
  script: params.string('Python script the evaluator runs as python <script> --eval_dir=<evalDir> --checkpoint_dir=<trainDir> --data_dir=<dataDir> <args>, the chart\'s command line (its image had ' + chartScript + '). Not used with exec.', default=chartScript, format='nonEmpty'),
  args: params.list('More arguments at the end of the default command, one per --args flag. Not used with exec.', separator=''),
  dataDir: params.string('--data_dir of the default command: the chart\'s /mnt/data, on the scratch space, where the evaluator prepares the data first (prepareData).', default='/mnt/data', format='absPath'),
  scratchDir: params.string('Where the evaluator has node-local scratch space (an emptyDir; the chart mounted the node\'s /mnt there through hostPath).', default='/mnt', format='absPath'),
  init: params.string('Command run with sh -c before the evaluator starts, in an init container with the same image, environment and volumes: to prepare data into scratchDir. Unset: the chart\'s data preparation when prepareData says so.', format='nonEmpty'),
  prepareData: params.bool('Prepare the data first, as the chart did: with the default command and the chart\'s script, an init container runs ' + chartPrep + '<dataDir> (the chart\'s image had that script and the zips). init replaces it; false: none.', default=true),
};

local trainDir(p) = storage.dir(p, 'trainDir');
local evalDir(p) = storage.dir(p, 'evalDir');

local gpuOf(p) = if p.gpu != null then p.gpu else 0;
local imageOf(p) =
  local tag = if p.image.tag != null then p.image.tag else if gpuOf(p) > 0 then defaultTag + '-gpu' else defaultTag;
  p.image.repository + (if p.image.name != null then '/' + p.image.name else '') + ':' + tag;

local ownEnv(p) = [
  { name: 'TRAIN_DIR', value: trainDir(p) },
  { name: 'EVAL_DIR', value: evalDir(p) },
  // the chart's names of the two
  { name: 'TRAINDIR', value: trainDir(p) },
  { name: 'EVALDIR', value: evalDir(p) },
];

local initOf(p) =
  if p.init != null then p.init
  else if p.prepareData && p.exec == null && p.script == chartScript then chartPrep + p.dataDir;


local role(p) =
  local store = storage.pod(p, component, [trainDir(p), evalDir(p)]);
  {
    name: component,
    kind: 'Job',
    dns: false,
    lead: true,
    image: imageOf(p),
    imagePullPolicy: p.image.pullPolicy,
    command: if p.exec != null then ['sh', '-c', p.exec]
    else ['python', p.script, '--eval_dir=' + evalDir(p), '--checkpoint_dir=' + trainDir(p), '--data_dir=' + p.dataDir] + p.args,
    initCommand: if initOf(p) != null then ['sh', '-c', initOf(p)],
    env: ownEnv(p) + common.env(p.env),
    resources: roles.resources(cpu=p.cpu, memory=p.memory, gpu=gpuOf(p), gpuResource=p.gpuResource),
    nodeSelector: p.nodeSelector,
    tolerations: p.tolerations,
    volumes: [roles.scratch(p.scratchDir).volume] + store.volumes,
    mounts: [roles.scratch(p.scratchDir).mount] + store.mounts,
  };

ts.prototype({
  name: proto,
  summary: 'One Job that evaluates a training job\'s checkpoints (replaces the distributed TensorFlow charts\' eval-tensorflow chart)',
  replaces: 'the eval-tensorflow chart of the distributed TensorFlow charts (CatalystCode/autonomous-vehicle-control-development, 2017)',
  // Its values files' spellings ("" for unset, quoted numbers, 2GB, {}), taken with a warning.
  spellings: ts.params.chartSpellings,
  description: |||
    One Job, <name>-eval, that evaluates the checkpoints in trainDir and writes its results to
    evalDir, both on the shared storage (storage.*: an existing claim, NFS, or an Azure Files
    share through the CSI driver) or a volumeMount. It runs the chart's command line,
    `python <script> --checkpoint_dir=<trainDir> --eval_dir=<evalDir> <args>`, or exec with
    sh -c; either way TRAIN_DIR and EVAL_DIR hold the directories. The Job ends with the
    command's exit code.

    The chart's values work as a params file (-f): image.repository, image.name and
    image.tag in its shape, storage.sharename, storage.accountbase64 and storage.keybase64
    (now storage.azure.*), traindir and evaldir; so does the values.override.yaml the three
    charts shared, with the keys only tf-distributed and tensorboard use ignored with a
    warning. What changed: GPUs are nvidia.com/gpu through the device plugin (gpu), not
    alpha.kubernetes.io/nvidia-gpu with the driver mounted from the node; the node pool is
    nodeSelector (the chart hard-wired jobrole=worker); nothing is privileged, and the
    evaluator runs as user 1000, not root. Objects are named after name, so evaluations of
    several jobs share a namespace.
  |||,

  params: params_,

  removed: tf.removed(proto, params_, {
    port: 'the evaluator serves nothing (the chart\'s containerPort was never used)',
  }),

  // The chart's values.yaml, or the values.override.yaml the three charts
  // shared, in use.
  chart: {
    name: 'the eval-tensorflow chart',
    keys: tf.chartKeys,
    defaults: {
      gpu: { value: 1, why: 'it gave the evaluator one GPU, on the GPU pool' },
    },
    notes: [
      'no jobrole node selector: to keep the chart\'s GPU pool, set nodeSelector: {jobrole: worker}',
      'GPUs come from the device plugin (' + 'nvidia.com/gpu), without the chart\'s driver 384 hostPaths and LD_LIBRARY_PATH; nothing is privileged, and the evaluator runs as user 1000 (runAsUser: 0 runs it as root)',
    ],
  },

  validate(p):: storage.validate(p, ['trainDir', 'evalDir']) + [
    roles.nameFits(p, [role(p)]),
  ],

  warnings(p):: storage.warnings(p, component, [trainDir(p), evalDir(p)]) + [
    if p.exec != null && p.args != [] then 'args is not used with exec: put the arguments into exec',
    if p.exec == null && p.script == chartScript && p.image.repository == defaultRepository && p.image.name == null then
      'the default image (' + imageOf(p) + ') has no ' + chartScript + (if initOf(p) != null && p.init == null then ' and no /src/prepare_cars_data.sh' else '')
      + ': set image to your evaluation image (the chart\'s was <registry>/distrib-tensorflow-cars:worker-gpu) or set exec',
    if p.gpu == null && p.image.tag != null && ts.contains(p.image.tag, 'gpu') then
      'image ' + imageOf(p) + ' looks like a GPU image (the chart ran its :worker-gpu with one GPU), but gpu is unset: the evaluator gets no GPU; set gpu: 1, or gpu: 0 to say so',
    roles.shWarning('exec', p.exec),
  ],

  render(p):: [
    common.networkPolicy(proto, p, [], p.name + '-' + component),
    storage.secret(proto, p, component),
  ] + roles.objects(proto, p, [role(p)]),
})
