// Custom resources whose metadata the API server would refuse, and a kind
// that is not one of an API group trainsonnet knows: trainsonnet refuses
// them all at once (a prototype bug, exit code 1), each problem named with
// its object and field.
local ts = import 'trainsonnet.libsonnet';

ts.prototype({
  name: 'badcrd',
  summary: 'Custom resources with metadata the API server refuses',
  params: {
    name: ts.params.string('Name of the objects with a good one.', default='pi', format='dns1035Label'),
  },
  render(p):: [
    {
      apiVersion: 'kubeflow.org/v2beta1',
      kind: 'MPIJob',
      metadata: { name: 'Pi_Job', namespace: 'Team A', labels: { 'team name': 'ml' }, annotations: { '/owner': 'ml' } },
      spec: {},
    },
    { apiVersion: 'Kubeflow.org/v2beta1', kind: 'mpi job', metadata: { name: p.name } },
    { apiVersion: 'jobset.x-k8s.io/v1alpha2', kind: 'JobSet', metadata: { nmae: p.name } },
    { apiVersion: 'apps/v1', kind: 'Deploymnet', metadata: { name: p.name } },
  ],
})
