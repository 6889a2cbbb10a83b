// A prototype naming an asset that does not exist: a prototype bug.
local ts = import 'trainsonnet.libsonnet';
local common = import 'common.libsonnet';

ts.prototype({
  name: 'assetmissing',
  summary: 'An asset that is not there',
  params: common.params('assetmissing', 'busybox:1.36'),
  render(p):: [{
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: p.name },
    data: { 'x.sh': ts.asset('assets/none.sh', importstr 'assets/none.sh') },
  }],
})
