// A prototype with a bug: a misspelled field, which the strict decode catches.
local common = import 'common.libsonnet';
local ts = import 'trainsonnet.libsonnet';

ts.prototype({
  name: 'broken',
  summary: 'Emits a ConfigMap with a typo',
  params: common.params('broken', 'busybox:1.36'),
  render(p):: [{
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: common.metadata('broken', p, p.name),
    dataa: { a: 'b' },
  }],
})
