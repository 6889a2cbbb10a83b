// kubeflow: what a Kubeflow operator's job (PyTorchJob, TFJob, MPIJob) says
// of its pods, as trainsonnet's typed parameters: the pieces of a
// prototype's from functions (ts.prototype's from; generator/keys.go).
//
// Needs:    nothing (plain objects, as the user's file has them).
// Declares: no parameter.
// Returns:  kubeflow.pod(rs, container, at) {params, warnings, errors} from
//           a replica spec's pod template; kubeflow.replicas(rs) its pods
//           (the operators' default 1); kubeflow.words(c) a container's
//           command and args as words, kubeflow.shell(words) as sh text;
//           kubeflow.meta(o) {params, warnings} of the metadata;
//           kubeflow.runPolicy(o, removed) the job's lifetime.
//
// Each returns what it could not carry as a warning that says what to do
// (a typed parameter, or a kustomize patch of the generated base), and
// never carries a value with another meaning without saying so.

local str(v) = if v == null then '' else std.toString(v);

// What trainsonnet carries of a pod spec and of its container; the rest
// is said, field by field.
local podCarried = ['containers', 'nodeSelector', 'tolerations', 'volumes', 'imagePullSecrets', 'serviceAccountName', 'serviceAccount',
                    'schedulerName', 'priorityClassName', 'securityContext', 'restartPolicy', 'automountServiceAccountToken'];
local containerCarried = ['name', 'image', 'imagePullPolicy', 'command', 'args', 'env', 'resources', 'volumeMounts', 'ports'];
local securityCarried = ['runAsUser', 'runAsGroup', 'fsGroup', 'supplementalGroups'];

