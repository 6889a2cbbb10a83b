// A prototype that puts large strings where they may not go: outside a
// ConfigMap's data (a container's args), or joined to other text. Both are
// bugs in the prototype: ts.asset, ts.indexedLines and ts.indexedList are
// whole values of a ConfigMap's data only.
local ts = import 'trainsonnet.libsonnet';
local common = import 'common.libsonnet';

local script = ts.asset('assets/plain.sh', importstr 'assets/plain.sh');

ts.prototype({
  name: 'assetmisplaced',
  summary: 'Large strings outside a ConfigMap\'s data',
  params: common.params('assetmisplaced', 'busybox:1.36') + {
    joined: ts.params.bool('Join the script to other text in a ConfigMap instead.'),
  },
  render(p):: [
    if p.joined then {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: p.name },
      data: { 'run.sh': 'set -e\n' + script },
    } else {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: p.name },
      spec: { containers: [{ name: 'c', image: p.image, args: [script] }] },
    },
  ],
})
