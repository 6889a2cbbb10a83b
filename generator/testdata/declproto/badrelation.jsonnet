// A relation of a string: a prototype bug, refused when it loads.
local ts = import 'trainsonnet.libsonnet';
local common = import 'common.libsonnet';

ts.prototype({
  name: 'badrelation',
  summary: 'A relation that cannot hold',
  params: common.params('badrelation') + {
    workers: ts.params.int('Workers.', default=4, min=1),
    label: ts.params.string('A label.') + ts.params.atMost('workers'),
  },
  render(p):: [],
})
