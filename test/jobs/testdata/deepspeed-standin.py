#!/usr/bin/env python3
"""A stand-in for DeepSpeed's `deepspeed` command, which no reachable
registry carries (test/jobs/training_test.go, the deepspeed case).

It does what DeepSpeed's runner does with its default launcher, pdsh, and
what deepspeed.launcher.launch then does on every host, for the options
the deepspeed prototype renders:

    deepspeed --hostfile FILE --master_addr ADDR --master_port PORT SCRIPT [ARG]...

- it reads the hostfile as DeepSpeed does, a line "<host> slots=<n>" per
  host (blank lines and # comments skipped), and refuses any other line;
- it reaches every host over ssh as pdsh's ssh module does: ssh with the
  words of PDSH_SSH_ARGS, %u and %h filled in (pdsh's own default,
  "-2 -A -x -l%u %h", would not find the job's key and port: trainsonnet
  sets PDSH_SSH_ARGS to its ssh configuration);
- on each host it starts, in the launcher's working directory, one
  `python3 -u SCRIPT ARG...` per slot with RANK, LOCAL_RANK, WORLD_SIZE,
  MASTER_ADDR and MASTER_PORT set, as deepspeed.launcher.launch does;
- each line a host's session prints comes out whole, after the host's
  name up to its first dot and ": ", as pdsh labels it (test/scripts runs
  the real pdsh with the rendered PDSH_SSH_ARGS: that is where this was
  read from);
- it exits with the first non-zero exit code of a host's session, else 0.
"""

import getpass
import os
import re
import shlex
import subprocess
import sys
import threading


def fail(msg):
    sys.stderr.write("deepspeed (stand-in): " + msg + "\n")
    sys.exit(2)


def parse(argv):
    opts, i = {}, 0
    while i < len(argv) and argv[i].startswith("--"):
        if argv[i] not in ("--hostfile", "--master_addr", "--master_port") or i + 1 >= len(argv):
            fail("unexpected option %r" % argv[i])
        opts[argv[i][2:]] = argv[i + 1]
        i += 2
    if i >= len(argv):
        fail("no training script")
    for k in ("hostfile", "master_addr", "master_port"):
        if k not in opts:
            fail("missing --" + k)
    return opts, argv[i:]


def hosts(path):
    out = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"(\S+)\s+slots=(\d+)", line)
        if not m:
            fail("hostfile %s: bad line %r (DeepSpeed wants '<host> slots=<n>')" % (path, line))
        out.append((m.group(1), int(m.group(2))))
    if not out:
        fail("hostfile %s lists no host" % path)
    return out


LOCK = threading.Lock()


def relay(host, out):
    for line in out:
        with LOCK:
            sys.stdout.write(host.split(".")[0] + ": " + line.decode(errors="replace"))
            sys.stdout.flush()


def main():
    opts, program = parse(sys.argv[1:])
    pool = hosts(opts["hostfile"])
    template = os.environ.get("PDSH_SSH_ARGS")
    if not template:
        fail("PDSH_SSH_ARGS is not set: pdsh would ssh with its defaults")
    world = sum(n for _, n in pool)
    user = getpass.getuser()
    sessions, rank = [], 0
    for host, slots in pool:
        procs = []
        for local in range(slots):
            env = {"RANK": rank, "LOCAL_RANK": local, "WORLD_SIZE": world,
                   "MASTER_ADDR": opts["master_addr"], "MASTER_PORT": opts["master_port"]}
            procs.append(" ".join("%s=%s" % (k, shlex.quote(str(v))) for k, v in env.items())
                         + " python3 -u " + " ".join(shlex.quote(w) for w in program) + ' & pids="$pids $!";')
            rank += 1
        remote = ("cd %s && pids=; " % shlex.quote(os.getcwd()) + " ".join(procs)
                  + " rc=0; for p in $pids; do wait $p || rc=$?; done; exit $rc")
        ssh = ["ssh"] + [w.replace("%u", user).replace("%h", host) for w in shlex.split(template)]
        p = subprocess.Popen(ssh + [remote], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        reader = threading.Thread(target=relay, args=(host, p.stdout))
        reader.start()
        sessions.append((host, p, reader))
    rc = 0
    for host, p, reader in sessions:
        reader.join()
        code = p.wait()
        if code != 0:
            sys.stderr.write("deepspeed (stand-in): %s exited with %d\n" % (host, code))
            rc = rc or code
    sys.exit(rc)


if __name__ == "__main__":
    main()
