// Two different formats of one name: a prototype bug, refused when it loads.
local ts = import 'trainsonnet.libsonnet';
local common = import 'common.libsonnet';

ts.prototype({
  name: 'twice',
  summary: 'One format name, two patterns',
  params: common.params('twice') + {
    a: ts.params.string('A.', format=ts.params.format('tag', 'a tag', '^[a-z]+$')),
    b: ts.params.string('B.', format=ts.params.format('tag', 'a tag', '^[0-9]+$')),
  },
  render(p):: [],
})
