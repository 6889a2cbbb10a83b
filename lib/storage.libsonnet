// storage: shared storage, one store for a job's checkpoints, evaluation
// results and logs, declared once here and mounted at the same path in
// every pod that uses it, so the trainer writes where the evaluator and
// TensorBoard read. It replaces the Azure Files share of the distributed
// TensorFlow charts (seed 002), whose values.override.yaml fed all three
// charts.
//
// Needs:    p with common.params (name, volumeMounts) and storage.params.
// Declares: storage.params(dirNames, tfCharts) — the group storage
//           (mountPath, claim.name, nfs.server, nfs.path, azure.shareName,
//           azure.secret, azure.accountBase64, azure.keyBase64) and the
//           directories of dirNames among trainDir, evalDir, logDir and
//           storeDir (owned by storage.params). tfCharts=true also takes
//           the TensorFlow charts' keys (traindir, evaldir, logdir,
//           storage.sharename, storage.accountbase64, storage.keybase64),
//           for the prototypes that replace those charts; the others leave
//           them out of their schema.
// Returns:  dir(p, name) a directory, given or by default under the
//           mount; pod(p, component, paths, readOnly) {volumes, mounts} of
//           a pod; secret(proto, p, component) the Secret made from the
//           base64 credentials, or null; validate(p, dirNames) its rules
//           (ts.check lists); warnings(p, component, paths).
//
//   local storage = import 'storage.libsonnet';
//   params: storage.params(['trainDir', 'evalDir'])  // the group and the dirs the prototype uses
//   storage.pod(p, component, [paths], readOnly)      // {volumes, mounts} of a pod
//   storage.secret(proto, p, component)               // the generated credentials Secret, or null
//   storage.validate(p, ['trainDir'])                 // its rules (ts.check lists)
//   storage.warnings(p, component, [paths])
//
// The store is one of: an existing PersistentVolumeClaim, an NFS export, an
// Azure Files share through the CSI driver (file.csi.azure.com; the in-tree
// azureFile volume the charts used is gone from Kubernetes), or none (an
// emptyDir that lives and dies with the pod).

local common = import 'common.libsonnet';
local params = import 'params.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local volumeName = 'trainsonnet-storage';
local defaultMount = '/storage';
local azureDriver = 'file.csi.azure.com';

// Where each directory is when it is not given: under the mount path.
// TensorBoard reads where training writes its summaries by default.
local defaultDirs = { trainDir: 'train', evalDir: 'eval', logDir: 'train', storeDir: 'store' };

// The declarations; tf: with the TensorFlow charts' keys (replaces) and
// their names in the docs.
local dirs(tf) =
  local chart(text) = if tf then text else '';
  local old(key) = if tf then key;
  {
    trainDir: params.string(
      'Directory of the checkpoints' + chart(' (the charts\' traindir)') + ': under storage.mountPath or a volumeMount, so that every pod sees the same files. Unset: <storage.mountPath>/train.',
      format='absPath', replaces=old('traindir')
    ),
    evalDir: params.string(
      'Directory the evaluation writes its results and summaries to' + chart(' (the charts\' evaldir)') + ': under storage.mountPath or a volumeMount. Unset: <storage.mountPath>/eval.',
      format='absPath', replaces=old('evaldir')
    ),
    logDir: params.string(
      'Directory TensorBoard reads' + chart(' (the charts\' logdir, Kubeflow\'s logDir)') + ': under storage.mountPath or a volumeMount, or an s3:// or gs:// URI. Unset: <storage.mountPath>/train, where training writes its summaries.',
      format='absPathOrURI', replaces=old('logdir')
    ),
    storeDir: params.string(
      'Directory of the Horovod Estimator\'s Store (checkpoints, logs and the intermediate Petastorm data it writes) and of the datasets the job reads: under storage.mountPath or a volumeMount, so that the driver and every executor see the same files. Unset: <storage.mountPath>/store.',
      format='absPath'
    ),
  };

