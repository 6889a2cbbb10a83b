"""A stand-in for jax.distributed.initialize() (no reachable registry
carries JAX): what it does over the variables the pods have, with the
standard library.

JAX_COORDINATOR_ADDRESS (host:port of process 0), JAX_NUM_PROCESSES and
JAX_PROCESS_ID are read as JAX reads them. Process 0 serves the
coordinator on the address's port; every process (0 too) connects to it,
retrying while the name does not resolve or nobody listens yet, as JAX's
coordination client does, and registers its id. The coordinator waits for
all of them (each id once, 0..N-1), then answers each with the sum of
(id + 1) over the processes, a barrier and an all-reduce in one. Each
process prints

    jax-standin: process <id> of <n>: sum <s>

and exits 0; a process whose id is out of range, or a coordinator that
sees an id twice or not all within the timeout, exits 1.
"""
import os
import socket
import sys
import threading
import time

TIMEOUT = 120


def serve(port, n, ready):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("", port))
    srv.listen(n)
    ready.set()
    conns = {}
    srv.settimeout(TIMEOUT)
    while len(conns) < n:
        c, _ = srv.accept()
        pid = int(c.makefile().readline())
        if pid in conns or not 0 <= pid < n:
            print("jax-standin: coordinator: process %d registered twice or out of range" % pid, flush=True)
            os._exit(1)
        conns[pid] = c
    total = sum(pid + 1 for pid in conns)
    for c in conns.values():
        c.sendall(b"%d\n" % total)
        c.close()


def main():
    host, port = os.environ["JAX_COORDINATOR_ADDRESS"].rsplit(":", 1)
    n = int(os.environ["JAX_NUM_PROCESSES"])
    pid = int(os.environ["JAX_PROCESS_ID"])
    if not 0 <= pid < n:
        print("jax-standin: process id %d out of range 0..%d" % (pid, n - 1), flush=True)
        return 1
    if pid == 0:
        ready = threading.Event()
        threading.Thread(target=serve, args=(int(port), n, ready), daemon=True).start()
        ready.wait()
    deadline = time.time() + TIMEOUT
    while True:
        try:
            s = socket.create_connection((host, int(port)), timeout=5)
            break
        except OSError as e:
            if time.time() > deadline:
                print("jax-standin: no coordinator at %s:%s: %s" % (host, port, e), flush=True)
                return 1
            time.sleep(0.5)
    s.sendall(b"%d\n" % pid)
    s.settimeout(TIMEOUT)
    total = int(s.makefile().readline())
    print("jax-standin: process %d of %d: sum %d" % (pid, n, total), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
