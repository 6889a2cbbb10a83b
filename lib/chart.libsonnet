// chart: the shapes the Helm charts of MPI jobs shared, as typed
// parameters: an image block per role, each role's resources with the
// typed gpu, cpu and memory on top, slots that are a pod's GPUs, and a lead
// role's command given as the chart's list of args (run with bash -c, as
// the charts did, when they use bash syntax). horovod (stable/horovod) and
// horovod-dask (kolotoc) are made of them.
//
// Needs:    p with chart.shared at the top level and, per role r named
//           in it, a group p[r] of chart.image and chart.role (the
//           workers' group is worker).
// Declares: chart.shared(who, roleNames) — resources, gpu, cpu, memory,
//           gpuResource, slots (owned by chart.shared); chart.role(who,
//           envNote) — a role's gpu, cpu, memory, env, resources,
//           nodeSelector, tolerations, privileged (owned by chart.role,
//           in the role's group); chart.image(...) a role's image group.
// Returns:  resourcesOf, gpusOf, slotsOf, imageOf, pullPolicyOf, roleOf
//           (what mpi.jobs takes of a role), exec and execWarnings (the
//           lead's command), gpuChecks.
//
//   local chart = import 'chart.libsonnet';
//   worker: params.group('...', { image: chart.image('workers', 'worker', 'horovod/horovod', '0.28.1', 'IfNotPresent') } + chart.role('each worker', ''))
//   chart.resourcesOf(p, p.worker)   // the role's ResourceRequirements
//   chart.slotsOf(p, p.worker)       // its slots in the hostfile
//   chart.exec(p.exec, p.driver.args, 'driver.args')

local params = import 'params.libsonnet';
local roles = import 'roles.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local maxGPUs = 1024;