// A word of a command as sh reads it: quoted when it holds anything sh
// would read otherwise.
local plain(w) =
  if w != '' && std.length(std.stripChars(w, 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,@%+')) == 0 then w
  else "'" + std.strReplace(w, "'", "'\\''") + "'";

// A variable the kubelet would have expanded and the pod's shell expands
// here: generator/internal/kubeflow marks its name with U+FDD1 and U+FDD2
// (kubeflow.RefStart, RefEnd); written "${NAME}".
local refStart = '\uFDD1';
local refEnd = '\uFDD2';
local quote(w) =
  if std.strReplace(w, refStart, '') == w then plain(w)
  else
    local segs = std.split(w, refStart);
    std.join('', [if segs[0] == '' then '' else plain(segs[0])] + [
      local p = std.split(seg, refEnd);
      '"${' + p[0] + '}"' + (if std.length(p) < 2 || p[1] == '' then '' else plain(p[1]))
      for seg in segs[1:]
    ]);

local isGPU(k) = std.endsWith(k, '/gpu') || std.endsWith(k, '.com/gpu');

{
  // refuse(ok, field, rule): a problem of the object's field unless ok,
  // for a from function's errors.
  refuse(ok, field, rule):: if ok then [] else [{ field: field, rule: rule }],

  replicas(rs):: if rs == null then 0 else if std.get(rs, 'replicas') == null then 1 else rs.replicas,

  // the container named name, else the first
  container(pod, name)::
    local cs = std.get(pod, 'containers', []);
    local named = [c for c in cs if std.get(c, 'name') == name];
    if named != [] then named[0] else if cs != [] then cs[0] else null,

  words(c):: (if std.get(c, 'command') == null then [] else c.command) + (if std.get(c, 'args') == null then [] else c.args),
  // kubelet(w): a word of a command run as given (no shell), with the
  // variables the checks marked (the pods define them with the operator's
  // meaning) as the kubelet's $(NAME), which it expands; the user's own $
  // stays the user's (generator/internal/dollar: written $$)
  kubelet(w):: std.strReplace(std.strReplace(w, refStart, '$('), refEnd, ')'),
  shell(words):: std.join(' ', [quote(w) for w in words]),

  // pod(rs, name, at, own): the typed parameters a replica spec's pod
  // template gives (its container called name, or the first), at its path
  // in the object; own names the pod spec's fields the caller carries
  // itself (openmpi's hostNetwork). Not the command: each prototype reads
  // it its own way.
  pod(rs, name, at, own=[])::
    local pod = std.get(std.get(rs, 'template', {}), 'spec', {});
    local c = $.container(pod, name);
    local res = std.get(c, 'resources', {});
    local limits = std.get(res, 'limits', {});
    local requests = std.get(res, 'requests', {});
    local gpuKeys = [k for k in std.objectFields(limits) if isGPU(k)];
    local custom = [k for k in std.objectFields(limits) if !isGPU(k) && k != 'cpu' && k != 'memory'];
    local env = std.get(c, 'env', []);
    local mounts = std.get(c, 'volumeMounts', []);
    local shmMounts = [m for m in mounts if m.mountPath == '/dev/shm'];
    local shmNames = [m.name for m in shmMounts];
    local vols = std.get(pod, 'volumes', []);
    local shmVols = [v for v in vols if std.member(shmNames, v.name)];
    local sc = std.get(pod, 'securityContext', {});
    local csc = std.get(c, 'securityContext', {});
    {
      params: {
        [if std.get(c, 'image') != null then 'image']: c.image,
        [if std.get(c, 'imagePullPolicy') != null then 'imagePullPolicy']: c.imagePullPolicy,
        [if std.length([e for e in env if std.objectHas(e, 'value')]) > 0 then 'env']: { [e.name]: str(e.value) for e in env if std.objectHas(e, 'value') },
        [if gpuKeys != [] then 'gpu']: limits[gpuKeys[0]],
        [if gpuKeys != [] && gpuKeys[0] != 'nvidia.com/gpu' then 'gpuResource']: gpuKeys[0],
        [if std.objectHas(limits, 'cpu') then 'cpu']: str(limits.cpu),
        [if std.objectHas(limits, 'memory') then 'memory']: str(limits.memory),
        [if std.objectHas(pod, 'nodeSelector') then 'nodeSelector']: pod.nodeSelector,
        [if std.objectHas(pod, 'tolerations') then 'tolerations']: pod.tolerations,
        [if [v for v in vols if !std.member(shmNames, v.name)] != [] then 'volumes']: [v for v in vols if !std.member(shmNames, v.name)],
        [if [m for m in mounts if m.mountPath != '/dev/shm'] != [] then 'volumeMounts']: [m for m in mounts if m.mountPath != '/dev/shm'],
        [if shmVols != [] && std.get(std.get(shmVols[0], 'emptyDir', {}), 'sizeLimit') != null then 'shmSize']: str(shmVols[0].emptyDir.sizeLimit),
        [if std.objectHas(pod, 'imagePullSecrets') then 'imagePullSecrets']: [s.name for s in pod.imagePullSecrets],
        [if std.get(pod, 'serviceAccountName', std.get(pod, 'serviceAccount')) != null then 'serviceAccountName']: std.get(pod, 'serviceAccountName', std.get(pod, 'serviceAccount')),
        [if std.objectHas(pod, 'automountServiceAccountToken') then 'automountServiceAccountToken']: pod.automountServiceAccountToken,
        [if std.objectHas(pod, 'schedulerName') then 'schedulerName']: pod.schedulerName,
        [if std.objectHas(pod, 'priorityClassName') then 'priorityClassName']: pod.priorityClassName,
      } + {
        [k]: if std.objectHas(csc, k) then csc[k] else sc[k]
        for k in securityCarried
        if std.objectHas(sc, k) || std.objectHas(csc, k)
      },
      warnings: [
        if c == null then at + '.template: no container: the typed parameters take their defaults',
        if std.length(std.get(pod, 'containers', [])) > 1 then
          at + '.template: containers other than ' + c.name + ' (' + std.join(', ', [x.name for x in pod.containers if x.name != c.name]) + ') are not carried: add them with a kustomize patch of the generated base',
      ] + [
        at + '.template.spec.' + k + ': not carried: add it with a kustomize patch of the generated base'
        for k in std.objectFields(pod)
        if !std.member(podCarried + own, k)
      ] + [
        at + '.template.spec.containers[' + c.name + '].' + k + ': not carried: add it with a kustomize patch of the generated base'
        for k in (if c == null then [] else std.objectFields(c))
        if !std.member(containerCarried, k) && k != 'securityContext'
      ] + [
        at + '.template.spec.securityContext.' + k + ': not carried: add it with a kustomize patch of the generated base (runAsUser, runAsGroup, fsGroup and supplementalGroups are parameters)'
        for k in std.objectFields(sc)
        if !std.member(securityCarried, k)
      ] + [
        at + '.template.spec.containers[' + c.name + '].securityContext.' + k + ': not carried: the pods run with trainsonnet\'s own (no privilege escalation, all capabilities dropped, RuntimeDefault seccomp); change it with a kustomize patch'
        for k in std.objectFields(csc)
        if !std.member(securityCarried, k)
      ] + [
        at + '.template.spec.containers[' + c.name + '].env.' + e.name + ': valueFrom is not carried (env takes values): add it with a kustomize patch'
        for e in env
        if !std.objectHas(e, 'value')
      ] + [
        at + '.template.spec.containers[' + c.name + '].resources.requests.' + k + ': ' + str(requests[k]) + ' is not carried: trainsonnet\'s cpu and memory are limits, and the operator\'s pod only asked for it (burstable): add the request with a kustomize patch, or set ' + k + ' to make it a limit'
        for k in std.objectFields(requests)
        if (k == 'cpu' || k == 'memory') && !std.objectHas(limits, k)
      ] + [
        at + '.template.spec.containers[' + c.name + '].resources.limits.' + k + ': not carried: set it in customResources'
        for k in custom
      ] + (
        if std.length(gpuKeys) > 1 then [at + '.template.spec.containers[' + c.name + '].resources.limits: only ' + gpuKeys[0] + ' is carried, as gpu']
        else []
      ),
      // the field each parameter came from, for messages
      fields: {
        local cAt = at + '.template.spec.containers[' + std.get(c, 'name', '0') + ']',
        local sAt = at + '.template.spec',
        image: cAt + '.image',
        imagePullPolicy: cAt + '.imagePullPolicy',
        env: cAt + '.env',
        [if gpuKeys != [] then 'gpu']: cAt + '.resources.limits.' + gpuKeys[0],
        [if gpuKeys != [] then 'gpuResource']: cAt + '.resources.limits.' + gpuKeys[0],
        cpu: cAt + '.resources.limits.cpu',
        memory: cAt + '.resources.limits.memory',
        volumeMounts: cAt + '.volumeMounts',
        shmSize: sAt + '.volumes',
      } + {
        [k]: at + '.template.spec.' + k
        for k in ['nodeSelector', 'tolerations', 'volumes', 'imagePullSecrets', 'serviceAccountName', 'automountServiceAccountToken', 'schedulerName', 'priorityClassName']
      } + {
        [k]: (if std.objectHas(csc, k) then at + '.template.spec.containers[' + std.get(c, 'name', '0') + '].securityContext.' else at + '.template.spec.securityContext.') + k
        for k in securityCarried
      },
      errors: [],
    },


  // meta(o): the parameters an operator job's metadata gives, with
  // warnings: name, namespace, labels and annotations (the object's and
  // its pod templates'), Kueue's queue (its label, or the older
  // annotation) as queue and its priority-class label as
  // workloadPriorityClass.
  meta(o)::
    local md = std.get(o, 'metadata', {});
    local queueKey = 'kueue.x-k8s.io/queue-name';
    local prioKey = 'kueue.x-k8s.io/priority-class';
    local kueueKeys = [queueKey, prioKey];
    local labels = std.get(md, 'labels', {});
    local ann = std.get(md, 'annotations', {});
    local spec = std.get(o, 'spec', {});
    // every role's pod template metadata, by its path
    local tmpls = [
      { at: 'spec.' + k + '.' + r + '.template.metadata', md: std.get(std.get(spec[k][r], 'template', {}), 'metadata', {}) }
      for k in std.objectFields(spec)
      if std.endsWith(k, 'ReplicaSpecs') && std.isObject(spec[k])
      for r in std.objectFields(spec[k])
    ];
    local of(field) = std.foldl(function(acc, t) acc + std.get(t.md, field, {}), tmpls, {});
    local tLabels = of('labels');
    local tAnn = of('annotations');
    local without(m, ks) = { [k]: m[k] for k in std.objectFields(m) if !std.member(ks, k) };
    local allLabels = without(labels, kueueKeys) + without(tLabels, kueueKeys);
    // kubectl's bookkeeping (an object exported with kubectl get -o yaml)
    // is the old object's, not the job's
    local lastApplied = 'kubectl.kubernetes.io/last-applied-configuration';
    local allAnn = without(ann, [queueKey, lastApplied]) + without(tAnn, [queueKey, lastApplied]);
    local queue = std.get(labels, queueKey, std.get(ann, queueKey, std.get(tLabels, queueKey)));
    local prio = std.get(labels, prioKey, std.get(tLabels, prioKey));
    {
      params: {
        [if std.get(md, 'name') != null then 'name']: md.name,
        [if std.get(md, 'namespace') != null then 'namespace']: md.namespace,
        [if allLabels != {} then 'labels']: allLabels,
        [if allAnn != {} then 'annotations']: allAnn,
        [if queue != null then 'queue']: queue,
        [if prio != null then 'workloadPriorityClass']: prio,
      },
      fields: {
        name: 'metadata.name',
        namespace: 'metadata.namespace',
        labels: 'metadata.labels',
        annotations: 'metadata.annotations',
        queue: if std.objectHas(labels, queueKey) then 'metadata.labels.' + queueKey else 'metadata.annotations.' + queueKey,
        workloadPriorityClass: 'metadata.labels.' + prioKey,
      },
      warnings: [
        if without(ann, [queueKey, lastApplied]) != {} then
          'metadata.annotations: carried to every object and pod of the job (the operator kept them on the ' + std.get(o, 'kind', 'object') + '): drop them from the generated base with a kustomize patch where they must not be',
        if std.objectHas(ann, queueKey) && !std.objectHas(labels, queueKey) then
          'metadata.annotations.' + queueKey + ': Kueue\'s older spelling of the queue: taken as queue, which labels the job',
      ] + [
        t.at + '.' + f + ': carried to every object and pod of the job, as ' + f + ' (the operator put them on this role\'s pods)'
        for t in tmpls
        for f in ['labels', 'annotations']
        if without(std.get(t.md, f, {}), kueueKeys) != {}
      ] + [
        t.at + '.labels.' + k + ': ' + std.toString(t.md.labels[k]) + ' differs from another\'s (' + std.toString(allLabels[k]) + '): every pod takes ' + std.toString(allLabels[k])
        for t in tmpls
        for k in std.objectFields(std.get(t.md, 'labels', {}))
        if std.objectHas(allLabels, k) && t.md.labels[k] != allLabels[k]
      ] + [
        'metadata.labels.' + k + ': ' + std.toString(labels[k]) + ' differs from the pod template\'s (' + std.toString(allLabels[k]) + '): every object and pod takes ' + std.toString(allLabels[k])
        for k in std.objectFields(without(labels, kueueKeys))
        if labels[k] != allLabels[k]
      ] + [
        t.at + '.' + f + ': not carried: trainsonnet names and keeps the metadata of the job\'s pods; add it with a kustomize patch'
        for t in tmpls
        for f in std.objectFields(t.md)
        if !std.member(['labels', 'annotations'], f)
      ],
    },

  // runPolicy(o, removed): the lifetime parameters a job's
  // spec.runPolicy gives (not backoffLimit: each prototype retries its
  // own way), and warnings for the rest; removed holds a prototype's
  // texts of runPolicy.* keys, by key.
  runPolicy(o, removed={}):: 
    local run = std.get(std.get(o, 'spec', {}), 'runPolicy', {});
    local sched = std.get(run, 'schedulingPolicy', {});
    local said(k, otherwise) = if std.objectHas(removed, 'runPolicy.' + k) then removed['runPolicy.' + k] else otherwise;
    {
      fields: {
        activeDeadlineSeconds: 'spec.runPolicy.activeDeadlineSeconds',
        ttlSecondsAfterFinished: 'spec.runPolicy.ttlSecondsAfterFinished',
        priorityClassName: 'spec.runPolicy.schedulingPolicy.priorityClass',
        backoffLimit: 'spec.runPolicy.backoffLimit',
      },
      params: {
        [if std.objectHas(run, 'activeDeadlineSeconds') then 'activeDeadlineSeconds']: run.activeDeadlineSeconds,
        [if std.objectHas(run, 'ttlSecondsAfterFinished') then 'ttlSecondsAfterFinished']: run.ttlSecondsAfterFinished,
        [if std.objectHas(sched, 'priorityClass') then 'priorityClassName']: sched.priorityClass,
      },
      warnings: [
        if std.objectHas(run, 'ttlSecondsAfterFinished') then
          'spec.runPolicy.ttlSecondsAfterFinished: deletes the Jobs and their pods; the Service, the NetworkPolicy and any Secret or ConfigMap of the job, which the operator\'s job owned, stay until kubectl delete -f of the manifests',
        if std.get(run, 'suspend') == true then
          'spec.runPolicy.suspend: ' + said('suspend', 'with queue, the Jobs are created suspended and Kueue resumes them once admitted; without, apply them suspended with a kustomize patch (spec.suspend: true)'),
        if std.objectHas(run, 'cleanPodPolicy') then
          'spec.runPolicy.cleanPodPolicy: ' + said('cleanPodPolicy', 'once the job ends its pods are stopped; the ended pods (and their logs) stay until ttlSecondsAfterFinished deletes the Jobs'),
        if std.objectHas(run, 'managedBy') then 'spec.runPolicy.managedBy: ' + said('managedBy', 'the Job controller runs the job: there is no operator'),
      ] + [
        'spec.runPolicy.schedulingPolicy.' + k + ': ' + said('schedulingPolicy.' + k, {
          minAvailable: 'with queue, Kueue admits every pod together; for a gang scheduler set schedulerName and add its PodGroup with a kustomize overlay',
          queue: 'this is Volcano\'s queue: with Kueue set queue to its LocalQueue; with Volcano set schedulerName and add its PodGroup with a kustomize overlay',
          scheduleTimeoutSeconds: 'bound the whole job with activeDeadlineSeconds',
        }[k])
        for k in ['minAvailable', 'queue', 'scheduleTimeoutSeconds']
        if std.objectHas(sched, k)
      ],
      errors: [],
    },
}
