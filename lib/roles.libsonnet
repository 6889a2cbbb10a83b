// roles: the shared builder of every prototype's workloads.
//
// A prototype describes its job as N roles (launcher and workers; parameter
// servers, chief and workers; a scheduler Deployment; ...). For each role
// this library makes its workload (a Job of one pod, an Indexed Job of
// count pods, or a Deployment), its pod template and container, and the
// Services that give its pods stable names. The prototype says what is
// special about each role; everything the roles share (labels, selectors,
// pod security, scheduling, resources, job lifetime) is here, once.
//
// Needs:    p with common.params; with a Job or Indexed Job role also
//           batch.params (the Job lifetime), or roles.objects stops with
//           an error that says to add it.
// Declares: roles.params(who, gpu, exec, image) — gpu, cpu, memory,
//           nodeSelector, tolerations [, exec, image] of one role (owned by
//           roles.params); roles.envParams(who) — env, the role's own
//           variables, for a group of the role's (the top-level env is
//           common.params').
// Returns:  roles.objects(proto, p, [role, ...]) the job's headless Service
//           (null when no role has dns), every role's workload, and what
//           the roles' lifetime relation needs (runtime.run's watch,
//           hearEnd, tellEnd: the lead's presence Service, the end's env);
//           roles.workload, roles.podTemplate, roles.podSpec and
//           roles.container, the parts of one role, usable inside any
//           object (a custom resource's pod template); roles.role(r) the
//           role with roles.defaults; roles.resources, roles.gpus,
//           roles.presence, roles.onePodPerNode, roles.scratch; the rules
//           every job obeys (nameFits, hostNetworkPort, nonRootPort:
//           ts.check lists) and
//           warnings (shWarning, hostNetworkWarning); a memory-backed
//           /dev/shm (shmParam, whose shmSize the caller declares, shm,
//           shmCheck).
//
//   local roles = import 'roles.libsonnet';
//   roles.params('each worker', gpu=0)        // a role's typed parameters
//   roles.resources(cpu=p.cpu, gpu=p.gpu)    // ResourceRequirements from them
//   roles.objects(proto, p, [role, ...])     // the job's Service + workloads
//   roles.nameFits(p, [role, ...])           // a rule every job obeys
//
// A role is an object; name and image are required, every other field
// has its default in roles.defaults, and any other field is an error:
//   name            component label, container name, object name <name>-<role>
//   image           the main container's image
//   kind            'Job' (one pod, host name <name>-<role>), 'IndexedJob'
//                   (count pods, host names <name>-<role>-<i>) or
//                   'Deployment' (count replicas, long-lived)
//   count           pods (IndexedJob) or replicas (Deployment)
//   dns             the pods get stable DNS names <host>.<name> through the
//                   job's headless Service (default: true for Jobs; a
//                   Deployment of one replica may have it too, its pod's
//                   host name <name>-<role>: give it strategy Recreate)
//   lead            the role whose end ends the job (one per job): its Job
//                   is retried p.backoffLimit times; the other roles' Jobs
//                   replace a lost pod as often (an Indexed Job per index),
//                   for the lead's next attempt; every Job gets p's
//                   deadline and TTL (batch.libsonnet)
//   follows         the lead's name, for a role whose pods stop with it by a
//                   runtime of their own (mpi.sh's workers): as a command
//                   under runtime.run with watch=roles.presenceName(p,
//                   lead), the relation roles.objects reads and makes
//   after           another role's name: in a JobSet, this role's Job is made
//                   once that role's pods are ready (startupPolicy
//                   InOrder); Jobs start together, and a role that needs
//                   another waits for it itself (runtime.run's waits)
//   retryPerIndex   the lead, an IndexedJob, retries each index on its own:
//                   backoffLimitPerIndex p.backoffLimit, the Job's own
//                   limit left to the API
//   job             more fields of a Job's spec (maxFailedIndexes,
//                   successPolicy, podFailurePolicy with
//                   batch.podFailurePolicy(rules), ...), merged over the
//                   ones made here: the way to any Job spec field
//   strategy        a Deployment's strategy (default: the API's, rolling)
//   imagePullPolicy, command, args, env (a list), ports ([{name, port}]),
//                   readinessProbe, resources, privileged
//   nodeSelector, tolerations, affinity, hostNetwork, hostPID
//   volumes, mounts the role's own, before the common volumes/volumeMounts
//   replacesVolumes names of the role's own volumes that stand for the
//                   common volume of that name in its pods (a chart's
//                   worker.volumes beside its volumes)
//   initCommand     a command run first, in an init container "init" that
//                   is the main container without ports, probe or resources
//   initContainers, sidecars
//   container, pod  more fields of the main container and of the pod spec

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local params = import 'params.libsonnet';
local runtime = import 'runtime.libsonnet';
local ts = import 'trainsonnet.libsonnet';

// podNameOf: the host name of a role's pod, <name>-<role>, and of an
// IndexedJob's pod i, <name>-<role>-<i>; in a JobSet, where every role is
// an Indexed Job <name>-<role>-0 (the replicated Job's first and only),
// <name>-<role>-0-<i> (0 for a Job's one pod). The one place that spells
// them; podPrefixOf: what an IndexedJob's host names start with.
local nameOf(set, job, role, index) =
  if set then job + '-' + role + '-0-' + (if index == null then 0 else index)
  else job + '-' + role + (if index == null then '' else '-' + index);
