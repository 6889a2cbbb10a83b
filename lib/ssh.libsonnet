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
    '    ConnectTimeout 5',
  ]),

  // server(port, dir): sshd's configuration. Modern options only (no
  // Protocol, no RSA1/DSA keys, no UsePrivilegeSeparation); StrictModes is
  // off because Secret and emptyDir volumes have modes (group-readable,
  // 1777) that it refuses.
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
  ]),
}
