// common: the parameters every prototype shares, and how they land on
// objects: labels, pod security, the pod-level settings, the NetworkPolicy.
//
// Needs:    p with the parameters common.params declares (every function
//           here reads them; need(p, who) says so clearly when they are
//           missing).
// Declares: common.params(defaultName, defaultImage) — name, namespace,
//           [image, imagePullPolicy,] imagePullSecrets, serviceAccountName,
//           automountServiceAccountToken, schedulerName, priorityClassName,
//           queue, workloadPriorityClass, labels, annotations, env, volumes,
//           volumeMounts, runAsUser, runAsGroup, fsGroup, supplementalGroups,
//           networkPolicy (owned by common.params; env is every
//           container's: a role's own env is roles.envParams, in a group of
//           the role's; queue is applied by roles.objects).
// Returns:  labels, selector, metadata, env (a map as an env list),
//           nonRoot, podSecurityContext, containerSecurityContext, podSpec,
//           podTemplate, uiRule, networkPolicy (null when it is off).
//
// The lifetime of Jobs is batch.libsonnet, workloads roles.libsonnet.
//
// Labels follow app.kubernetes.io: name = the prototype, instance = the
// job's name, component = the role. Selectors use only name and instance
// (and component where a role must be told apart): labels that never change
// between versions, so an upgrade never hits an immutable selector.

local params = import 'params.libsonnet';
local ts = import 'trainsonnet.libsonnet';

// Optional fields are written [if x != null then 'k']: x rather than by
// filtering nulls out of an object afterwards: a comprehension over an
// object's fields is several times slower in go-jsonnet.

local declarations(defaultName, defaultImage) = params.common({
  name: params.string(
    'Name of the job. It prefixes every object, so two jobs in one namespace never collide, and becomes the app.kubernetes.io/instance label.',
    default=defaultName, format='dns1035Label'
  ),
  namespace: params.string(
    'Namespace of every object. Unset, the objects carry no namespace and land where kubectl (or a kustomize overlay) puts them.',
    format='dns1123Label'
  ),
  [if defaultImage != null then 'image']: params.string('Container image of the job pods.', default=defaultImage, format='image'),
  [if defaultImage != null then 'imagePullPolicy']: params.enum('Image pull policy of every container. Unset: Always for an image tagged :latest or not tagged, else IfNotPresent, as Kubernetes picks it (written out, so the manifest says it).', ['Always', 'IfNotPresent', 'Never']),
  imagePullSecrets: params.list('Names of Secrets to pull images with.', items='dns1123Subdomain'),
  serviceAccountName: params.string(
    'ServiceAccount the pods run as. The pods never need the Kubernetes API, so none is created and no RBAC is granted.',
    format='dns1123Subdomain'
  ),
  automountServiceAccountToken: params.bool('Mount the ServiceAccount token into the pods (off: nothing in them talks to the API).'),
  schedulerName: params.string('Scheduler of every pod (for gang schedulers such as Volcano or the coscheduling plugin).', format='dns1123Subdomain'),
  priorityClassName: params.string('PriorityClass of every pod (Kueue also ranks a queued job by it when workloadPriorityClass is unset).', format='dns1123Subdomain'),
  queue: params.string(
    'Kueue LocalQueue that admits the job: all its pods together or none (one workload), none of them running while it waits. Unset: no queue.',
    format='dns1123Label'
  ),
  workloadPriorityClass: params.string(
    'Kueue WorkloadPriorityClass of the job: its place in the queue and whom it may preempt, apart from the pods\' priorityClassName.',
    format='dns1123Label'
  ) + params.needs('queue', 'only a queued job has a Kueue priority'),
  labels: params.map('Labels added to every object and pod (never to selectors).', keys='userLabelKey', values='labelValue'),
  annotations: params.map('Annotations added to every object and pod.', keys='userAnnotationKey'),
  env: params.map('Environment variables of every job container.', keys='envName'),
  volumes: params.object('Volumes added to every pod.', 'core/v1.Volume', list=true),
  volumeMounts: params.object('Volume mounts added to every job container.', 'core/v1.VolumeMount', list=true),
  runAsUser: params.int('User id the containers run as. Set it (non-zero) to run without root. Where the pods run sshd (the MPI prototypes), it then runs as that user, who must exist in the image, on its unprivileged port.', min=0),
  runAsGroup: params.int('Group id the containers run as; also the pods\' fsGroup unless fsGroup is set.', min=0),
  fsGroup: params.int('Group that owns the pods\' volumes.', min=0),
  supplementalGroups: params.list('Extra group ids of the containers.', items='int', min=0, max=2147483647),
  networkPolicy: params.bool('Create a NetworkPolicy that admits only this job\'s own pods. Turn off only if your cluster manages policies elsewhere.', default=true),
});

// The names every p must have (image and imagePullPolicy are optional).
local names = std.objectFields(declarations('name', null));

