// A prototype that puts files of every awkward shape into ConfigMaps, to
// test that ts.asset gives the same output as the content inline.
local ts = import 'trainsonnet.libsonnet';
local common = import 'common.libsonnet';

local files = {
  'plain.sh': ts.asset('assets/plain.sh', importstr 'assets/plain.sh'),
  'tabs.txt': ts.asset('assets/tabs.txt', importstr 'assets/tabs.txt'),
  'notrail.txt': ts.asset('assets/notrail.txt', importstr 'assets/notrail.txt'),
  'lead.txt': ts.asset('assets/lead.txt', importstr 'assets/lead.txt'),
  'blanks.txt': ts.asset('assets/blanks.txt', importstr 'assets/blanks.txt'),
  // a string built by a native, held in Go the same way
  hostfile: ts.indexedLines('h-', ' slots=1', 0, 3),
};

ts.prototype({
  name: 'assetcheck',
  summary: 'Files of awkward shapes through ts.asset',
  params: common.params('assetcheck', 'busybox:1.36'),
  render(p):: [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: p.name, annotations: {
        // sizes known in Go, without the text
        'plain.sh-bytes': std.toString(ts.assetBytes('assets/plain.sh', importstr 'assets/plain.sh')),
        'tabs.txt-bytes': std.toString(ts.assetBytes('assets/tabs.txt', importstr 'assets/tabs.txt')),
      } },
      data: files,
    },
    {
      // the same strings again, under keys the YAML encoder quotes
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: p.name + '-again' },
      data: { 'true': files['plain.sh'], '1e3': files.hostfile },
    },
  ],
})