local podNameOf(p, role, index=null) = nameOf(batch.jobset(p), p.name, role, index);
local podPrefixOf(p, role) = p.name + '-' + role + (if batch.jobset(p) then '-0-' else '-');
// groupOf: the static group of an IndexedJob role of count pods: the
// job's Service, its pods, its index 0 (runtime.run's group).
local groupOf(p, role, count) = { service: p.name, count: std.toString(count), lead: podNameOf(p, role, 0) + '.' + p.name };

local defaults = {
  kind: 'Job',
  count: 1,
  dns: self.kind != 'Deployment',
  lead: false,
  follows: null,
  after: null,
  retryPerIndex: false,
  job: {},
  strategy: null,
  imagePullPolicy: null,  // Kubernetes' default for the image (pullPolicy)
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
};

// The fields of a role: name and image are required, and null here, so
// that a role with both and no field of its own has as many as known
// (role() counts them).
local known = defaults + { name: null, image: null };
local fields = std.objectFields(known);
local nFields = std.length(fields);

// What a field that is not a role's was probably meant as.
local meant = {
  backoffLimit: 'the lead role (lead: true) is retried p.backoffLimit times, the others never; other Job spec fields go in job: {...}',
  replicas: 'count is the replicas of a Deployment and the pods of an IndexedJob',
  completions: 'count is the pods of an IndexedJob',
  parallelism: 'count is the pods of an IndexedJob',
  spec: 'Job spec fields go in job: {...}, pod spec fields in pod: {...}',
  containers: 'more containers are sidecars (or initContainers); fields of the main container go in container: {...}',
  volumeMounts: 'a role\'s own volume mounts are mounts',
};

// role: r with the defaults, or an error that names what is wrong with it.
// It runs for every role of every render (what it checks would otherwise
// pass silently, or as a Jsonnet error), so the usual role passes one
// test of field lookups and one std.length; the rest only says what is
// wrong.
local role(r) =
  local rr = known + r;
  local kind = rr.kind;
  if rr.name != null && rr.image != null && std.length(rr) == nFields
     && (kind == 'Job' || kind == 'IndexedJob' || kind == 'Deployment' && std.length(rr.job) == 0)
     && (!rr.retryPerIndex || kind == 'IndexedJob' && rr.lead)
  then rr
  else
    local what = 'role ' + rr.name;
    if rr.name == null then ts.fail('roles: a role needs a name, such as {name: \'worker\', image: p.image}: its component label, its container\'s name, and <name>-<role>, its objects\' name')
    else if std.length(rr) != nFields then
      local unknown = [k for k in std.objectFields(r) if !std.objectHas(known, k)];
      ts.fail(what + ': ' + (if std.length(unknown) == 1 then 'unknown field ' else 'unknown fields ') + std.join(', ', unknown)
              + std.join('', ['; ' + meant[k] for k in unknown if std.objectHas(meant, k)])
              + ' (a role\'s fields: ' + std.join(', ', fields) + ')')
    else if rr.image == null then ts.fail(what + ': a role needs an image: add image: p.image (or an image parameter of the role\'s)')
    else if !(kind == 'Job' || kind == 'IndexedJob' || kind == 'Deployment') then
      ts.fail(what + ': kind must be Job, IndexedJob or Deployment, not ' + kind)
    else if kind == 'Deployment' then
      ts.fail(what + ': job holds Job spec fields, and ' + rr.name + ' is a Deployment (its own spec field is strategy)')
    else
      ts.fail(what + ': retryPerIndex is for the lead role (lead: true) of kind IndexedJob, each of whose indexes is then retried p.backoffLimit times');

// The parts of a role, from a complete role r (role(r)).

// pullPolicy(image, policy): policy, or where it is null the one
// Kubernetes gives image (Always for :latest or no tag, else IfNotPresent),
// written out so that the manifest says what the pods do.
local pullPolicy(image, policy) =
  if policy != null then policy
  else
    local parts = std.split(image, '/');
    local last = parts[std.length(parts) - 1];
    if ts.contains(last, '@') then 'IfNotPresent'
    else if !ts.contains(last, ':') || std.endsWith(last, ':latest') then 'Always'
    else 'IfNotPresent';

local containerOf(p, r) =
  local mounts = r.mounts + p.volumeMounts;
  local c = {
    name: r.name,
    image: r.image,
    imagePullPolicy: pullPolicy(r.image, r.imagePullPolicy),
    [if r.command != null then 'command']: r.command,
    [if r.args != null then 'args']: r.args,
    [if r.env != [] then 'env']: r.env,
    [if r.ports != [] then 'ports']: [{ name: x.name, containerPort: x.port, protocol: 'TCP' } for x in r.ports],
    [if r.readinessProbe != null then 'readinessProbe']: r.readinessProbe,
    [if r.resources != null then 'resources']: r.resources,
    securityContext: common.containerSecurityContext(p, r.privileged),
    [if mounts != [] then 'volumeMounts']: mounts,
  };
  if r.container == {} then c else c + r.container;

