// A prototype whose group kept its name while a member moved into a
// subgroup under a new name (the charts' storage.sharename is
// storage.azure.shareName): the old key must still work in params files.
local ts = import 'trainsonnet.libsonnet';
local common = import 'common.libsonnet';

ts.prototype({
  name: 'renamed',
  summary: 'A member renamed inside a group that kept its name',
  params: common.params('renamed') + {
    store: ts.params.group('A store.', {
      azure: ts.params.group('Azure Files.', {
        shareName: ts.params.string('Share.', format='dns1123Label', replaces='store.sharename'),
      }),
    }),
  },
  render(p):: [{
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: p.name },
    data: { share: std.toString(p.store.azure.shareName) },
  }],
})
