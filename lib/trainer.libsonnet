// trainer: what a Kubeflow Trainer v2 TrainJob says of its pods, read
// with the runtime it names, as trainsonnet's typed parameters: the pieces
// of a prototype's from function of a TrainJob (ts.prototype's from;
// generator/keys.go puts the runtime, the Trainer's stock one or the
// user's file, under the object's key runtime).
//
// Needs:    nothing (plain objects, as the user's files have them).
// Declares: no parameter.
// Returns:  trainer.job(o, reserved, jobName) {numNodes, container (the
//           trainer's, as the Trainer runs it), pod, params, fields,
//           warnings, errors} for the replicated Job jobName of the
//           runtime (null: the trainer's); trainer.pod(o, name) the
//           pod of another of its replicated Jobs, patched.
//
// The Trainer builds a replicated Job's pod from the runtime's template,
// the TrainJob's runtimePatches (v2.2 and later) or podTemplateOverrides
// (v2.1) of that replicated Job, and, in the trainer's container (node),
// the TrainJob's trainer: image, command, args, env (appended),
// resourcesPerNode (replacing). What trainsonnet cannot carry is said,
// with what to do; what it refuses (an initializer step, a runtime of
// steps before the trainer, MultiKueue) is an error naming the field.

local kubeflow = import 'kubeflow.libsonnet';

local ancestor = 'trainer.kubeflow.org/trainjob-ancestor-step';
// the replicated Jobs a runtime of a framework trainsonnet runs may have
local known = ['node', 'launcher'];

local at(o, path, default=null) = local v = std.foldl(function(acc, k) if std.isObject(acc) then std.get(acc, k) else null, path, o); if v == null then default else v;

// mergeByName(a, b): lists of named entries, b's merged over a's
local mergeByName(a, b, merge) =
  [if std.length([y for y in b if y.name == x.name]) > 0 then merge(x, [y for y in b if y.name == x.name][0]) else x for x in a]
  + [y for y in b if std.length([x for x in a if x.name == y.name]) == 0];

// a container patch: env and volumeMounts appended, securityContext merged
local patchContainer(c, p) = c + {
  [if std.objectHas(p, 'env') then 'env']: std.get(c, 'env', []) + p.env,
  [if std.objectHas(p, 'volumeMounts') then 'volumeMounts']: std.get(c, 'volumeMounts', []) + p.volumeMounts,
  [if std.objectHas(p, 'securityContext') then 'securityContext']: std.get(c, 'securityContext', {}) + p.securityContext,
};

// a pod spec patch, as the Trainer's strategic merge applies it
local patchPod(spec, p) = spec + {
  [if std.objectHas(p, k) then k]: std.get(spec, k, {}) + p[k]
  for k in ['nodeSelector', 'securityContext']
} + {
  [if std.objectHas(p, k) then k]: p[k]
  for k in ['serviceAccountName', 'affinity', 'terminationGracePeriodSeconds']
} + {
  [if std.objectHas(p, k) then k]: std.get(spec, k, []) + p[k]
  for k in ['tolerations', 'imagePullSecrets', 'schedulingGates']
} + {
  [if std.objectHas(p, 'volumes') then 'volumes']: mergeByName(std.get(spec, 'volumes', []), p.volumes, function(x, y) y),
  [if std.objectHas(p, 'containers') then 'containers']: mergeByName(std.get(spec, 'containers', []), p.containers, patchContainer),
  [if std.objectHas(p, 'initContainers') then 'initContainers']: mergeByName(std.get(spec, 'initContainers', []), p.initContainers, patchContainer),
};