local podSpecOf(p, r) =
  local volumes = r.volumes + (if r.replacesVolumes == [] then p.volumes else [v for v in p.volumes if !std.member(r.replacesVolumes, v.name)]);
  local init = (if r.initCommand == null then [] else [
    containerOf(p, r + { name: 'init', command: r.initCommand, args: null, ports: [], readinessProbe: null, resources: null }),
  ]) + r.initContainers;
  local spec = common.podSpec(p) + {
    [if r.hostNetwork then 'hostNetwork']: true,
    [if r.hostNetwork then 'dnsPolicy']: 'ClusterFirstWithHostNet',
    [if r.hostPID then 'hostPID']: true,
    [if r.affinity != null then 'affinity']: r.affinity,
    // (in a JobSet every role is an Indexed Job, its pods named by the Job
    // controller)
    [if r.dns && (r.kind == 'Job' || r.kind == 'Deployment') && !batch.jobset(p) then 'hostname']:
      if r.kind == 'Deployment' && r.count != 1 then ts.fail('role ' + r.name + ': a Deployment with dns has one replica (its pod\'s host name is ' + podNameOf(p, r.name) + '): set count: 1, or dns: false')
      else podNameOf(p, r.name),
    [if r.dns then 'subdomain']: p.name,
    [if r.kind != 'Deployment' then 'restartPolicy']: 'Never',
    [if r.nodeSelector != {} then 'nodeSelector']: r.nodeSelector,
    [if r.tolerations != [] then 'tolerations']: r.tolerations,
    [if init != [] then 'initContainers']: init,
    containers: [containerOf(p, r)] + r.sidecars,
    [if volumes != [] then 'volumes']: volumes,
  };
  if r.pod == {} then spec else spec + r.pod;

// runFlags: the options of a runtime.run command ({'--watch': name, ...};
// the last of a repeated one), or null for any other command.
local runFlags(cmd) =
  if !std.isArray(cmd) || std.length(cmd) < 4 || cmd[0] != 'sh' || cmd[1] != runtime.path || cmd[2] != 'run' then null
  else
    local n = std.length(cmd);
    local go(i, acc) = if i + 1 >= n || cmd[i] == '--' then acc else go(i + 2, acc + { [cmd[i]]: cmd[i + 1] });
    go(3, {});

