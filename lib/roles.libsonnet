// Roles: the shared builder of every prototype's workloads.
//
// A prototype describes its job as N roles (launcher and workers; parameter
// servers, chief and workers; a scheduler Deployment; ...). For each role
// this library makes its workload (a Job of one pod, an Indexed Job of
// count pods, or a Deployment), its pod template and container, and the
// Services that give its pods stable names. The prototype says what is
// special about each role; everything the roles share (labels, selectors,
// pod security, scheduling, resources, job lifetime) is here, once.
//
//   local roles = import 'roles.libsonnet';
//   roles.params('each worker', gpu=0)        // a role's typed parameters
//   roles.resources(cpu=p.cpu, gpu=p.gpu)    // ResourceRequirements from them
//   roles.objects(proto, p, [role, ...])     // the job's Service + workloads
//   roles.checks(p, [role, ...])             // the rules every job obeys
//
// A role is an object; only name is required:
//   name            component label, container name, object name <name>-<role>
//   kind            'Job' (one pod, host name <name>-<role>), 'IndexedJob'
//                   (count pods, host names <name>-<role>-<i>) or
//                   'Deployment' (count replicas, long-lived)
//   count           pods (IndexedJob) or replicas (Deployment)
//   dns             the pods get stable DNS names <host>.<name> through the
//                   job's headless Service (default: true for Jobs; a
//                   Deployment of one replica may have it too, its pod's
//                   host name <name>-<role>: give it strategy Recreate)
//   backoffLimit    retries of a Job's pods (default 0; null leaves it
//                   out: the API's default, unlimited with backoffLimitPerIndex)
//   job             extra fields of a Job's spec (backoffLimitPerIndex,
//                   maxFailedIndexes, successPolicy, podFailurePolicy, ...),
//                   merged over the lifetime fields of batch.libsonnet
//   strategy        a Deployment's strategy (default: the API's, rolling)
//   image, imagePullPolicy, command, args, env (a list), ports
//                   ([{name, port}]), readinessProbe, resources, privileged
//   nodeSelector, tolerations, affinity, hostNetwork, hostPID
//   volumes, mounts the role's own, before the common volumes/volumeMounts
//   replacesVolumes names of the role's own volumes that stand for the
//                   common volume of that name in its pods (a chart's
//                   worker.volumes beside its volumes)
//   initCommand     a command run first, in an init container "init" that
//                   is the main container without ports, probe or resources
//   initContainers, sidecars
//   container, pod  extra fields of the main container and of the pod spec

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local params = import 'params.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local defaults = {
  kind: 'Job',
  count: 1,
  dns: self.kind != 'Deployment',
  backoffLimit: 0,
  strategy: null,
  image: error 'a role needs an image',
  imagePullPolicy: 'IfNotPresent',
  command: null,
  args: null,
  env: [],
  ports: [],
  readinessProbe: null,
  resources: null,
  privileged: false,
  nodeSelector: {},
  tolerations: [],
  affinity: null,
  hostNetwork: false,
  hostPID: false,
  volumes: [],
  mounts: [],
  replacesVolumes: [],
  initCommand: null,
  initContainers: [],
  sidecars: [],
  container: {},
  pod: {},
  job: {},
};

local digits(n) = std.length(std.toString(n));

