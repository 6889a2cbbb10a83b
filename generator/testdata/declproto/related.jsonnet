// Relations declared beside the parameters (params.atMost, atLeast, needs).
local ts = import 'trainsonnet.libsonnet';
local common = import 'common.libsonnet';

ts.prototype({
  name: 'related',
  summary: 'Parameters held to each other',
  params: common.params('related') + {
    workers: ts.params.int('Workers.', default=4, min=1),
    pool: ts.params.group('A pool.', {
      min: ts.params.int('Fewest.', min=1) + ts.params.atMost('workers', 'some would wait forever'),
      max: ts.params.int('Most.', min=1) + ts.params.atLeast('pool.min'),
    }),
    tier: ts.params.string('A tier of the pool.') + ts.params.needs('pool.min', 'a tier sizes the pool'),
  },
  render(p):: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: p.name }, data: { workers: std.toString(p.workers) } }],
})
