// runtime: the lifecycle runtime (assets/runtime.sh) as the pods see it:
// where the job's ConfigMap is mounted, the script's entry in it, the
// volume and mount, and the command `run` for a role that needs no script
// of its own.
//
// Needs:    nothing of p: the prototype puts files into a ConfigMap of
//           its own, mounts volume(its name) in the roles that run it.
// Declares: no parameter.
// Returns:  files (the ConfigMap entry), bytes (its size), volume(name),
//           mount, dir and path, and run(cmd, waits, watch): a role's
//           command under the runtime.
//
//   local runtime = import 'runtime.libsonnet';
//   data: runtime.files + {...}                        // the ConfigMap's data
//   volumes: [runtime.volume(configMapName)], mounts: [runtime.mount]
//   command: runtime.run(['python', 'train.py'], waits=['ps-0.job:2222'], watch='job-chief')
//
// MPI's roles source the same script from mpi.sh (lib/mpi.libsonnet).

local ts = import 'trainsonnet.libsonnet';

local dir = '/etc/trainsonnet';
local script = importstr 'assets/runtime.sh';

{
  dir:: dir,
  path:: dir + '/runtime.sh',
  volumeName:: 'trainsonnet-config',

  // files: the script's entry of the ConfigMap (its text stays in Go).
  files:: { 'runtime.sh': ts.asset('assets/runtime.sh', script) },
  // bytes: its size, for a ConfigMap's size check.
  bytes:: ts.assetBytes('assets/runtime.sh', script),

  // volume: the ConfigMap mounted at dir, read-only for everyone (0444).
  volume(configMap):: { name: $.volumeName, configMap: { name: configMap, defaultMode: 292 } },
  mount:: { name: $.volumeName, mountPath: dir, readOnly: true },

  // run: cmd under the runtime: after every HOST:PORT of waits accepts
  // connections (at most TS_INIT_TIMEOUT), and stopped once the DNS name
  // watch has gone (TS_WATCH_GRACE); the role ends with cmd's exit code.
  run(cmd, waits=[], watch=null)::
    ['sh', $.path, 'run']
    + std.join([], [['--wait-tcp', w] for w in waits])
    + (if watch != null then ['--watch', watch] else [])
    + ['--'] + cmd,
}