// lifetimeOf(proto, p, all): {roles, objects}: the roles with the end's
// env where they lack it, and the lead's presence Service; or the one-line
// error of a relation that cannot work (roles.objects says which).
local presenceNameOf(p, role) = p.name + '-' + role;
local presenceOf(proto, p, role) = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: common.metadata(proto, p, presenceNameOf(p, role), role),
  spec: {
    clusterIP: 'None',
    publishNotReadyAddresses: false,
    selector: common.selector(proto, p, role),
  },
};
local lifetimeOf(proto, p, all) =
  local runs = [{ r: r, f: runFlags(r.command) } for r in all];
  local running = [x for x in runs if x.f != null];
  local declared = [{ r: r, f: { '--watch': presenceNameOf(p, r.follows) } } for r in all if r.follows != null];
  local watchers = [x for x in running if std.objectHas(x.f, '--watch')] + declared;
  local hearers = [x for x in running if std.objectHas(x.f, '--hear-end')];
  local tellers = [x for x in running if std.objectHas(x.f, '--tell-end')];
  local groups = [x for x in running if std.objectHas(x.f, '--group')];
  if running == [] && declared == [] then { roles: all, objects: [] }
  else
    local leads = [r for r in all if r.lead];
    local lead = if leads == [] then null else leads[0];
    local leadName = if lead == null then null else presenceNameOf(p, lead.name);
    local fail(msg) = ts.fail('roles.objects: ' + msg);
    local strayWatch = [x for x in watchers if x.f['--watch'] != leadName];
    local strayTell = [x for x in tellers if lead == null || x.r.name != lead.name];
    local endPort = if tellers == [] then null else tellers[0].f['--tell-end'];
    // The end port is served once the lead's command has ended, when its
    // own ports are free; its sidecars' still run, and in the node's
    // network every role's ports may be on the same node.
    local busy = if lead == null || endPort == null then []
    else [{ name: c.name + '\'s ' + std.get(x, 'name', 'port'), port: x.containerPort } for c in lead.sidecars for x in std.get(c, 'ports', [])]
         + (if lead.hostNetwork then [{ name: r.name + '\'s ' + x.name, port: x.port } for r in all if r.name != lead.name for x in r.ports] else []);
    local collides = [x for x in busy if std.toString(x.port) == endPort];
    local deaf = [x for x in hearers if x.f['--hear-end'] != endPort];
    local unmounted = [x for x in running if [v for v in x.r.volumes if v.name == runtime.volumeName] == [] || [m for m in x.r.mounts if m.name == runtime.volumeName] == []];
    local names(xs) = std.join(', ', [x.r.name for x in xs]);
    // a static group: one Indexed Job with dns, all of its pods, led by
    // index 0, behind the job's Service
    local groupWant(r) = groupOf(p, r.name, r.count);
    local groupHas(x) = { service: std.split(x.f['--group'], ':')[0], count: std.split(x.f['--group'], ':')[1], lead: x.f['--group-lead'] };
    local badGroup = [x for x in groups if x.r.kind != 'IndexedJob' || !x.r.dns || groupHas(x) != groupWant(x.r)];
    if badGroup != [] then
      local x = badGroup[0];
      fail('role ' + x.r.name + ' runs as a static group (runtime.run\'s group), '
           + (if x.r.kind != 'IndexedJob' || !x.r.dns then 'which is the pods of one IndexedJob with dns: true, index 0 leading'
              else 'which is ' + std.manifestJsonMinified(groupWant(x.r)) + ' here (the job\'s Service, the role\'s count, its index 0), not ' + std.manifestJsonMinified(groupHas(x))))
    else if strayWatch != [] then
      local w = strayWatch[0].f['--watch'];
      local owner = [r.name for r in all if presenceNameOf(p, r.name) == w];
      fail('role ' + strayWatch[0].r.name + ' follows ' + w + (if strayWatch[0].r.follows != null then ' (follows: ' + strayWatch[0].r.follows + ')' else ' (runtime.run\'s watch)') + ', '
           + (if owner == [] then 'the presence name of no role of this job' else 'role ' + owner[0] + '\'s, which is not the lead')
           + (if lead == null then ': a follower watches the lead, and no role says lead: true'
              else if strayWatch[0].r.follows != null then ': a follower follows the lead, follows: \'' + lead.name + '\''
              else ': a follower watches the lead, roles.presenceName(p, \'' + lead.name + '\')'))
    else if watchers != [] && lead.kind == 'Deployment' then
      fail('role ' + lead.name + ' is followed (' + names(watchers) + ' watch it) and is a Deployment, which never ends: the lead that followers stop with is a Job')
    else if strayTell != [] then
      fail('role ' + strayTell[0].r.name + ' tells the end of the job (runtime.run\'s tellEnd) and is not the lead' + (if lead == null then '' else ' (' + lead.name + ')') + ': the lead tells its followers the job is over')
    else if collides != [] then
      fail('role ' + lead.name + '\'s end port ' + endPort + ' (tellEnd) is ' + collides[0].name + ', busy when the lead\'s command has ended and the end port opens: give tellEnd and hearEnd a port that is free then')
    else if deaf != [] then
      fail('role ' + deaf[0].r.name + ' hears the end on port ' + deaf[0].f['--hear-end'] + (if endPort == null then ', and no role tells it (runtime.run\'s tellEnd on the lead)' else ', and the lead tells it on ' + endPort) + ': give both the same runtime.endPort(port)')
    else if unmounted != [] then
      fail('role ' + unmounted[0].r.name + ' runs its command under the runtime (runtime.run), whose script is in the job\'s ConfigMap: add runtime.volume(<that ConfigMap>) to its volumes and runtime.mount to its mounts, and runtime.files to the ConfigMap\'s data')
    else
      local followers = std.foldl(function(n, x) n + (if x.r.kind == 'Job' then 1 else x.r.count), hearers, 0);
      local endEnv = if endPort == null then [] else runtime.endEnv(leadName, followers, p.backoffLimit);
      local told = [x.r.name for x in tellers + hearers];
      local envOf(r) =
        local have = [e for e in r.env if e.name == 'TS_FOLLOWERS'];
        if endEnv == [] || !std.member(told, r.name) then r.env
        else if have == [] then r.env + endEnv
        else if have[0].value != std.toString(followers) then
          fail('role ' + r.name + '\'s env says TS_FOLLOWERS=' + have[0].value + ', and ' + followers + ' pods hear the end (' + names(hearers) + '): leave the end\'s env to roles.objects')
        else r.env;
      // a group's pods that end because another was made again are made again,
      // counting no failure
      local grouped = [x.r.name for x in groups];
      local ignoreEnd(r) = {
        action: 'Ignore',
        onExitCodes: { containerName: r.name, operator: 'In', values: [runtime.groupEndCode] },
      };
      local jobOf(r) =
        if !std.member(grouped, r.name) then r.job
        else r.job + { podFailurePolicy: batch.podFailurePolicy([ignoreEnd(r)] + std.get(std.get(r.job, 'podFailurePolicy', {}), 'rules', [])) };
      {
        // only the roles the relation changes are extended: a render reads
        // every field of every role, through each extension
        roles: [
          if std.member(told, r.name) && endEnv != [] || std.member(grouped, r.name) then r + { env: envOf(r), job: jobOf(r) } else r
          for r in all
        ],
        objects: if watchers == [] then [] else [presenceOf(proto, p, lead.name)],
      };

// needLifetime: p, when it has the Job lifetime parameters that the Job
// role r takes (or ts.checks is off); lifetimeMissing: the error when not.
local isWhat(r) = 'roles: role ' + r.name + ' is ' + (if r.kind == 'Job' then 'a Job' else 'an Indexed Job');
local needLifetime(p, r) = batch.need(p, isWhat(r));
local lifetimeMissing(p, r) = batch.missing(p, isWhat(r));

// A Job's lifetime is p's (batch.params, checked by the callers): the
// deadline and the TTL, and the retries of the lead (per index with
// retryPerIndex). With retries, the other roles' Jobs replace a lost pod
// as often (an Indexed Job each index on its own, failing as soon as one
// has failed for good), so that the lead's next attempt finds them all;
// without, they never retry.
//
// TRAINSONNET_RESTARTS, in the pods of a Job that retries each index on
// its own: how often the pod's index has failed before (0 at first), the
// count the Job controller keeps on the pod, for a program that resumes.
local restarts = {
  name: 'TRAINSONNET_RESTARTS',
  valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-index-failure-count']" } },
};

// In a JobSet (set: the replicated Job of role r, jobsetOf below) the set's
// restarts are the retries: every role is an Indexed Job of count pods (a
// Job role one) that never retries (backoffLimit 0, the per-index fields of
// r.job dropped) and ignores disruptions; activeDeadlineSeconds bounds each
// attempt, the TTL is the set's; TRAINSONNET_RESTARTS counts the set's
// restarts where the Jobs form counts the index's failures.
local setRestarts = {
  name: 'TRAINSONNET_RESTARTS',
  valueFrom: { fieldRef: { fieldPath: "metadata.labels['jobset.sigs.k8s.io/restart-attempt']" } },
};