{
  // params(defaultName, defaultImage): the common declarations. With
  // defaultImage null there is no image or imagePullPolicy: the prototype
  // declares its images itself (per role, in the Helm chart's shape).
  params(defaultName, defaultImage=null):: ts.declare('common.params', declarations(defaultName, defaultImage)),

  // need(p, who): p, when it has the common parameters; otherwise an
  // error that says who needs them (who: "roles.objects") and what to add.
  need(p, who)::
    // (one of them stands for all: they come together, from common.params)
    if !ts.checks || ts.has(p, 'volumeMounts') then p
    else
      local missing = [n for n in names if !std.objectHas(p, n)];
      ts.fail(who + ' reads the common parameters, and the prototype does not declare '
              + (if std.length(missing) == std.length(names) then 'them' else std.join(', ', missing))
              + ': add common.params(\'<default name>\') to its params'),

  // labels of an object of the job; component may be null.
  labels(proto, p, component=null)::
    local own = {
      'app.kubernetes.io/name': proto,
      'app.kubernetes.io/instance': p.name,
      'app.kubernetes.io/managed-by': 'trainsonnet',
      [if component != null then 'app.kubernetes.io/component']: component,
    };
    if p.labels == {} then own else own + p.labels,

  // selector matches every pod of the job, or of one role.
  selector(proto, p, component=null):: {
    'app.kubernetes.io/name': proto,
    'app.kubernetes.io/instance': p.name,
    [if component != null then 'app.kubernetes.io/component']: component,
  },

  metadata(proto, p, name, component=null):: {
    name: name,
    [if p.namespace != null then 'namespace']: p.namespace,
    labels: $.labels(proto, p, component),
    [if p.annotations != {} then 'annotations']: p.annotations,
  },

  // env turns a map into a sorted env list.
  env(m):: [{ name: k, value: m[k] } for k in std.objectFields(m)],

  // nonRoot is true when the pods run as a user other than root.
  nonRoot(p):: p.runAsUser != null && p.runAsUser != 0,

  podSecurityContext(p):: {
    [if p.runAsUser != null then 'runAsUser']: p.runAsUser,
    [if p.runAsGroup != null then 'runAsGroup']: p.runAsGroup,
    [if $.nonRoot(p) then 'runAsNonRoot']: true,
    [if p.fsGroup != null || p.runAsGroup != null then 'fsGroup']: if p.fsGroup != null then p.fsGroup else p.runAsGroup,
    [if p.supplementalGroups != [] then 'supplementalGroups']: p.supplementalGroups,
    seccompProfile: { type: 'RuntimeDefault' },
  },

  // containerSecurityContext: no privilege escalation ever; without root,
  // no capabilities either (Pod Security "restricted").
  containerSecurityContext(p, privileged=false)::
    if privileged then { privileged: true }
    else { allowPrivilegeEscalation: false, [if $.nonRoot(p) then 'capabilities']: { drop: ['ALL'] } },

  // podSpec: the pod-level settings every prototype applies.
  podSpec(p):: {
    automountServiceAccountToken: p.automountServiceAccountToken,
    [if p.serviceAccountName != null then 'serviceAccountName']: p.serviceAccountName,
    [if p.schedulerName != null then 'schedulerName']: p.schedulerName,
    [if p.priorityClassName != null then 'priorityClassName']: p.priorityClassName,
    [if p.imagePullSecrets != [] then 'imagePullSecrets']: [{ name: s } for s in p.imagePullSecrets],
    securityContext: $.podSecurityContext(p),
    enableServiceLinks: false,
  },

  podTemplate(proto, p, component, spec)::
    {
      metadata: {
        labels: $.labels(proto, p, component),
        [if p.annotations != {} then 'annotations']: p.annotations,
      },
      spec: spec,
    },

  // uiRule: an ingress rule of networkPolicy for a web UI's ports
  // (numbers): from the peers in from, or by default from the namespace
  // with a ClusterIP Service and from anywhere with a LoadBalancer or
  // NodePort one.
  uiRule(ports, from, serviceType)::
    local ps = [{ port: x, protocol: 'TCP' } for x in ports];
    if from != [] then { from: from, ports: ps }
    else if serviceType == 'ClusterIP' then { from: [{ podSelector: {} }], ports: ps }
    else { ports: ps },

  // networkPolicy admits traffic to the job's pods only from the job's pods,
  // and what the extra ingress rules admit (a server's port from its
  // clients: TensorBoard's UI). name defaults to the job's name.
  networkPolicy(proto, p, ingress=[], name=null)::
    if !p.networkPolicy then null else {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: $.metadata(proto, p, if name == null then p.name else name),
      spec: {
        podSelector: { matchLabels: $.selector(proto, p) },
        policyTypes: ['Ingress'],
        ingress: [{ from: [{ podSelector: { matchLabels: $.selector(proto, p) } }] }] + ingress,
      },
    },

}