// patches(o, name): the pod template patches of replicated Job name, in
// order: runtimePatches' (v2.2+), else podTemplateOverrides' (v2.1)
local patches(o) =
  local spec = std.get(o, 'spec', {});
  [
    {
      manager: p.manager,
      jobset: at(p, ['trainingRuntimeSpec', 'template', 'metadata'], {}),
      jobs: {
        [r.name]: { job: at(r, ['template', 'metadata'], {}), pod: at(r, ['template', 'spec', 'template'], {}) }
        for r in at(p, ['trainingRuntimeSpec', 'template', 'spec', 'replicatedJobs'], [])
      },
    }
    for p in std.get(spec, 'runtimePatches', [])
  ] + [
    {
      manager: 'podTemplateOverrides',
      jobset: {},
      jobs: { [t.name]: { job: {}, pod: { metadata: std.get(p, 'metadata', {}), spec: std.get(p, 'spec', {}) } } for t in p.targetJobs },
    }
    for p in std.get(spec, 'podTemplateOverrides', [])
  ];

local rjobs(o) = at(o, ['runtime', 'spec', 'template', 'spec', 'replicatedJobs'], []);
local rjob(o, name) = local l = [r for r in rjobs(o) if r.name == name]; if l == [] then null else l[0];
local trainerName(o) =
  local l = [r.name for r in rjobs(o) if at(r, ['template', 'metadata', 'labels', ancestor]) == 'trainer'];
  if l != [] then l[0] else 'node';

// The variables the Trainer's mpi policy sets in the launcher (and
// refuses in trainer.env).
local mpiReserved = ['OMPI_MCA_orte_default_hostfile', 'OMPI_MCA_orte_keep_fqdn_hostnames', 'OMPI_MCA_orte_set_default_slots', 'OMPI_MCA_plm_rsh_args'];