local workloadOf(proto, p, r0, set=false) =
  local perIndex = r0.kind == 'IndexedJob' && (r0.retryPerIndex || !r0.lead && p.backoffLimit > 0);
  local r = if perIndex then r0 + { env: r0.env + [if set then setRestarts else restarts] } else r0;
  local template = common.podTemplate(proto, p, r.name, podSpecOf(p, r));
  local metadata = common.metadata(proto, p, p.name + '-' + r.name, r.name);
  if set then
    local pods = if r.kind == 'IndexedJob' then r.count else 1;
    {
      name: r.name,
      replicas: 1,
      template: {
        metadata: { labels: metadata.labels },
        spec: {
          completionMode: 'Indexed',
          completions: pods,
          parallelism: pods,
          backoffLimit: 0,
          [if p.activeDeadlineSeconds != null then 'activeDeadlineSeconds']: p.activeDeadlineSeconds,
          podFailurePolicy: batch.podFailurePolicy(),
          template: template,
        } + { [k]: r.job[k] for k in std.objectFields(r.job) if k != 'maxFailedIndexes' && k != 'backoffLimitPerIndex' },
      },
    }
  else if r.kind == 'Deployment' then {
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
  else
    local retries = p.backoffLimit;
    local follower = perIndex && !r.retryPerIndex;
    {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: metadata,
      spec: batch.spec(p, if perIndex then null else retries) + {
        [if perIndex then 'backoffLimitPerIndex']: retries,
        [if follower then 'maxFailedIndexes']: 0,
        [if r.kind == 'IndexedJob' then 'completionMode']: 'Indexed',
        [if r.kind == 'IndexedJob' then 'completions']: r.count,
        [if r.kind == 'IndexedJob' then 'parallelism']: r.count,
        template: template,
      } + r.job,
    };

// The job's headless Service <name>. It gives every pod of the roles with
// dns a stable name as soon as the pod has an address
// (publishNotReadyAddresses: peers find each other while starting), and
// lists their ports.
local serviceOf(proto, p, rs) =
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
  };

// Kueue (p.queue): the job's workloads ws, each admitted with all the
// others or not at all, as one Kueue workload.
//   - One Job: Kueue's Job integration. The Job carries the queue label
//     and is created suspended; Kueue resumes it once admitted and suspends
//     it again to evict it (the Job deletes its pods, counting no failure).
//     A suspended Job's activeDeadlineSeconds starts again when resumed, so
//     time queued never counts.
//   - One Deployment: Kueue's Deployment integration (its label): each pod
//     is admitted on its own, as a pod group of one.
//   - More workloads: one pod group. Every pod template carries the queue
//     and the group's name (the job's) and the number of pods in the
//     group; the workloads themselves carry no queue label, or Kueue would
//     admit each Job apart. Kueue holds every pod at its scheduling gate
//     until it admits the group; to evict it, it marks the pods
//     TerminationTarget and deletes them (batch.libsonnet ignores that
//     failure), and the Jobs make new ones that wait in the queue again.
//     The pods say that their owner manages them (pod-suspending-parent,
//     as Kueue's Deployment and StatefulSet integrations mark theirs, with
//     the managed label): Kueue then puts no finalizer on them, so that
//     deleting the job (or its Jobs' TTL) deletes its pods, which frees
//     its workload and quota. With Kueue's own finalizer a deleted pod of
//     a group that has not finished stays until its workload is deleted
//     (Kueue waits for a replacement), and with it the Jobs and the quota.
//     A failed pod that its Job keeps still holds its share of the quota
//     until the Jobs are deleted: the warning says to set a TTL.
//     The Jobs run while their pods wait, so a Job's activeDeadlineSeconds
//     would count the time queued: its pods get it instead (a pod's counts
//     from its start, once admitted).
local kueue = 'kueue.x-k8s.io/';
local podsOf(w) =
  if w.kind == 'Deployment' then std.get(w.spec, 'replicas', 1)
  else
    local n = std.get(w.spec, 'parallelism', 1);
    if std.objectHas(w.spec, 'completions') then std.min(n, w.spec.completions) else n;
local queueLabels(p) = {
  [kueue + 'queue-name']: p.queue,
  [if p.workloadPriorityClass != null then kueue + 'priority-class']: p.workloadPriorityClass,
};
local queued(p, ws) =
  local labels = queueLabels(p);
  if std.length(ws) == 1 then [
    ws[0] + { metadata+: { labels+: labels } } + (if ws[0].kind == 'Job' then { spec+: { suspend: true } } else {}),
  ] else
    local group = labels + { [kueue + 'pod-group-name']: p.name, [kueue + 'managed']: 'true' };
    local annotations = {
      [kueue + 'pod-group-total-count']: std.toString(std.foldl(function(n, w) n + podsOf(w), ws, 0)),
      [kueue + 'pod-suspending-parent']: 'trainsonnet',
    };
    local grouped(w) =
      local deadline = if w.kind == 'Job' then std.get(w.spec, 'activeDeadlineSeconds', null);
      w + {
        spec+: {
          [if deadline != null then 'activeDeadlineSeconds']:: deadline,
          template+: {
            metadata+: { labels+: group, annotations+: annotations },
            spec+: { [if deadline != null then 'activeDeadlineSeconds']: deadline },
          },
        },
      };
    local out = [grouped(w) for w in ws];
    if p.ttlSecondsAfterFinished != null || std.length([w for w in ws if w.kind == 'Job']) == 0 then out
    else [ts.warn(out[0], [
      'queue: Kueue keeps the quota of a failed pod of this job (one pod group of several Jobs) until the pod is deleted, waiting for its Job to replace it: set ttlSecondsAfterFinished to have the Jobs and their pods deleted that long after they end',
    ])] + out[1:];

