// pytorch-ddp: a prototype of one's own, on trainsonnet's roles machinery.
//
// A PyTorch DistributedDataParallel job: N worker pods in an Indexed Job,
// each running torchrun, which find each other through worker 0's stable
// DNS name. Put this file in a directory and pass it with -J:
//
//   trainsonnet -J examples/own-prototype describe pytorch-ddp
//   trainsonnet -J examples/own-prototype gen pytorch-ddp --workers 4 --gpu 8 \
//     --exec 'python /opt/train.py --epochs 90'
//
// Every parameter below becomes a flag, a params-file key, a describe
// entry and a JSON Schema property, with no Go. It is the worked example
// of lib/README.md, which says what each piece of the library needs,
// declares and returns.

local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local roles = import 'roles.libsonnet';
local ts = import 'trainsonnet.libsonnet';

local params = ts.params;
local proto = 'pytorch-ddp';

// The one role: what roles.libsonnet turns into an Indexed Job, its pod
// template and container, and (with the job's headless Service) the stable
// names <name>-worker-<i>.<name>. It is the lead: the job ends when it
// does, and backoffLimit (batch.params) counts its retries.
local worker(p) = {
  name: 'worker',
  kind: 'IndexedJob',
  count: p.workers,
  lead: true,
  image: p.image,
  imagePullPolicy: p.imagePullPolicy,
  ports: [{ name: 'rendezvous', port: p.port }],
  // torchrun starts gpu processes per pod (1 without GPUs); the Job
  // controller sets JOB_COMPLETION_INDEX, this pod's rank among the nodes.
  command: ['sh', '-c', std.join(' ', [
    'exec torchrun',
    '--nnodes=' + p.workers,
    '--nproc-per-node=' + std.max(1, p.gpu),
    '--node-rank="$JOB_COMPLETION_INDEX"',
    '--master-addr=' + roles.host(p, p.name + '-worker-0'),
    '--master-port=' + p.port,
    p.exec,
  ])],
  env: common.env(p.env + p.worker.env),
  resources: roles.resources(cpu=p.cpu, memory=p.memory, gpu=p.gpu),
  nodeSelector: p.nodeSelector,
  tolerations: p.tolerations,
};

ts.prototype({
  name: proto,
  summary: 'A PyTorch DDP job: N workers running torchrun (an example of a prototype of your own)',
  description: |||
    An Indexed Job of workers; worker 0 is the rendezvous point of torchrun, reached
    through the job's headless Service as <name>-worker-0.<name>. The job ends when every
    worker has ended, and fails once its pods have failed more than backoffLimit times.
  |||,

  // The library's pieces, each declaring its parameters once: the common
  // ones (name, namespace, image, env, labels, security, ...), the Job
  // lifetime (ttlSecondsAfterFinished, activeDeadlineSeconds, backoffLimit:
  // the worker role is the lead), and the role's typed gpu, cpu, memory,
  // nodeSelector, tolerations and exec. Then this prototype's own.
  params: common.params(proto, 'pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime') + batch.params('each worker')
          + roles.params('each worker', exec='Training script and its arguments, which torchrun runs in each of its processes, such as /opt/train.py --epochs 90.') + {
    exec+: { default: '/opt/train.py' },
    workers: params.int('Number of worker pods.', default=2, min=1, max=1000),
    port: params.int('Port of the rendezvous on worker 0.', default=29500, min=1024, max=65535),
    worker: params.group('Settings of the worker pods only.', roles.envParams('the workers')),
  },

  // The variables torchrun reads for the flags given here: no env
  // parameter may set them (nor the library's own, such as
  // JOB_COMPLETION_INDEX). PET_TEE and the like stay the user's.
  ownEnv: {
    [v]: 'torchrun reads it as its flag, which this prototype gives it'
    for v in ['PET_NNODES', 'PET_NPROC_PER_NODE', 'PET_NODE_RANK', 'PET_MASTER_ADDR', 'PET_MASTER_PORT', 'PET_STANDALONE', 'PET_RDZV_BACKEND']
  },

  // The shared rules: every pod's host name fits in a DNS label.
  validate(p):: [roles.nameFits(p, [worker(p)])],

  render(p):: [common.networkPolicy(proto, p)] + roles.objects(proto, p, [worker(p)]),
})
