// runtime: the lifecycle runtime (assets/runtime.sh) as the pods see it:
// where the job's ConfigMap is mounted, the script's entry in it, the
// volume and mount, and the command `run` for a role that needs no script
// of its own.
//
// Needs:    nothing of p: the prototype puts files into a ConfigMap of
//           its own, mounts volume(its name) in the roles that run it.
// Declares: no parameter.
// Returns:  files (the ConfigMap entry), bytes (its size), volume(name),
//           mount, dir and path, run(cmd, waits, watch, tellEnd, hearEnd,
//           group):
//           a role's command under the runtime, and for a lead that says
//           when the job is over, endPort(port) and endEnv(...).
//
//   local runtime = import 'runtime.libsonnet';
//   data: runtime.files + {...}                        // the ConfigMap's data
//   volumes: [runtime.volume(configMapName)], mounts: [runtime.mount]
//   command: runtime.run(['python', 'train.py'], waits=['ps-0.job:2222'], watch='job-chief')
//
// A lead whose followers watch it can also say when the job is over, so
// that they stop at once instead of stopGrace after it has gone (a grace
// that only a retried lead needs): the lead runs with tellEnd=<port>, the
// followers with watch=roles.presenceName(p, <lead>) and hearEnd=<the
// same port>. roles.objects reads that relation from the commands and
// makes the rest: the lead's presence Service (the name watched), and
// endEnv(token, followers, retries) in the env of the lead and of every
// role that hears it, its followers counted; it refuses, in one line, a
// relation that cannot work (a follower of no lead, a lead that is a
// Deployment, ports that do not meet, a role without the runtime's
// volume), and the render refuses pods whose ConfigMap it does not make.
//
// A static group (torchrun's static rendezvous: every pod or none) runs
// with group={service, count, lead}: the job's headless Service, its pods,
// index 0's name (roles.group makes it). When a pod of it is made again
// (one failed or was lost), the others end their command and exit
// groupEndCode, which roles.objects has the Job ignore (no retry
// spent: the pods are made again and meet again).
//
// The ssh roles source the same script from mpi.sh (lib/sshjob.libsonnet).

local ts = import 'trainsonnet.libsonnet';

local dir = '/etc/trainsonnet';
local script = importstr 'assets/runtime.sh';
local tcp = importstr 'assets/tcp.py';

{
  dir:: dir,
  path:: dir + '/runtime.sh',
  volumeName:: 'trainsonnet-config',

  // files: the entries of the ConfigMap, the script and its python3
  // helper, found beside it (their text stays in Go).
  files:: { 'runtime.sh': ts.asset('assets/runtime.sh', script), 'tcp.py': ts.asset('assets/tcp.py', tcp) },
  // scriptFile: the script alone, for roles that neither wait on TCP nor
  // tell an end (a static group's).
  scriptFile:: { 'runtime.sh': ts.asset('assets/runtime.sh', script) },
  // bytes: their size, for a ConfigMap's size check.
  bytes:: ts.assetBytes('assets/runtime.sh', script) + ts.assetBytes('assets/tcp.py', tcp),

  // volume: the ConfigMap mounted at dir, read-only for everyone (0444).
  volume(configMap):: { name: $.volumeName, configMap: { name: configMap, defaultMode: 292 } },
  mount:: { name: $.volumeName, mountPath: dir, readOnly: true },

  // run: cmd under the runtime: after every HOST:PORT of waits accepts
  // connections (at most TS_INIT_TIMEOUT), and stopped once the DNS name
  // watch has gone (TS_WATCH_GRACE); the role ends with cmd's exit code.
  // tellEnd: once cmd has ended, say so on that port (a lead); hearEnd
  // (with watch): stop once watch's pod says so on that port.
  run(cmd, waits=[], watch=null, tellEnd=null, hearEnd=null, group=null)::
    if hearEnd != null && watch == null then ts.fail('runtime.run: hearEnd reads the end port of the pod that watch names: give watch too')
    else if group != null && watch != null then ts.fail('runtime.run: a group watches its own lead: give group or watch, not both')
    else ['sh', $.path, 'run']
         + std.join([], [['--wait-tcp', w] for w in waits])
         + (if watch != null then ['--watch', watch] else [])
         + (if hearEnd != null then ['--hear-end', std.toString(hearEnd)] else [])
         + (if tellEnd != null then ['--tell-end', std.toString(tellEnd)] else [])
         + (if group != null then ['--group', group.service + ':' + group.count, '--group-lead', group.lead] else [])
         + ['--'] + cmd,
  // relationFlags: run's options that speak the job's lifetime (the
  // watch, the end port, the group), which a JobSet's roles drop
  // (roles.objects): its controller ends the job.
  relationFlags:: ['--watch', '--hear-end', '--tell-end', '--group', '--group-lead'],
  // groupEndCode: the exit code of a pod whose group has ended (75).
  groupEndCode:: 75,
  // endPort: the end port of a lead whose command serves port: the next
  // one (the one before at 65535), free once its command has ended.
  endPort(port):: if port < 65535 then port + 1 else port - 1,
  // endEnv: the env of every pod of a job whose lead says when it is over:
  // token (the lead's name: the same in every pod, in the line it says),
  // the followers that read it, and whether the Job retries the lead (then
  // a failed lead says nothing, so that its followers stay for the retry).
  endEnv(token, followers, retries)::
    [
      { name: 'TS_END_TOKEN', value: token },
      { name: 'TS_FOLLOWERS', value: std.toString(followers) },
    ] + (if retries > 0 then [{ name: 'TS_END_ON_FAILURE', value: '0' }] else []),
}