local group(tf) =
  local chart(text) = if tf then text else '';
  local old(key) = if tf then key;
  params.group(
    'Shared storage for checkpoints, evaluation results and logs, mounted at storage.mountPath: an existing PersistentVolumeClaim (claim.name), an NFS export (nfs.server) or an Azure Files share (azure.shareName), at most one of them. None of them: an emptyDir, which lives and dies with the pod.',
    {
      mountPath: params.string('Where the storage is mounted. Unset: /azure/<azure.shareName> with Azure Files' + chart(' (where the charts mounted the share)') + ', /storage otherwise.', format='absPath'),
      claim: params.group('An existing PersistentVolumeClaim (ReadWriteMany when pods on several nodes share it). Also the way to NFS in a namespace whose Pod Security level is restricted, through a PersistentVolume.', {
        name: params.string('Name of the claim.', format='dns1123Subdomain'),
      }),
      nfs: params.group('An NFS export, mounted as an inline nfs volume (Pod Security baseline; for restricted, make a PersistentVolume and claim of it and set claim.name).', {
        server: params.string('Host name or IPv4 address of the NFS server.', format='dns1123Subdomain'),
        path: params.string('Exported path on the server. Unset: /.', format='absPath'),
      }),
      azure: params.group(
        'An Azure Files share, mounted through the Azure Files CSI driver (file.csi.azure.com, which AKS installs' + chart('; the charts used the in-tree azureFile volume, which Kubernetes removed')
        + '). Its credentials come from an existing Secret (secret) or from ' + (if tf then 'the charts\' base64 account name and key' else 'the storage account\'s base64 name and key (accountBase64, keyBase64)')
        + ', which trainsonnet puts into a Secret of its own.',
        {
          shareName: params.string('Name of the file share' + chart(' (the charts\' storage.sharename)') + '.', format='dns1123Label', replaces=old('storage.sharename')),
          secret: params.string('Existing Secret with the storage account\'s name and key under azurestorageaccountname and azurestorageaccountkey (kubectl create secret generic NAME --from-literal=azurestorageaccountname=ACCOUNT --from-literal=azurestorageaccountkey=KEY). Nothing secret is then in the output.', format='dns1123Subdomain'),
          accountBase64: params.string('The storage account\'s name, base64-encoded' + chart(' (the charts\' storage.accountbase64)') + '. With keyBase64, trainsonnet writes the Secret <name>-<component>-storage and warns that the output holds a credential: prefer secret.', format='base64', replaces=old('storage.accountbase64')),
          keyBase64: params.string('The storage account\'s key, base64-encoded' + chart(' (the charts\' storage.keybase64)') + '; see accountBase64.', format='base64', replaces=old('storage.keybase64')),
        }
      ),
    }
  );

// missing: the error of a function (who) used without storage.params
// (with ts.checks, each public function tests that p has storage).
local missing(who) = ts.fail(who + ' reads the storage parameters, and the prototype does not declare them: add storage.params([<the directories it uses>]) to its params');

// The store's kind and mount path, from the storage group s (the public
// functions below check, with ts.checks, that p has it).
local kindOf(s) =
  if s.claim.name != null then 'claim'
  else if s.nfs.server != null then 'nfs'
  else if s.azure.shareName != null then 'azure'
  else null;
local mountOf(s) =
  if s.mountPath != null then s.mountPath
  else if s.azure.shareName != null then '/azure/' + s.azure.shareName
  else defaultMount;

local under(path, dir) = path == dir || std.startsWith(path, if dir == '/' then '/' else dir + '/');

