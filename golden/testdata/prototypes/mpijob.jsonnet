// A prototype of one's own (the golden cases pass -J testdata/prototypes)
// that emits kinds trainsonnet has no types for: a Kubeflow MPIJob for the
// mpi-operator, and the volcano PodGroup that gang-schedules its pods,
// beside a ConfigMap, a kind trainsonnet knows. They come out in the one
// order: the ConfigMap first, then the custom kinds by API group.
local ts = import 'trainsonnet.libsonnet';

ts.prototype({
  name: 'mpijob',
  summary: 'A Kubeflow MPIJob (kubeflow.org/v2beta1) for the mpi-operator, gang-scheduled by volcano',
  params: {
    name: ts.params.string('Name of the job.', default='pi', format='dns1035Label'),
    namespace: ts.params.string('Namespace of every object; unset for the current one.', format='dns1123Label'),
    image: ts.params.string('Image of the launcher and the workers.', default='mpioperator/mpi-pi:openmpi', format='image'),
    workers: ts.params.int('Worker pods.', default=2, min=1, max=1000),
    slots: ts.params.int('Slots (ranks) per worker.', default=1, min=1, max=64),
    queue: ts.params.string('Volcano queue of the job.', default='default', format='dns1123Label'),
    logDir: ts.params.string('Where the ranks write their logs.', default='s3://pi-logs/runs', format='absPathOrURI'),
  },
  render(p)::
    local metadata(name) = {
      name: name,
      [if p.namespace != null then 'namespace']: p.namespace,
      labels: { 'app.kubernetes.io/name': 'mpijob', 'app.kubernetes.io/instance': p.name },
    };
    local container(name, command) = {
      name: name,
      image: p.image,
      env: [{ name: 'LOG_DIR', value: p.logDir }],
      [if command != null then 'command']: command,
    };
    [
      {
        apiVersion: 'kubeflow.org/v2beta1',
        kind: 'MPIJob',
        metadata: metadata(p.name) + { annotations: { 'scheduling.k8s.io/group-name': p.name } },
        spec: {
          slotsPerWorker: p.slots,
          runPolicy: { cleanPodPolicy: 'Running', schedulingPolicy: { queue: p.queue } },
          mpiReplicaSpecs: {
            Launcher: {
              replicas: 1,
              template: { spec: { containers: [container('launcher', ['mpirun', '-n', std.toString(p.workers * p.slots), '/home/mpiuser/pi'])] } },
            },
            Worker: {
              replicas: p.workers,
              template: { spec: { containers: [container('worker', null)] } },
            },
          },
        },
      },
      {
        apiVersion: 'scheduling.volcano.sh/v1beta1',
        kind: 'PodGroup',
        metadata: metadata(p.name),
        spec: { minMember: p.workers + 1, queue: p.queue },
      },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: metadata(p.name + '-config'),
        data: { LOG_DIR: p.logDir },
      },
    ],
})