{
  // params(who, gpu, exec, image): the typed parameters of one role: its
  // gpu, cpu and memory limits, nodeSelector, tolerations and env; exec
  // (a doc) and image (a default) when the role has them. gpu is the
  // default GPU count (null: unset, meaning another value applies).
  params(who, gpu=0, exec=null, image=null):: {
    gpu: params.int('GPUs of ' + who + ' (a limit of gpuResource).', default=gpu, min=0, max=1024),
    cpu: params.quantity('CPU limit of ' + who + '.'),
    memory: params.quantity('Memory limit of ' + who + '.', unit='bytes'),
    nodeSelector: params.map('Node labels ' + who + ' must run on.', keys='labelKey', values='labelValue'),
    tolerations: params.object('Tolerations of ' + who + '.', 'core/v1.Toleration', list=true),
    env: params.map('Environment variables of ' + who + ' only, on top of env.', keys='envName'),
    [if exec != null then 'exec']: params.string(exec, format='nonEmpty'),
    [if image != null then 'image']: params.string('Container image of ' + who + '.', default=image, format='image'),
  },

  // resources: a core/v1.ResourceRequirements from base (one, or null) and
  // typed limits. A typed value replaces the limit (and a request) of its
  // resource in base; gpu 0 removes the GPU limit. null when nothing is
  // asked for.
  resources(base=null, cpu=null, memory=null, gpu=null, gpuResource='nvidia.com/gpu', custom={})::
    local typed = { [if cpu != null then 'cpu']: cpu, [if memory != null then 'memory']: memory }
                  + (if gpu != null && gpu > 0 then { [gpuResource]: gpu } else {})
                  + custom;
    local drop = if gpu == 0 then [gpuResource] else [];
    if base == null then (if typed == {} then null else { limits: typed })
    else
      local keep(m) = { [k]: m[k] for k in std.objectFields(m) if !std.member(drop, k) };
      local limits = keep(std.get(base, 'limits', {})) + typed;
      local requests = keep(std.get(base, 'requests', {}));
      local requests2 = requests + { [k]: typed[k] for k in std.objectFields(typed) if std.objectHas(requests, k) };
      local out = base + {
        [if std.objectHas(base, 'limits') || limits != {} then 'limits']: limits,
        [if std.objectHas(base, 'requests') then 'requests']: requests2,
      };
      if out == {} || out == { limits: {} } then null else out,

  // gpus: the GPU limit of resources (0 without). trainsonnet hands a
  // prototype every GPU quantity of its ResourceRequirements parameters
  // as a whole number or its digits ("2000m", "1e1" and "1Ki" become
  // "2", "10" and "1024"; generator/resources.go), so this counts without
  // parsing suffixes, at any size (std.parseInt fails above 2^53).
  gpus(resources, gpuResource='nvidia.com/gpu')::
    local limits = if resources == null then {} else std.get(resources, 'limits', {});
    local q = std.get(limits, gpuResource, 0);
    if std.isNumber(q) then q
    else if std.isString(q) && q != '' && std.stripChars(q, '0123456789') == '' then
      std.foldl(function(n, c) n * 10 + std.codepoint(c) - 48, std.stringChars(q), 0)
    else error 'roles.gpus: the ' + gpuResource + ' limit ' + std.toString(q) + ' is not a whole number written in digits',

  // hostname: a role's pod host name (of its last pod when indexed).
  hostname(p, r)::
    local role = defaults + r;
    if role.kind == 'IndexedJob' then p.name + '-' + role.name + '-' + (role.count - 1)
    else p.name + '-' + role.name,

  // host: the DNS name of a pod through the job's headless Service, short
  // enough to work in any namespace: <host name>.<name>.
  host(p, hostname):: hostname + '.' + p.name,

  // container: the main container of role r.
  container(p, r)::
    local mounts = r.mounts + p.volumeMounts;
    local c = {
      name: r.name,
      image: r.image,
      imagePullPolicy: r.imagePullPolicy,
      [if r.command != null then 'command']: r.command,
      [if r.args != null then 'args']: r.args,
      [if r.env != [] then 'env']: r.env,
      [if r.ports != [] then 'ports']: [{ name: x.name, containerPort: x.port, protocol: 'TCP' } for x in r.ports],
      [if r.readinessProbe != null then 'readinessProbe']: r.readinessProbe,
      [if r.resources != null then 'resources']: r.resources,
      securityContext: common.containerSecurityContext(p, r.privileged),
      [if mounts != [] then 'volumeMounts']: mounts,
    };
    if r.container == {} then c else c + r.container,

  // podSpec: the pod of role r.
  podSpec(p, r)::
    local volumes = r.volumes + (if r.replacesVolumes == [] then p.volumes else [v for v in p.volumes if !std.member(r.replacesVolumes, v.name)]);
    local init = (if r.initCommand == null then [] else [
      $.container(p, r + { name: 'init', command: r.initCommand, args: null, ports: [], readinessProbe: null, resources: null }),
    ]) + r.initContainers;
    local spec = common.podSpec(p) + {
    [if r.hostNetwork then 'hostNetwork']: true,
    [if r.hostNetwork then 'dnsPolicy']: 'ClusterFirstWithHostNet',
    [if r.hostPID then 'hostPID']: true,
    [if r.affinity != null then 'affinity']: r.affinity,
    [if r.dns && (r.kind == 'Job' || r.kind == 'Deployment') then 'hostname']:
      if r.kind == 'Deployment' && r.count != 1 then error 'role ' + r.name + ': a Deployment with dns has one replica (its pod\'s host name is ' + p.name + '-' + r.name + ')'
      else p.name + '-' + r.name,
    [if r.dns then 'subdomain']: p.name,
    [if r.kind != 'Deployment' then 'restartPolicy']: 'Never',
    [if r.nodeSelector != {} then 'nodeSelector']: r.nodeSelector,
    [if r.tolerations != [] then 'tolerations']: r.tolerations,
    [if init != [] then 'initContainers']: init,
    containers: [$.container(p, r)] + r.sidecars,
    [if volumes != [] then 'volumes']: volumes,
    };
    if r.pod == {} then spec else spec + r.pod,

  // workload: the Job, Indexed Job or Deployment of role r.
  workload(proto, p, role):: $.workloadOf(proto, p, defaults + role),
  workloadOf(proto, p, r)::
    local template = common.podTemplate(proto, p, r.name, $.podSpec(p, r));
    local metadata = common.metadata(proto, p, p.name + '-' + r.name, r.name);
    if r.kind == 'Deployment' then {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: metadata,
      spec: {
        replicas: r.count,
        selector: { matchLabels: common.selector(proto, p, r.name) },
        [if r.strategy != null then 'strategy']: r.strategy,
        template: template,
      },
    }
    else if r.kind == 'Job' || r.kind == 'IndexedJob' then {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: metadata,
      spec: batch.spec(p, r.backoffLimit) + {
        [if r.kind == 'IndexedJob' then 'completionMode']: 'Indexed',
        [if r.kind == 'IndexedJob' then 'completions']: r.count,
        [if r.kind == 'IndexedJob' then 'parallelism']: r.count,
        template: template,
      } + r.job,
    }
    else error 'role ' + r.name + ': kind must be Job, IndexedJob or Deployment, not ' + r.kind,

  // service: the job's headless Service <name>. It gives every pod of the
  // roles with dns a stable name as soon as the pod has an address
  // (publishNotReadyAddresses: peers find each other while starting), and
  // lists their ports.
  service(proto, p, rs):: $.serviceOf(proto, p, [defaults + r for r in rs]),
  serviceOf(proto, p, rs)::
    local dns = [r for r in rs if r.dns];
    // the ports of every role, each name once (roles often share theirs)
    local lists = [r.ports for r in dns if r.ports != []];
    local ports = if lists == [] then [] else if std.length(lists) == 1 || std.length(lists) == 2 && lists[0] == lists[1] then lists[0]
    else std.set(std.join([], lists), function(x) x.name);
    if dns == [] then null else {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: common.metadata(proto, p, p.name),
      spec: {
        clusterIP: 'None',
        publishNotReadyAddresses: true,
        selector: common.selector(proto, p),
        [if ports != [] then 'ports']: [{ name: x.name, port: x.port, targetPort: x.port, protocol: 'TCP' } for x in ports],
      },
    },

  // presence: a headless Service <name>-<role> of one role that publishes
  // ready pods only, so its DNS name exists while the role runs and goes
  // away as soon as the role's containers have ended, however they ended.
  // Other roles watch that name to stop when the role is gone (the
  // watchdog of lib/assets), with no RBAC. The job's own Service is no good
  // for that: publishNotReadyAddresses keeps an ended pod's endpoint, and
  // the EndpointSlice controller may never drop it, because the kubelet
  // reports Ready=False while the phase is still Running and the later
  // change of phase alone does not make the controller look again (seen on
  // Kubernetes 1.34).
  presenceName(p, role):: p.name + '-' + role,
  presence(proto, p, role):: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: common.metadata(proto, p, $.presenceName(p, role), role),
    spec: {
      clusterIP: 'None',
      publishNotReadyAddresses: false,
      selector: common.selector(proto, p, role),
    },
  },

  // objects: the job's headless Service and every role's workload.
  objects(proto, p, rs)::
    local all = [defaults + r for r in rs];
    [$.serviceOf(proto, p, all)] + [$.workloadOf(proto, p, r) for r in all],

  // onePodPerNode: required anti-affinity between the pods of a role
  // (component), or of the whole job (null): for host network, where every
  // pod binds the same ports on its node.
  onePodPerNode(proto, p, component=null):: {
    podAntiAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: [{
        labelSelector: { matchLabels: common.selector(proto, p, component) },
        topologyKey: 'kubernetes.io/hostname',
      }],
    },
  },

  // The rules every job obeys, reported against the parameter that breaks
  // them (a list of ts.check lists).

  // nameFits: every pod host name and object name of the roles rs is a
  // DNS label (at most 63 characters); the longest is a role's name, or the
  // last host name of an indexed role. A caller that knows which role has
  // the longest names (MPI: the workers) may pass that one alone.
  nameFits(p, rs)::
    local indexed(r) = 'kind' in r && r.kind == 'IndexedJob';
    local suffix(r) = '-' + r.name + (if indexed(r) then '-' + (r.count - 1) else '');
    local longest = if std.length(rs) == 1 then rs[0]
    else std.foldl(function(a, r) if std.length(suffix(r)) > std.length(suffix(a)) then r else a, rs[1:], rs[0]);
    local max = 63 - std.length(suffix(longest));
    local hosts = if 'dns' in longest then longest.dns else !('kind' in longest && longest.kind == 'Deployment');
    ts.check(std.length(p.name) <= max, 'name',
             'must be at most ' + max + ' characters'
             + (if indexed(longest) then ' with ' + longest.count + ' ' + longest.name + 's' else '')
             + ': ' + (if hosts then 'pod host names' else 'names') + ' such as ' + p.name + suffix(longest) + ' must fit in 63'),

  // hostNetworkPort: a port that host-network pods bind must not be one
  // the node itself uses (22: the node's sshd). who: "the workers share".
  hostNetworkPort(param, port, hostNetwork, who, note='')::
    ts.check(!(hostNetwork && port == 22), param,
             'must not be 22 with useHostNetwork: ' + who + ' their node\'s network, where the node\'s own sshd has port 22' + note),

  // nonRootPort: a server that runs as runAsUser cannot bind below 1024.
  nonRootPort(p, param, port, server)::
    ts.check(!(common.nonRoot(p) && port < 1024), param,
             'must be 1024 or more with runAsUser: ' + server + ' runs as that user, who may not listen on a privileged port'),

  // withRequests: resources with the default requests of the resources it
  // neither limits nor requests. A pod without requests is BestEffort: the
  // first evicted under pressure, and refused where a ResourceQuota counts
  // requests. A limit alone is also the request, so it stays untouched.
  withRequests(resources, requests)::
    local r = if resources == null then {} else resources;
    local limits = std.get(r, 'limits', {}), asked = std.get(r, 'requests', {});
    local add = { [k]: requests[k] for k in std.objectFields(requests) if !std.objectHas(limits, k) && !std.objectHas(asked, k) };
    if add == {} then resources else r + { requests: asked + add },

  // shWarning: a warning when the command of param, run with sh -c, uses
  // bash syntax (ts.bashSyntax: commands run with sh -c, while the Helm
  // charts ran theirs with bash -c).
  shWarning(param, cmd)::
    local what = ts.bashSyntax(cmd);
    if what != null then
      param + ' is run with sh -c, and ' + what + ': write it for sh, or run bash -c \'...\' inside ' + param + ' if the image has bash',

  // hostNetworkWarning: a NetworkPolicy does not cover host-network pods.
  hostNetworkWarning(p, hostNetwork, what)::
    if hostNetwork && p.networkPolicy then
      'a NetworkPolicy does not cover host-network pods: ' + what + ' reachable from the node network',
}