{
  volumeName:: volumeName,
  azureDriver:: azureDriver,

  // params(dirNames, tfCharts): the storage group and the directories
  // (trainDir, evalDir, logDir, storeDir) the prototype uses; tfCharts:
  // with the distributed TensorFlow charts' keys, for the prototypes that
  // replace those charts.
  params(dirNames=[], tfCharts=false)::
    local unknown = [d for d in dirNames if !std.objectHas(defaultDirs, d)];
    if unknown != [] then ts.fail('storage.params: no directory ' + std.join(', ', unknown) + ': the directories are ' + std.join(', ', std.objectFields(defaultDirs)))
    else
      local ds = dirs(tfCharts);
      ts.declare('storage.params', { storage: group(tfCharts) } + { [d]: ds[d] for d in dirNames }),

  // kind: 'claim', 'nfs', 'azure', or null for none.
  kind(p):: if !ts.checks || ts.has(p, 'storage') then kindOf(p.storage) else missing('storage.kind'),

  mountPath(p):: if !ts.checks || ts.has(p, 'storage') then mountOf(p.storage) else missing('storage.mountPath'),

  // dir: the directory name (trainDir, evalDir, logDir, storeDir) as
  // given, or its default under the mount path.
  dir(p, name)::
    if ts.checks && !ts.has(p, name) then
      if !std.objectHas(defaultDirs, name) then ts.fail('storage.dir: no directory ' + name + ': the directories are ' + std.join(', ', std.objectFields(defaultDirs)))
      else ts.fail('storage.dir: the directory ' + name + ' is not declared: add \'' + name + '\' to the prototype\'s storage.params([...])')
    else if p[name] != null then p[name] else mountOf(p.storage) + '/' + defaultDirs[name],

  // isLocal: a path in the pod, not an object store URI.
  isLocal(path):: std.startsWith(path, '/'),

  // onStorage: the local paths among paths that are under the mount path
  // (the others are under a volumeMount, or in an object store).
  onStorage(p, paths)::
    local mount = $.mountPath(p);
    [x for x in paths if std.startsWith(x, '/') && under(x, mount)],

  // Names.
  generatedSecretName(p, component):: p.name + '-' + component + '-storage',
  generatesSecret(p):: p.storage.azure.shareName != null && p.storage.azure.secret == null && p.storage.azure.accountBase64 != null,
  secretName(p, component)::
    if p.storage.azure.secret != null then p.storage.azure.secret else $.generatedSecretName(p, component),

  // volume: the store as a pod volume, read-only for readers (TensorBoard).
  volume(p, component, readOnly=false)::
    local s = if !ts.checks || ts.has(p, 'storage') then p.storage else missing('storage.volume');
    local k = kindOf(s);
    local ro = if readOnly then { readOnly: true } else {};
    { name: volumeName }
    + (
      if k == 'claim' then { persistentVolumeClaim: { claimName: s.claim.name } + ro }
      else if k == 'nfs' then { nfs: { server: s.nfs.server, path: if s.nfs.path != null then s.nfs.path else '/' } + ro }
      else if k == 'azure' then {
        csi: {
          driver: azureDriver,
          volumeAttributes: { shareName: s.azure.shareName, secretName: $.secretName(p, component) },
        } + ro,
      }
      else { emptyDir: {} }
    ),

  mount(p, readOnly=false):: { name: volumeName, mountPath: $.mountPath(p) } + (if readOnly then { readOnly: true } else {}),

  // pod: the volumes and mounts of a pod that uses paths: the store, when
  // there is one or when one of paths is under its mount path (then an
  // emptyDir stands in).
  pod(p, component, paths, readOnly=false)::
    if ts.checks && !ts.has(p, 'storage') then missing('storage.pod')
    else if kindOf(p.storage) == null && $.onStorage(p, paths) == [] then { volumes: [], mounts: [] }
    else { volumes: [$.volume(p, component, readOnly)], mounts: [$.mount(p, readOnly)] },

  // secret: the Secret trainsonnet writes from the charts' base64 account
  // name and key (already base64, so they go into data as given).
  secret(proto, p, component)::
    if ts.checks && !ts.has(p, 'storage') then missing('storage.secret')
    else if !$.generatesSecret(p) then null else {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: common.metadata(proto, p, $.generatedSecretName(p, component), component),
      type: 'Opaque',
      data: {
        azurestorageaccountname: p.storage.azure.accountBase64,
        azurestorageaccountkey: p.storage.azure.keyBase64,
      },
    },

  // validate: the store's own rules, and that every local directory among
  // dirNames (trainDir, ...) is under the mount path or a volumeMount.
  validate(p, dirNames=[])::
    local s = if !ts.checks || ts.has(p, 'storage') then p.storage else missing('storage.validate');
    // each directory as storage.dir reads it: declared (with ts.checks)
    local given(d) = if ts.checks && !ts.has(p, 'storage') then missing('storage.validate') else $.dir(p, d) != null && p[d] != null;
    local az = s.azure;
    local kinds = [k for k in [['storage.claim.name', s.claim.name], ['storage.nfs.server', s.nfs.server], ['storage.azure.shareName', az.shareName]] if k[1] != null];
    local creds = [k for k in [['storage.azure.secret', az.secret], ['storage.azure.accountBase64', az.accountBase64], ['storage.azure.keyBase64', az.keyBase64]] if k[1] != null];
    local mountPath = mountOf(s);
    local mounts = [mountPath] + [m.mountPath for m in p.volumeMounts];
    local endsInNewline(b64) = b64 != null && std.endsWith(std.base64Decode(b64), '\n');
    [
      ts.check(std.length(kinds) <= 1, if std.length(kinds) > 1 then kinds[1][0] else '',
               'set only one of storage.claim.name, storage.nfs.server and storage.azure.shareName (' + std.join(' and ', [k[0] for k in kinds]) + ' are set)'),
      ts.check(s.nfs.path == null || s.nfs.server != null, 'storage.nfs.path',
               'is the path of an NFS export: set storage.nfs.server too'),
      ts.check(az.shareName != null || creds == [], if creds != [] then creds[0][0] else '',
               'is for an Azure Files share: set storage.azure.shareName too'),
      ts.check(az.shareName == null || creds != [], 'storage.azure.shareName',
               'needs the storage account\'s credentials: storage.azure.secret (an existing Secret), or storage.azure.accountBase64 and storage.azure.keyBase64'),
      ts.check(az.secret != null || (az.accountBase64 == null) == (az.keyBase64 == null),
               if az.accountBase64 == null then 'storage.azure.accountBase64' else 'storage.azure.keyBase64',
               'set storage.azure.accountBase64 and storage.azure.keyBase64 together'),
      ts.check(!endsInNewline(az.accountBase64), 'storage.azure.accountBase64',
               'decodes to text that ends in a newline, which Azure would take as part of the name: encode it with echo -n'),
      ts.check(!endsInNewline(az.keyBase64), 'storage.azure.keyBase64',
               'decodes to text that ends in a newline, which Azure would take as part of the key: encode it with echo -n'),
      ts.check(az.shareName == null || (std.length(az.shareName) >= 3 && !ts.contains(az.shareName, '--')), 'storage.azure.shareName',
               'must be an Azure file share name: 3 to 63 lower-case letters, digits and single hyphens'),
    ] + [
      ts.check(!$.isLocal($.dir(p, d)) || std.length([m for m in mounts if under($.dir(p, d), m)]) > 0, d,
               'must be under storage.mountPath (' + mountPath + ') or a volumeMount, where the pods share it')
      for d in dirNames
      if given(d)
    ],

  // warnings: the credential in the output; pasted credentials that the
  // Secret named makes unused; local paths on an emptyDir.
  warnings(p, component, paths)::
    local az = if !ts.checks || ts.has(p, 'storage') then p.storage.azure else missing('storage.warnings');
    local scratch = if kindOf(p.storage) == null then $.onStorage(p, paths) else [];
    [
      if az.secret != null && (az.accountBase64 != null || az.keyBase64 != null) then
        'storage.azure.accountBase64 and keyBase64 are not used: the Secret ' + az.secret + ' (storage.azure.secret) holds the credentials, and nothing secret is written',
      if $.generatesSecret(p) then
        'the output holds the Azure storage account key (Secret ' + $.generatedSecretName(p, component)
        + ', from storage.azure.keyBase64); keep it out of version control, or create the Secret yourself and set storage.azure.secret',
      if scratch != [] then
        'no shared storage (storage.claim.name, storage.nfs.server or storage.azure.shareName): '
        + std.join(', ', std.uniq(std.sort(scratch))) + ' ' + (if std.length(std.uniq(std.sort(scratch))) == 1 then 'is' else 'are')
        + ' on an emptyDir, which no other pod sees and which is gone when the pod ends',
    ],
}
