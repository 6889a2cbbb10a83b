// meet: a job of one Indexed Job of worker pods whose program meets at
// worker 0 (a coordinator, a tracker) through variables of its framework,
// which the Kubeflow Trainer's policy of that framework gives too (jax,
// xgboost): the parameters, the worker role, the pods' runtime around the
// program as one group, and a TrainJob on the framework's runtime read as
// params. The prototype names the framework's variables and words.
//
// Needs:    nothing of p beyond what meet.params declares.
// Declares: meet.params(f): common.params, batch.params, storage.params
//           (trainDir), a role's gpu, cpu, memory, nodeSelector,
//           tolerations and exec, and workers, port, gpuResource, args,
//           entrypoint and shmSize.
// Returns:  job(proto, f): {params, from, ownEnv, validate(p),
//           warnings(p), render(p)}, the fields of ts.prototype that the
//           job makes, for the prototype to add its name, summary,
//           description and the rest to.
//
// f, the framework:
//   image, exec       the default image and exec (the image's own path)
//   execDoc           the doc of exec: what the program does with env
//   workersDoc, portDoc, shmUsers   the docs of workers, port, and what
//                     uses /dev/shm
//   reserved          the framework's variables (trainsonnet sets them:
//                     ownEnv, and refused in a TrainJob's env)
//   reservedWhy       why, for ownEnv's texts
//   port              the name of worker 0's port ('coordinator')
//   env(p)            the framework's variables, a list of EnvVar
//   lead              who worker 0 is, in words ('worker 0 (process 0)')
//   leadsWhat         what worker 0 hosts ('worker 0\'s coordinator')
//
//   local meet = import 'meet.libsonnet';
//   ts.prototype(meet.job(proto, f) + { name: proto, summary: ..., ... })

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local kubeflow = import 'kubeflow.libsonnet';
local roles = import 'roles.libsonnet';
local runtime = import 'runtime.libsonnet';
local storage = import 'storage.libsonnet';
local trainer = import 'trainer.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local params = ts.params;
local component = 'worker';

local trainDir(p) = storage.dir(p, 'trainDir');

// The command runs under the pods' runtime (lib/assets/runtime.sh), which
// hands it the SIGTERM a pod's deletion sends (a program that is the
// container's first process ignores it, and held its pod for its whole
// grace period), and, with more than one pod, as a group: once a pod is
// made again (it failed, was deleted or cut off), the others' command is
// stopped (exit 75, which the Job ignores) and all start again together,
// at once, instead of waiting in a collective for the training's own
// timeout. A JobSet needs no group: its controller makes every pod again.
// An image's ENTRYPOINT runs as it is.
local wrapped(p) = !p.entrypoint;
local grouped(p) = wrapped(p) && p.workers > 1 && !batch.jobset(p);
local configName(p) = p.name + '-config';
local config(proto, p) = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: common.metadata(proto, p, configName(p)),
  data: runtime.scriptFile,
};

local worker(f, p) =
  local store = storage.pod(p, component, [trainDir(p)]);
  local cmd = ['sh', '-c', std.join(' ', ['exec', p.exec] + [kubeflow.shell([a]) for a in p.args])];
  {
    name: component,
    kind: 'IndexedJob',
    count: p.workers,
    lead: true,
    retryPerIndex: true,
    image: p.image,
    imagePullPolicy: p.imagePullPolicy,
    ports: [{ name: f.port, port: p.port }],
    [if wrapped(p) then 'command']: runtime.run(cmd, group=if grouped(p) then roles.group(p, component, p.workers)),
    [if p.entrypoint && p.args != [] then 'args']: [kubeflow.kubelet(a) for a in p.args],
    env: f.env(p) + [
      { name: 'TRAIN_DIR', value: trainDir(p) },
    ] + common.env({ PYTHONUNBUFFERED: '1' } + p.env),
    resources: roles.resources(cpu=p.cpu, memory=p.memory, gpu=p.gpu, gpuResource=p.gpuResource),
    nodeSelector: p.nodeSelector,
    tolerations: p.tolerations,
    volumes: store.volumes + roles.shm(p).volumes + (if wrapped(p) then [runtime.volume(configName(p))] else []),
    mounts: store.mounts + roles.shm(p).mounts + (if wrapped(p) then [runtime.mount] else []),
    job: {
      // a worker that failed for good ends the job: the collectives (JAX's,
      // the allreduce of every boosting round) need every worker
      maxFailedIndexes: 0,
      // the job ends when worker 0 (process 0, the tracker's) ends
      successPolicy: { rules: [{ succeededIndexes: '0' }] },
    },
  };

// fromTrainJob: a TrainJob on the framework's runtime: its command runs
// as exec, or its args after the image's ENTRYPOINT.
local fromTrainJob(f, o) =
  local t = trainer.job(o, f.reserved);
  local c = t.container;
  local cmd = std.get(c, 'command');
  local args = std.get(c, 'args');
  local words = (if cmd == null then [] else cmd) + (if args == null then [] else args);
  {
    fields: t.fields + { exec: 'spec.trainer.command', entrypoint: 'spec.trainer.command' },
    params: t.params + {
      workers: t.numNodes,
      [if cmd != null then 'exec']: kubeflow.shell(words),
      [if cmd == null then 'entrypoint']: true,
      [if cmd == null && args != null then 'args']: args,
      port: 29500,
    },
    warnings: t.warnings + t.indexed(f.lead),
    errors: t.errors,
  };

{
  params(f):: common.params('train', f.image) + batch.params('each worker') + storage.params(['trainDir'])
              + roles.params('each worker', exec=f.execDoc) + {
    exec+: { default: f.exec },
    workers: params.int(f.workersDoc, default=2, min=1, max=1000),
    port: params.int(f.portDoc, default=29500, min=1, max=65535),
    gpuResource: params.string('Extended resource that counts GPUs.', default='nvidia.com/gpu', format='extendedResourceName'),
    args: params.list('Arguments after exec (shell-quoted), or after the image\'s ENTRYPOINT (entrypoint). One item per --args flag.', separator=''),
    entrypoint: params.bool('Run the image\'s ENTRYPOINT (with args, if given; else its CMD), as a container without a command runs, instead of exec: for an image whose ENTRYPOINT is the training program.'),
    shmSize: roles.shmParam('every worker', f.shmUsers).shmSize,
  },

  job(proto, f):: {
    ownEnv: { [v]: f.reservedWhy for v in f.reserved },
    params: $.params(f),
    from: { 'trainer.kubeflow.org/v1alpha1/TrainJob': function(o) fromTrainJob(f, o) },

    validate(p):: storage.validate(p, ['trainDir']) + [
      roles.nameFits(p, [worker(f, p)]),
      roles.shmCheck(p),
      roles.nonRootPort(p, 'port', p.port, f.leadsWhat),
    ],

    warnings(p):: storage.warnings(p, component, [trainDir(p)]) + [
      if !p.entrypoint && p.image == f.image && p.exec == f.exec then
        'the default image (' + f.image + ') has no /workspace/train.py: set image to your training image, or exec to the program in it',
      if p.entrypoint && p.exec != f.exec then
        'exec is not run: the image\'s ENTRYPOINT runs instead',
      roles.shWarning('exec', p.exec),
    ],

    render(p):: [
      common.networkPolicy(proto, p),
      storage.secret(proto, p, component),
      if wrapped(p) then config(proto, p),
    ] + roles.objects(proto, p, [worker(f, p)]),
  },
}
