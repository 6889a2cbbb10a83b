// ssh: the ssh configuration of the pods of an MPI-over-ssh job, rendered
// with the job: all of it is known then. The port is the same in every
// pod, and the paths are trainsonnet's: the pods' script (assets/mpi.sh)
// makes what exists only at run time in dir, under the names these files
// use: the copies of the key that only the pod's user may read (id,
// authorized_keys), the pod's own host key (ssh_host_ed25519_key), sshd's
// pid file, and the sessions' script (given to sshd on its command line).
//
// Needs:    nothing of p.
// Declares: no parameter.
// Returns:  client(port, dir) and server(port, dir), the text of
//           ssh_config and sshd_config (sshjob.libsonnet puts them into the
//           job's ConfigMap).

local lines(ls) = std.join('\n', ls) + '\n';

{
  // client(port, dir): ssh's configuration, for `ssh -F`: the launcher's
  // probes and stop calls, mpirun (plm_rsh_args), and ~/.ssh/config where
  // the home is writable. Host keys are per pod and made at start: nothing
  // to check them against.
  //
  // Time, both ways. ConnectTimeout bounds the connection and sshd's
  // banner: a worker is known to be up before anything connects, and a
  // busy node's sshd (data loading on every core, a burst of sessions)
  // answers late, which must cost a wait, not the job: 60 s (5 s failed
  // mpirun on a loaded CI machine). ServerAlive*: a session whose peer has
  // answered nothing for 4 × 15 s ends (ssh exits 255), so that mpirun
  // counts that worker's daemon failed and aborts within about a minute of
  // a peer cut off, where it waited on the kernel before (tcp_retries2,
  // about 15 minutes); a peer that is merely slow answers the probes.
  client(port, dir):: lines([
    '# trainsonnet: the ssh client of the job\'s pods (ssh -F; mpirun\'s plm_rsh_args).',
    'Host *',
    '    Port ' + port,
    '    IdentityFile ' + dir + '/id',
    '    IdentitiesOnly yes',
    '    StrictHostKeyChecking no',
    '    UserKnownHostsFile /dev/null',
    '    LogLevel ERROR',
    '    BatchMode yes',
    '    ConnectTimeout 60',
    '    ServerAliveInterval 15',
    '    ServerAliveCountMax 4',
  ]),

  // server(port, dir): sshd's configuration. Modern options only (no
  // Protocol, no RSA1/DSA keys, no UsePrivilegeSeparation); StrictModes is
  // off because Secret and emptyDir volumes have modes (group-readable,
  // 1777) that it refuses. ClientAlive*: the other end of the client's
  // probes; a session whose launcher has answered nothing for 4 × 15 s
  // ends, and with it what it ran (mpirun's daemon and its ranks).
  server(port, dir):: lines([
    '# trainsonnet: sshd of the job\'s pods (sshd -f).',
    'Port ' + port,
    'HostKey ' + dir + '/ssh_host_ed25519_key',
    'AuthorizedKeysFile ' + dir + '/authorized_keys',
    'PidFile ' + dir + '/sshd.pid',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PubkeyAuthentication yes',
    'PermitRootLogin prohibit-password',
    'UsePAM no',
    'StrictModes no',
    'PrintMotd no',
    'Subsystem sftp internal-sftp',
    'ClientAliveInterval 15',
    'ClientAliveCountMax 4',
  ]),
}