{
  // image: the chart's image block: repository, tag, pull policy. Where a
  // default is null the parameter is unset by default, meaning the
  // workers' (p.worker.image).
  image(who, chartKey, repository, tag, pullPolicy):: params.group(
    'Image of the ' + who + ' (the chart\'s ' + chartKey + '.image).',
    {
      repository: params.string('Image repository.' + (if repository == null then ' Unset: the worker\'s.' else ''), default=repository, format='imageRepository'),
      tag: params.string('Image tag.' + (if tag == null then ' Unset: the worker\'s.' else ''), default=tag, format='imageTag'),
      pullPolicy: params.enum('Image pull policy.' + (if pullPolicy == null then ' Unset: the worker\'s.' else ''), ['Always', 'IfNotPresent', 'Never'], default=pullPolicy),
    }
  ),

  // role: what every role of such a chart takes: its own env, resources,
  // scheduling and privilege. who: "the driver", "each worker".
  role(who, envNote):: ts.declare('chart.role', {
    gpu: params.int('GPUs of ' + who + ' (a limit of gpuResource), replacing the one of resources; also its slots. Unset: gpu.', min=0, max=maxGPUs),
    cpu: params.quantity('CPU of ' + who + ' (limit, and request if resources has one), replacing the one of resources. Unset: cpu.'),
    memory: params.quantity('Memory of ' + who + ' (limit, and request if resources has one), replacing the one of resources. Unset: memory.', unit='bytes'),
    env: params.map('Environment variables of ' + who + ' only, on top of env. ' + envNote, keys='envName'),
    resources: params.object('Resources of ' + who + '; unset, the shared resources. Its GPU limit (gpuResource) is also its slots in the hostfile.', 'core/v1.ResourceRequirements'),
    nodeSelector: params.map('Node labels ' + who + ' must run on.', keys='labelKey', values='labelValue'),
    tolerations: params.object('Tolerations of ' + who + '.', 'core/v1.Toleration', list=true),
    privileged: params.bool('Run the container of ' + who + ' privileged. Off unless asked: a privileged container can do anything on its node (trainsonnet warns when it is on).'),
  }),

  // shared: the parameters that apply to every role unless the role sets
  // its own. who: "the driver and every worker"; roleNames: the roles
  // that have their own (['driver', 'worker']).
  shared(who, roleNames)::
    local per(k) = std.join(' and ', [r + '.' + k for r in roleNames]);
    ts.declare('chart.shared', {
      resources: params.object('Resources of ' + who + ' (the chart\'s resources); ' + per('resources') + ' replace them per role. The GPU limit (gpuResource) sets the slots.', 'core/v1.ResourceRequirements'),
      gpu: params.int('GPUs of ' + who + ' (a limit of gpuResource), replacing the one of resources; also the slots of each pod. ' + per('gpu') + ' replace it per role.', min=0, max=maxGPUs),
      cpu: params.quantity('CPU of ' + who + ' (limit, and request if resources has one), replacing the one of resources.'),
      memory: params.quantity('Memory of ' + who + ' (limit, and request if resources has one), replacing the one of resources.', unit='bytes'),
      gpuResource: params.string('Extended resource that counts GPUs, and so the slots of each pod.', default='nvidia.com/gpu', format='extendedResourceName'),
      slots: params.int('MPI slots per pod in the hostfile. Unset: the GPUs of the pod, or 1 without GPUs (the chart\'s template bug made it always 1).', min=1, max=maxGPUs),
    }),

  // resourcesOf: the effective resources of role r: its resources (or the
  // shared ones), with the typed gpu, cpu and memory (the role's, or the
  // shared ones) on top.
  resourcesOf(p, r):: roles.resources(
    if r.resources != null then r.resources else p.resources,
    if r.cpu != null then r.cpu else p.cpu,
    if r.memory != null then r.memory else p.memory,
    if r.gpu != null then r.gpu else p.gpu,
    p.gpuResource,
  ),
  // gpusOf: its GPUs (the typed gpu wins over the resources' limit, as in
  // resourcesOf).
  gpusOf(p, r)::
    if r.gpu != null then r.gpu else if p.gpu != null then p.gpu
    else roles.gpus(if r.resources != null then r.resources else p.resources, p.gpuResource),
  // slotsOf: its slots: slots, or its GPUs (1 without).
  slotsOf(p, r):: if p.slots != null then p.slots else std.max(1, $.gpusOf(p, r)),

  // gpuChecks: a pod's GPUs are its slots (unless slots is set): at most
  // 1024, as the typed gpu, also when they come from a resources object
  // (the parameter named: the role's, or the shared one, once).
  gpuChecks(p, roleNames)::
    local from(role) = if p[role].resources != null then role + '.resources' else 'resources';
    local over = [role for role in roleNames if p.slots == null && p[role].gpu == null && p.gpu == null && $.gpusOf(p, p[role]) > maxGPUs];
    [
      ts.check(false, param, 'the limit of ' + p.gpuResource + ' must be at most ' + maxGPUs + ': a pod\'s GPUs are also its slots in the hostfile')
      for param in std.set([from(role) for role in over])
    ],

  // imageOf, pullPolicyOf: a role's image, the workers' where it sets none.
  imageOf(p, r)::
    local repo = if r.image.repository != null then r.image.repository else p.worker.image.repository;
    local tag = if r.image.tag != null then r.image.tag else p.worker.image.tag;
    repo + ':' + tag,
  pullPolicyOf(p, r):: if r.image.pullPolicy != null then r.image.pullPolicy else p.worker.image.pullPolicy,

  // roleOf: what mpi.jobs takes of a role of such a chart (its image,
  // resources, scheduling, privilege; the pods' network and PID sharing).
  roleOf(p, r):: {
    image: $.imageOf(p, r),
    imagePullPolicy: $.pullPolicyOf(p, r),
    resources: $.resourcesOf(p, r),
    nodeSelector: r.nodeSelector,
    tolerations: r.tolerations,
    privileged: r.privileged,
    hostNetwork: p.useHostNetwork,
    hostPID: p.useHostPID,
  },

  // The lead role's command: exec, or the chart's args joined. The charts
  // ran args with bash -c "$*"; args that use bash syntax run with bash,
  // so that a values file that worked under the chart still does (the
  // image must have bash: the role says so and exits 127 if it has not).
  // exec is trainsonnet's own and runs with sh -c, as documented.
  argsCommand(args):: if args == [] then null else std.join(' ', args),
  // argsBash: the bash construct in args, when they are the command.
  argsBash(exec, args):: if exec == null then ts.bashSyntax($.argsCommand(args)),
  exec(exec, args, argsParam)::
    if exec != null then exec
    else if $.argsBash(exec, args) != null then
      local quoted = "'" + std.strReplace($.argsCommand(args), "'", "'\\''") + "'";
      'command -v bash >/dev/null 2>&1 || { echo "' + argsParam + ' use bash syntax and the image has no bash" >&2; exit 127; }; exec bash -c ' + quoted
    else $.argsCommand(args),

  // execWarnings: what the lead role's command deserves a word about.
  // role: "the driver".
  execWarnings(exec, args, argsParam, role):: [
    if exec != null && args != [] then argsParam + ' is not used: exec is set, and both are ' + role + '\'s command (exec is one string, ' + argsParam + ' the chart\'s list)',
    roles.shWarning('exec', exec),
    local bash = $.argsBash(exec, args);
    if bash != null then
      argsParam + ' run with bash -c, as the chart ran them: ' + bash + '; ' + role + '\'s image must have bash (it exits 127 if not)',
  ],
}
