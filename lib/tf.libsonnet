// tf: one params file for the three TensorFlow prototypes.
//
// Needs:    the prototype's declarations (removed reads them). Declares:
//           no parameter (the storage keys of the TensorFlow charts are
//           storage.params(..., tfCharts=true)). Returns: removed(proto,
//           decls, own), the prototype's removed map; chartKeys, keys;
//           chartPrep, the charts' data preparation command (its
//           directory after it).
//
// The distributed TensorFlow charts (seed 002) shared one
// values.override.yaml, and their users kept one file per environment for
// all three. tf-distributed, eval and tensorboard take such a file too: a
// key that one of them declares (or still takes under the charts' name) is
// accepted by the other two, which ignore it with a warning, instead of
// refusing it as unknown. keys lists every such top-level key with the
// prototypes that use it; a prototype passes its own declarations, and gets
// the keys it must accept without using as its `removed` map.
//
// A key that one of the three adds must be listed here; the golden tests
// render each prototype's full defaults with the other two, which fails
// when one is missing.

local all = 'one params file can feed tf-distributed, eval and tensorboard';

// key -> the prototypes that use it, or a text for a key none of them uses.
local keys = {
  // the distrib-tensorflow chart's
  clusterConfig: ['tf-distributed'],
  cpuImage: ['tf-distributed'],
  gpuImage: ['tf-distributed'],
  trainDir: ['eval', 'tf-distributed'],
  traindir: ['eval', 'tf-distributed'],
  ps: ['tf-distributed'],
  worker: ['tf-distributed'],
  chief: ['tf-distributed'],
  evaluator: ['tf-distributed'],
  grpcPort: ['tf-distributed'],
  batchSize: ['tf-distributed'],
  hyperparameters: ['tf-distributed'],
  scratchDir: ['eval', 'tf-distributed'],
  prepareData: ['eval', 'tf-distributed'],
  initTimeout: ['tf-distributed'],
  leadTimeout: ['tf-distributed'],
  stopGrace: ['tf-distributed'],
  // Jobs
  activeDeadlineSeconds: ['eval', 'tf-distributed'],
  backoffLimit: ['eval', 'tf-distributed'],
  ttlSecondsAfterFinished: ['eval', 'tf-distributed'],
  // the eval-tensorflow chart's
  image: ['eval'],
  evalDir: ['eval'],
  evaldir: ['eval'],
  dataDir: ['eval'],
  init: ['eval'],
  script: ['eval', 'tf-distributed'],
  args: ['eval', 'tf-distributed'],
  entrypoint: ['tf-distributed'],
  port: 'the eval-tensorflow chart\'s containerPort, which nothing used',
  // the tensorboard chart's (and Kubeflow's tensorboard prototype's)
  logDir: ['tensorboard'],
  logdir: ['tensorboard'],
  targetPort: ['tensorboard'],
  tensorboardport: ['tensorboard'],
  servicePort: ['tensorboard'],
  serviceType: ['tensorboard'],
  tensorboardImage: ['tensorboard'],
  defaultTbImage: ['tensorboard'],
  imagePullPolicy: ['tensorboard', 'tf-distributed'],
  uiFrom: ['tensorboard'],
  s3: ['tensorboard'],
  gcs: ['tensorboard'],
};

local users(list) =
  if std.length(list) == 1 then list[0]
  else std.join(', ', list[:std.length(list) - 1]) + ' and ' + list[std.length(list) - 1];

{
  keys:: keys,

  // chartPrep: the charts' data preparation (their images' script), to
  // which the prototype adds the directory it prepares.
  chartPrep:: 'bash /src/prepare_cars_data.sh /src/images/Car.zip /src/images/NoCar.zip ',

  // chartKeys: the keys of the charts' values files that none of the
  // three declares under that name (their spellings of storage and the
  // directories, the distrib-tensorflow chart's clusterConfig, the
  // eval-tensorflow chart's port): a params file or --set that gives one
  // is a values file of the charts (chart in ts.prototype).
  chartKeys:: ['clusterConfig', 'traindir', 'evaldir', 'logdir', 'tensorboardport', 'port', 'storage.sharename', 'storage.accountbase64', 'storage.keybase64'],

  // removed(proto, decls, own): the removed map of prototype proto, whose
  // top-level declarations are decls: every key of the others it neither
  // declares nor takes under an old name, then own (its own removed keys).
  removed(proto, decls, own={})::
    local replaced(d) =
      (if std.objectHas(d, 'replaces') then [d.replaces] else [])
      + (if std.objectHas(d, 'params') then std.join([], [replaced(d.params[k]) for k in std.objectFields(d.params)]) else []);
    local oldNames = std.join([], [replaced(decls[k]) for k in std.objectFields(decls)]);
    // a key is taken when declared, or read under an old name (of its own,
    // or of a key inside it: clusterConfig.port)
    local taken(k) = std.objectHas(decls, k) || std.length([o for o in oldNames if o == k || std.startsWith(o, k + '.')]) > 0;
    {
      [k]:
        local u = keys[k];
        if std.isString(u) then u + '; ' + proto + ' ignores it (' + all + ')'
        else if std.member(u, proto) then error 'lib/tf.libsonnet lists ' + k + ' for ' + proto + ', which does not declare it'
        else 'a key of ' + users(u) + ', which ' + proto + ' ignores (' + all + ')'
      for k in std.objectFields(keys)
      if !taken(k)
    } + own,
}
