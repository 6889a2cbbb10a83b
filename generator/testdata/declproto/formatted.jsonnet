// A prototype with a format of its own (params.format), used by a
// string, the items of a list and the keys and values of a map.
local ts = import 'trainsonnet.libsonnet';
local common = import 'common.libsonnet';

local gitRef = ts.params.format('gitRef', 'a branch or tag name such as v1.2', @'^[A-Za-z0-9._/-]+$', maxLength=20);

ts.prototype({
  name: 'formatted',
  summary: 'Parameters of a format declared in Jsonnet',
  params: common.params('formatted') + {
    revision: ts.params.string('The revision.', default='main', format=gitRef),
    also: ts.params.list('More revisions.', items=gitRef),
    pins: ts.params.map('Revisions by component.', keys=gitRef, values=gitRef),
  },
  render(p):: [{
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: p.name },
    data: { revision: p.revision, also: std.join(',', p.also) } + p.pins,
  }],
})
