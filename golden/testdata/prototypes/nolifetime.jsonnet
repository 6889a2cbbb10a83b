// A prototype of one's own that composes the library wrongly: a Job role
// (an Indexed Job) without the Job lifetime parameters of batch.params.
// trainsonnet says which piece is missing and what to add, in one line
// (a prototype bug, exit code 1), not with a Jsonnet stack trace.
local common = import 'common.libsonnet';
local roles = import 'roles.libsonnet';
local ts = import 'trainsonnet.libsonnet';

ts.prototype({
  name: 'nolifetime',
  summary: 'An Indexed Job of workers, without batch.params',
  params: common.params('train', 'busybox:1.37') + {
    workers: ts.params.int('Worker pods.', default=2, min=1, max=100),
  },
  render(p):: roles.objects('nolifetime', p, [{ name: 'worker', kind: 'IndexedJob', count: p.workers, image: p.image, lead: true }]),
})