{
  ancestor: ancestor,

  // mpi(o): a TrainJob on a runtime of the mpi policy, as the launcher
  // and the hosts of ranks: job(o) of the launcher (the trainer's
  // replicated Job), the hosts the Trainer makes (the launcher, a node
  // with runLauncherAsNode, and max(numNodes - 1, 1) nodes; else
  // numNodes nodes), the slots of each (numProcPerNode, else the GPUs),
  // the command's words, and what differs from the Trainer said.
  mpi(o)::
    local t = $.job(o, mpiReserved);
    local tr = std.get(std.get(o, 'spec', {}), 'trainer', {});
    local pol = std.get(t.policy, 'mpi', {});
    local asNode = std.get(pol, 'runLauncherAsNode', false);
    local gpu = std.get(t.params, 'gpu', 0);
    local procs = if std.isNumber(std.get(tr, 'numProcPerNode')) then tr.numProcPerNode else std.get(pol, 'numProcPerNode', 1);
    local node = $.pod(o, 'node');
    local nc = kubeflow.container(std.get(node, 'spec', {}), 'node');
    local nwords = if nc == null then [] else kubeflow.words(nc);
    local c = t.container;
    t + {
      asNode: asNode,
      words: if c == null then [] else kubeflow.words(c),
      entrypoint: c != null && std.get(c, 'command') == null,
      slots: if procs == 1 && gpu > 1 then gpu else procs,
      fields+: {
        slots: if std.get(tr, 'numProcPerNode') != null then 'spec.trainer.numProcPerNode' else 'runtime ' + t.runtime + ', mlPolicy.mpi.numProcPerNode',
        exec: 'spec.trainer.command',
        launcherAsWorker: 'runtime ' + t.runtime + ', mlPolicy.mpi.runLauncherAsNode',
      },
      warnings+: [
        if nc != null then
          'runtime ' + t.runtime + ', replicatedJobs[node]: ' + (if nwords == [] then 'the image\'s ENTRYPOINT' else kubeflow.shell(nwords)) + ' is not run: the workers run trainsonnet\'s sshd (ssh.port), which the launcher reaches with the job\'s key once every worker answers (initTimeout)',
        if std.objectHas(pol, 'sshAuthMountPath') then
          'runtime ' + t.runtime + ', mlPolicy.mpi.sshAuthMountPath: not used: the key is mounted where trainsonnet\'s ssh client and sshd read it, whatever the user\'s home',
        if asNode && t.numNodes == 1 then
          'spec.trainer.numNodes 1: the Trainer made two hosts of it (its launcher, a node, and one node); here the one pod is the launcher and the only host',
        if nc != null && c != null && std.get(nc, 'image') != null && std.get(c, 'image') != nc.image then
          'runtime ' + t.runtime + ', replicatedJobs[node]: the image ' + nc.image + ' is not run: the Trainer gave the trainer\'s image to the launcher alone; here every pod runs ' + c.image,
        'the Trainer\'s launcher Job retried ' + t.backoff + ' times (its backoffLimit) and one failed node Job failed the TrainJob; here the launcher is retried backoffLimit times, and a lost worker is made again by its Indexed Job',
      ],
      errors+: [
        kubeflow.refuse(std.get(pol, 'mpiImplementation', 'OpenMPI') == 'OpenMPI', 'runtime ' + t.runtime + ', mlPolicy.mpi.mpiImplementation',
                        std.get(pol, 'mpiImplementation', '') + ' is not rendered: trainsonnet sets up Open MPI (its hostfile and OMPI_MCA_* settings), as the Trainer does'),
      ],
    },

  // pod(o, name): replicated Job name's pod template, the TrainJob's
  // patches applied: {metadata, spec}
  pod(o, name)::
    local base = at(rjob(o, name), ['template', 'spec', 'template'], {});
    std.foldl(
      function(pod, p)
        if !std.objectHas(p.jobs, name) then pod
        else {
          metadata: std.get(pod, 'metadata', {}) + {
            [f]: std.get(std.get(pod, 'metadata', {}), f, {}) + std.get(std.get(p.jobs[name].pod, 'metadata', {}), f, {})
            for f in ['labels', 'annotations']
          },
          spec: patchPod(std.get(pod, 'spec', {}), std.get(p.jobs[name].pod, 'spec', {})),
        },
      patches(o),
      base
    ),

  // job(o, reserved, name): the TrainJob o (with its runtime) as the pods
  // of replicated Job name (null: the trainer's); reserved are the
  // variables the framework's pods define, which the Trainer refuses in
  // trainer.env.
  job(o, reserved=[], name=null)::
    local spec = std.get(o, 'spec', {});
    local tr = std.get(spec, 'trainer', {});
    local rt = o.runtime;
    local rtName = rt.metadata.name;
    local rjName = if name == null then trainerName(o) else name;
    local isTrainer = rjName == trainerName(o);
    local pol = std.get(rt.spec, 'mlPolicy', {});
    local pod = $.pod(o, rjName);
    local cs = std.get(pod.spec, 'containers', []);
    local base = kubeflow.container(pod.spec, 'node');
    // the trainer's fields go to the trainer's container (node)
    local c = if !isTrainer || base == null then base else base + {
      [if std.objectHas(tr, 'image') then 'image']: tr.image,
      [if std.objectHas(tr, 'command') then 'command']: tr.command,
      [if std.objectHas(tr, 'args') then 'args']: tr.args,
      [if std.objectHas(tr, 'env') then 'env']: std.get(base, 'env', []) + tr.env,
      [if std.objectHas(tr, 'resourcesPerNode') then 'resources']: tr.resourcesPerNode,
    };
    local rs = { template: { metadata: std.get(pod, 'metadata', {}), spec: pod.spec + { containers: [if x.name == c.name then c else x for x in cs] } } };
    local where = 'runtime ' + rtName + ', replicatedJobs[' + rjName + ']';
    local pk = kubeflow.pod(rs, 'node', where);
    local md = kubeflow.meta(o);
    local jsMeta = std.get(rt.spec.template, 'metadata', {});
    // labels and annotations the Trainer put on the JobSet, its Jobs or
    // the pods (v2.1's spec.labels and spec.annotations, the runtime's
    // and the patches'): trainsonnet's labels and annotations are every
    // object's and pod's
    local extra(f) = std.foldl(function(acc, m) acc + std.get(m, f, {}), [
      jsMeta,
      at(rjob(o, rjName), ['template', 'metadata'], {}),
      { [f]: std.get(spec, f, {}) },
    ] + [p.jobset for p in patches(o)] + [p.jobs[rjName].job for p in patches(o) if std.objectHas(p.jobs, rjName)] + [std.get(pod, 'metadata', {})], {});
    local without(m, ks) = { [k]: m[k] for k in std.objectFields(m) if !std.member(ks, k) };
    local labels = without(extra('labels'), [ancestor]);
    local annotations = extra('annotations');
    local limits = std.get(std.get(c, 'resources', {}), 'limits', {});
    local envNames = [e.name for e in std.get(tr, 'env', [])];
    local others = [r.name for r in rjobs(o) if !std.member(known, r.name)];
    // the Job's retries the runtime gives, else the Job API's default
    local backoff = std.get(std.get(std.get(rjob(o, rjName), 'template', {}), 'spec', {}), 'backoffLimit', 6);
    {
      runtime: rtName,
      policy: pol,
      numNodes: if std.get(tr, 'numNodes') != null then tr.numNodes else std.get(pol, 'numNodes', 1),
      container: c,
      pod: pod,
      replicatedJob: rjob(o, rjName),
      backoff: backoff,
      // indexed(lead): what differs from the Trainer for a job of one
      // Indexed Job that ends with lead (worker 0)
      indexed(lead):: [
        'the Trainer completed the TrainJob once every node succeeded; here the job completes when ' + lead + ' does, and the other pods still running are stopped then',
        'the Trainer gave the Job backoffLimit ' + backoff + ': restarts of any pod counted against it, and one Job that failed failed the TrainJob; here each pod is retried ' + std.min(backoff, 100) + ' times on its own (backoffLimit), disruptions not counted',
      ],
      // no GPU in the node's resources is none: a prototype's own
      // default (deepspeed's 1) is not the Trainer's
      params: pk.params + md.params + { gpu: std.get(pk.params, 'gpu', 0) } + {
        [if std.get(spec, 'activeDeadlineSeconds') != null then 'activeDeadlineSeconds']: spec.activeDeadlineSeconds,
        [if std.get(rt.spec.template.spec, 'ttlSecondsAfterFinished') != null then 'ttlSecondsAfterFinished']: rt.spec.template.spec.ttlSecondsAfterFinished,
        backoffLimit: std.min(backoff, 100),
        [if labels != {} then 'labels']: std.get(md.params, 'labels', {}) + labels,
        [if annotations != {} then 'annotations']: std.get(md.params, 'annotations', {}) + annotations,
      },
      fields: pk.fields + md.fields + {
        image: if std.objectHas(tr, 'image') then 'spec.trainer.image' else where + '.image',
        env: 'spec.trainer.env',
        activeDeadlineSeconds: 'spec.activeDeadlineSeconds',
        command: 'spec.trainer.command',
        args: 'spec.trainer.args',
        workers: if std.get(tr, 'numNodes') != null then 'spec.trainer.numNodes' else 'runtime ' + rtName + ', mlPolicy.numNodes',
      } + {
        [k]: 'spec.trainer.resourcesPerNode.limits.' + k
        for k in ['cpu', 'memory']
        if std.objectHas(tr, 'resourcesPerNode')
      } + {
        [if std.objectHas(tr, 'resourcesPerNode') && std.objectHas(pk.fields, 'gpu') then 'gpu']: 'spec.trainer.resourcesPerNode.limits',
      },
      warnings: pk.warnings + md.warnings + [
        if std.get(spec, 'suspend') == true then
          'spec.suspend: with queue, the Jobs are created suspended and Kueue resumes them once admitted; without, apply them suspended with a kustomize patch (spec.suspend: true)',
        if std.get(rt.spec, 'podGroupPolicy') != null then
          'runtime ' + rtName + ', podGroupPolicy: not carried (no ' + std.join(', ', std.objectFields(rt.spec.podGroupPolicy)) + ' PodGroup): with queue, Kueue admits every pod of the job together; for a gang scheduler set schedulerName and add its PodGroup with a kustomize overlay',
        if labels != {} || annotations != {} then
          'labels and annotations of the runtime, its patches or spec.labels/annotations (' + std.join(', ', std.objectFields(labels) + std.objectFields(annotations)) + '): carried to every object and pod of the job (the Trainer put each on the JobSet, its Jobs or its pods): drop them with a kustomize patch where they must not be',
      ] + [
        'runtime ' + rtName + ', template.spec.' + k + ': not carried: trainsonnet ' + {
          failurePolicy: 'retries each pod on its own (backoffLimit) rather than the whole set',
          coordinator: 'has no coordinator label',
          network: 'names the pods through its own headless Service',
          successPolicy: 'ends the job with its lead',
          startupPolicy: 'orders the pods\' start itself (the launcher waits for the workers)',
          suspend: 'suspends with queue',
          managedBy: 'has no controller',
        }[k]
        for k in std.objectFields(rt.spec.template.spec)
        if !std.member(['replicatedJobs', 'network', 'successPolicy', 'startupPolicy', 'ttlSecondsAfterFinished'], k)
      ] + [
        'spec.runtimePatches[' + p.manager + ']: replicatedJobs ' + j + ': no such replicated Job in runtime ' + rtName + ': not carried'
        for p in patches(o)
        for j in std.objectFields(p.jobs)
        if rjob(o, j) == null
      ],
      errors: [
        kubeflow.refuse(std.get(spec, 'initializer') == null, 'spec.initializer',
                        'trainsonnet has no initializer step (a Job that downloads the dataset or model before the trainer): put them on the job\'s storage (storage.*) beforehand, or download them in the training script'),
        kubeflow.refuse(others == [], 'spec.runtimeRef.name',
                        'runtime ' + rtName + ' has replicated Jobs that run before or beside the trainer (' + std.join(', ', others) + '; torchtune\'s and the data cache\'s initializers, say), which trainsonnet has no step for: render the training as a job of its own, and run the rest before it'),
        kubeflow.refuse(std.get(spec, 'managedBy', 'trainer.kubeflow.org/trainjob-controller') == 'trainer.kubeflow.org/trainjob-controller', 'spec.managedBy',
                        'MultiKueue runs the TrainJob in another cluster, through the Trainer there: trainsonnet renders Jobs for the cluster they are applied to; apply its output to the worker cluster'),
        kubeflow.refuse(c != null, 'runtime ' + rtName + ', replicatedJobs[' + rjName + ']', 'has no container: nothing to run'),
        kubeflow.refuse(!isTrainer || std.get(c, 'command', [''])[0:1] != ['tune'], 'spec.trainer.command',
                        'tune run is torchtune\'s fine-tuning, whose command the Trainer rewrites for its recipes and model downloads: trainsonnet has no such step; run torchtune\'s distributed recipe with torchrun as the command'),
      ] + [
        kubeflow.refuse(false, 'spec.trainer.env[' + n + ']', 'is set by the runtime\'s ' + std.join(', ', [k for k in std.objectFields(pol) if k != 'numNodes']) + ' policy (the Trainer refuses it too): trainsonnet sets it from the parameters')
        for n in envNames
        if std.member(reserved, n)
      ] + [
        kubeflow.refuse(false, 'spec.runtimePatches[' + p.manager + ']: replicatedJobs ' + j + ': containers[' + x.name + '].env',
                        'the Trainer refuses env here (it is the trainer\'s: spec.trainer.env)')
        for p in patches(o)
        for j in std.objectFields(p.jobs)
        for x in at(p.jobs[j].pod, ['spec', 'containers'], [])
        if std.objectHas(x, 'env') && x.name == 'node'
      ],
    },
}