// The job as one JobSet (batch.jobset(p)): the same roles, and their
// lifetime relation said as the JobSet's policies instead of a protocol
// in the pods. Each role is a replicated Job of one Indexed Job
// <name>-<role>-0 (count pods; a Job role one), its pods named
// <name>-<role>-0-<i> through the JobSet's headless Service <name>
// (network: the controller makes it and owns it, publishing pods that
// are not ready yet, as the Jobs form's does). The lead's success ends the
// set (successPolicy), and the controller then deletes the other roles'
// Jobs, so nothing in the pods watches the lead or says the job is over:
// runtime.run's watch, hearEnd, tellEnd and group go from the commands
// (the runtime stays: it hands the controller's SIGTERM on to the command,
// which as the container's first process would ignore it and hold its pod
// for the grace period), and the end's env from the env. A failed Job
// fails the set's attempt: the controller deletes every Job and its pods,
// then makes them again (BlockingRecreate), p.backoffLimit times
// (failurePolicy.maxRestarts); each Job is workloadOf's replicated Job. A
// Job past activeDeadlineSeconds fails the set for good. A role with after
// starts once the role it names is ready (startupPolicy InOrder).
local endEnvNames = [e.name for e in runtime.endEnv('', 0, 1)];
local unrelatedCommand(cmd) =
  if runFlags(cmd) == null then cmd
  else
    local n = std.length(cmd);
    local go(i, kept) =
      if i >= n || cmd[i] == '--' then { kept: kept, rest: cmd[i + 1:] }
      else go(i + 2, kept + (if std.member(runtime.relationFlags, cmd[i]) then [] else [cmd[i], cmd[i + 1]]));
    local split = go(3, []);
    cmd[:3] + split.kept + ['--'] + split.rest;
local unrelated(r) =
  local cmd = unrelatedCommand(r.command);
  local env = [e for e in r.env if !std.member(endEnvNames, e.name)];
  if cmd == r.command && std.length(env) == std.length(r.env) && r.follows == null then r
  else r + { command: cmd, env: env, follows: null };

// What a JobSet takes of the roles (their one lead checked by objects):
// no Deployment (a JobSet holds Jobs), after naming another role; the
// lead, or the one-line error.
local jobsetOK(all) =
  local names = [r.name for r in all];
  local deployments = [r.name for r in all if r.kind == 'Deployment'];
  local strays = [r for r in all if r.after != null && (!std.member(names, r.after) || r.after == r.name)];
  if deployments != [] then ts.fail('roles.objects: role ' + deployments[0] + ' is a Deployment, and a JobSet (jobset) holds Jobs: the prototype refuses jobset where a role is long-lived')
  else if strays != [] then
    local r = strays[0];
    ts.fail('roles.objects: role ' + r.name + ' starts after ' + r.after + ', which is not another role of this job (' + std.join(', ', names) + ')')
  else [r for r in all if r.lead][0];

local jobsetOf(proto, p, all) =
  local lead = jobsetOK(all);
  local rs = [unrelated(r) for r in all];
  // a role that starts after another comes after it: InOrder starts the
  // replicated Jobs in their order, each once the one before is ready
  local afters = [r for r in rs if r.after != null];
  local labels = if p.queue == null then {} else queueLabels(p);
  {
    apiVersion: 'jobset.x-k8s.io/v1alpha2',
    kind: 'JobSet',
    metadata: common.metadata(proto, p, p.name) + (if labels == {} then {} else { labels+: labels }),
    spec: {
      // Kueue resumes a queued set once it admits all of it, and
      // suspends it again to evict it
      [if p.queue != null then 'suspend']: true,
      [if p.ttlSecondsAfterFinished != null then 'ttlSecondsAfterFinished']: p.ttlSecondsAfterFinished,
      network: { enableDNSHostnames: true, subdomain: p.name, publishNotReadyAddresses: true },
      successPolicy: { operator: 'All', targetReplicatedJobs: [lead.name] },
      failurePolicy: {
        maxRestarts: p.backoffLimit,
        restartStrategy: 'BlockingRecreate',
        rules: [{ name: 'deadline', action: 'FailJobSet', onJobFailureReasons: ['DeadlineExceeded'] }],
      },
      startupPolicy: { startupPolicyOrder: if afters == [] then 'AnyOrder' else 'InOrder' },
      replicatedJobs: [workloadOf(proto, p, r, set=true) for r in [r for r in rs if r.after == null] + afters],
    },
  };

{
  // The role defaults: every field of a role but name and image.
  defaults:: defaults,

  // pullPolicy(image, policy): policy, or where it is null (the
  // imagePullPolicy parameters' default) the one Kubernetes gives image:
  // Always for :latest or no tag, else IfNotPresent. Every container a
  // role makes takes its policy this way.
  pullPolicy(image, policy):: pullPolicy(image, policy),

  // role(r): role r with the defaults, checked: a clear error for a
  // missing name or image, an unknown field, or fields that do not go
  // together (job on a Deployment).
  role(r):: role(r),

  // params(who, gpu, exec, image): the typed parameters of one role: its
  // gpu, cpu and memory limits, nodeSelector and tolerations; exec (a
  // doc) and image (a default) when the role has them. gpu is the
  // default GPU count (null: unset, meaning another value applies). No
  // env: the top-level env is common.params'; a role with a group of its
  // own adds roles.envParams(who) there.
  params(who, gpu=0, exec=null, image=null):: ts.declare('roles.params', {
    gpu: params.int('GPUs of ' + who + ' (a limit of gpuResource).', default=gpu, min=0, max=1024),
    cpu: params.quantity('CPU limit of ' + who + '.'),
    memory: params.quantity('Memory limit of ' + who + '.', unit='bytes'),
    nodeSelector: params.map('Node labels ' + who + ' must run on.', keys='labelKey', values='labelValue'),
    tolerations: params.object('Tolerations of ' + who + '.', 'core/v1.Toleration', list=true),
    [if exec != null then 'exec']: params.string(exec, format='nonEmpty'),
    [if image != null then 'image']: params.string('Container image of ' + who + '.', default=image, format='image'),
  }),

  // envParams(who): env, the environment variables of one role on top of
  // the common env: for the group of a role's own parameters
  // (worker: params.group('...', roles.params('each worker') +
  // roles.envParams('each worker'))).
  envParams(who):: ts.declare('roles.envParams', {
    env: params.map('Environment variables of ' + who + ' only, on top of env.', keys='envName'),
  }),

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
  // "2", "10" and "1024"; generator/param/resources.go), so this counts without
  // parsing suffixes, at any size (std.parseInt fails above 2^53).
  gpus(resources, gpuResource='nvidia.com/gpu')::
    local limits = if resources == null then {} else std.get(resources, 'limits', {});
    local q = std.get(limits, gpuResource, 0);
    if std.isNumber(q) then q
    else if std.isString(q) && q != '' && std.stripChars(q, '0123456789') == '' then
      std.foldl(function(n, c) n * 10 + std.codepoint(c) - 48, std.stringChars(q), 0)
    else ts.fail('roles.gpus: the ' + gpuResource + ' limit ' + std.toString(q) + ' is not a whole number written in digits'),

  // host: the DNS name of a pod through the job's headless Service, short
  // enough to work in any namespace: <host name>.<name>.
  host(p, hostname):: hostname + '.' + p.name,
  // podName(p, role, index): the host name of role's pod, <name>-<role>,
  // or of pod index of an IndexedJob, <name>-<role>-<index>; podHost: its
  // DNS name (host); podPrefix: what an IndexedJob's names start with,
  // for ts.indexedLines and ts.indexedList. Prototypes name pods by these
  // alone, so that a form that names them otherwise (a JobSet's) changes
  // them in one place.
  podName(p, role, index=null):: podNameOf(p, role, index),
  podHost(p, role, index=null):: $.host(p, podNameOf(p, role, index)),
  podPrefix(p, role):: podPrefixOf(p, role),
  // group(p, role, count): runtime.run's group for an IndexedJob role of
  // count pods (dns: true), led by its index 0; roles.objects checks it.
  group(p, role, count):: groupOf(p, role, count),

  // container(p, r): the main container of role r.
  container(p, r):: containerOf(common.need(p, 'roles.container'), role(r)),

  // podSpec(p, r): the pod spec of role r: the common pod settings
  // (common.podSpec), its main container, init containers and sidecars,
  // volumes, scheduling and host names.
  podSpec(p, r):: podSpecOf(common.need(p, 'roles.podSpec'), role(r)),

  // podTemplate(proto, p, r): the pod template of role r, labels
  // included: what a custom resource's replica spec holds
  // (template: roles.podTemplate(proto, p, {name: 'worker', image: p.image})).
  podTemplate(proto, p, r)::
    local rr = role(r);
    common.podTemplate(proto, p, rr.name, podSpecOf(common.need(p, 'roles.podTemplate'), rr)),

  // workload(proto, p, r): the Job, Indexed Job or Deployment of role r.
  // A Job has p's lifetime (batch.params) and p's retries.
  workload(proto, p, r)::
    local rr = role(r);
    workloadOf(proto, if rr.kind == 'Deployment' then common.need(p, 'roles.workload') else needLifetime(common.need(p, 'roles.workload'), rr), rr),

  // service(proto, p, rs): the job's headless Service <name>, which
  // gives every pod of the roles with dns a stable name as soon as the pod
  // has an address (publishNotReadyAddresses: peers find each other while
  // starting), and lists their ports; null when no role has dns.
  service(proto, p, rs):: serviceOf(proto, common.need(p, 'roles.service'), [role(r) for r in rs]),

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
  presenceName(p, role):: presenceNameOf(p, role),
  presence(proto, p, role):: presenceOf(proto, p, role),

  // The job's lifetime as a relation between its roles, read from the
  // roles' commands (lib/runtime.libsonnet's run): a role whose command
  // watches roles.presenceName(p, L) follows the lead L and stops when it
  // has gone; with hearEnd it also stops as soon as L says on its end
  // port (tellEnd) that the job is over. objects makes what the relation
  // needs and checks what it cannot make, one line each.
  //   made: L's presence Service (the name the followers watch), and in
  //     the env of L and of every role that hears its end,
  //     runtime.endEnv(its name, the pods that hear it, p.backoffLimit)
  //     where a role's env does not have it yet;
  //   checked: a follower of a role that is not the lead (or of no role),
  //     a lead that is a Deployment (it never ends), an end port told by
  //     a role that is not the lead, one that collides with a port still
  //     busy when the lead's command has ended (its sidecars'; with host
  //     network, every role's), followers that hear another port than the lead tells or a
  //     lead that tells none, a role that runs the runtime without its
  //     volume and mount (runtime.volume, runtime.mount), and an endEnv
  //     that counts other followers than hear the end.
  // objects(proto, p, rs): the job's headless Service (null when no role
  // has dns) and every role's workload, admitted as one by Kueue when p
  // has a queue (see queued above); with jobset (batch.jobset), the one
  // JobSet of the roles instead (see jobsetOf above), queued by its label.
  // One role of a job with Jobs is the
  // lead (lead: true): when p has backoffLimit, objects refuses a job
  // without one, or with two.
  objects(proto, p, rs)::
    local all = [role(r) for r in rs];
    local leads = [r.name for r in all if r.lead];
    local jobs = [r for r in all if r.kind != 'Deployment'];
    local q = common.need(p, 'roles.objects');
    if std.length(leads) > 1 then
      ts.fail('roles.objects: roles ' + std.join(' and ', leads) + ' say lead: true, and a job has one lead: the role whose end ends the job, which alone is retried')
    else if leads == [] && jobs != [] then
      if !batch.declared(p) then lifetimeMissing(p, jobs[0])
      else ts.fail('roles.objects: none of the roles ' + std.join(', ', [r.name for r in all])
                   + ' says lead: true, so backoffLimit (batch.params) would retry nothing: add lead: true to the role whose end ends the job')
    else if ts.checks && jobs != [] && !batch.declared(p) then lifetimeMissing(p, jobs[0])
    else if batch.jobset(q) then [jobsetOf(proto, q, all)]
    else
      local life = lifetimeOf(proto, q, all);
      local ws = [workloadOf(proto, q, r) for r in life.roles];
      [serviceOf(proto, q, all)] + life.objects + (if q.queue == null then ws else queued(q, ws)),

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
  // In a JobSet (batch.jobset) the names are longer, <name>-<role>-0-<i>,
  // and the JobSet webhook holds the pods' own names, those and five
  // characters more, to 63.
  nameFits(p, rs)::
    local set = batch.jobset(p);
    local indexed(r) = 'kind' in r && r.kind == 'IndexedJob';
    local suffix(r) = nameOf(set, '', r.name, if indexed(r) then r.count - 1);
    local longest = if std.length(rs) == 1 then rs[0]
    else std.foldl(function(a, r) if std.length(suffix(r)) > std.length(suffix(a)) then r else a, rs[1:], rs[0]);
    local max = 63 - std.length(suffix(longest)) - (if set then 6 else 0);
    local hosts = if 'dns' in longest then longest.dns else !('kind' in longest && longest.kind == 'Deployment');
    ts.check(std.length(p.name) <= max, 'name',
             'must be at most ' + max + ' characters'
             + (if indexed(longest) then ' with ' + longest.count + ' ' + longest.name + 's' else '')
             + (if set then ' in a JobSet: its pods\' names such as ' + p.name + suffix(longest) + '-abcde must fit in 63'
                else ': ' + (if hosts then 'pod host names' else 'names') + ' such as ' + p.name + suffix(longest) + ' must fit in 63')),

  // hostNetworkPort: a port that host-network pods bind must not be one
  // the node itself uses (22: the node's sshd). who: "the workers share".
  hostNetworkPort(param, port, hostNetwork, who, note='')::
    ts.check(!(hostNetwork && port == 22), param,
             'must not be 22 with useHostNetwork: ' + who + ' their node\'s network, where the node\'s own sshd has port 22' + note),

  // scratch(dir): node-local scratch space at dir, an emptyDir: {volume,
  // mount} for a role's volumes and mounts.
  scratch(dir):: {
    volume: { name: 'trainsonnet-scratch', emptyDir: {} },
    mount: { name: 'trainsonnet-scratch', mountPath: dir },
  },

  // /dev/shm as a memory-backed volume in a role's pods: the container
  // runtime's is 64 MiB, too small for NCCL, Open MPI's shared memory and
  // DataLoader workers. shmParam(who, users) declares shmSize (users: who
  // needs more); shm(p) is the volume and mount, none when the user's
  // volumeMounts mount /dev/shm themselves; shmCheck(p) refuses a size for
  // a volume that is not ours.
  shmParam(who, users):: {
    shmSize: params.quantity('Size limit of /dev/shm in ' + who + ': a memory-backed volume (' + users + ' need more than the container runtime\'s 64 MiB), counted against the pod\'s memory. Unset: no limit of its own. A volumeMount of your own at /dev/shm replaces it.', unit='bytes'),
  },
  shm(p)::
    if std.member([m.mountPath for m in p.volumeMounts], '/dev/shm') then { volumes: [], mounts: [] }
    else {
      volumes: [{ name: 'trainsonnet-shm', emptyDir: { medium: 'Memory', [if p.shmSize != null then 'sizeLimit']: p.shmSize } }],
      mounts: [{ name: 'trainsonnet-shm', mountPath: '/dev/shm' }],
    },
  shmCheck(p):: ts.check(p.shmSize == null || $.shm(p).volumes != [], 'shmSize', 'your volumeMounts mount /dev/shm: size that volume instead'),

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
