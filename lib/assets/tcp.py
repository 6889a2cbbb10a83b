"""trainsonnet: runtime.sh's TCP helper, where the image has python3.

  python3 tcp.py check
      exits 0: this python3 can run the rest.
  python3 tcp.py sweep FILE PORT LANES RATE DEADLINE MOST
      tries every target of FILE (a line each: HOST with PORT, or
      HOST:PORT when PORT is empty) for a TCP connection: LANES in flight,
      at most RATE started a second (a name costs a DNS lookup), each
      bounded by MOST seconds and the time left until DEADLINE (Unix
      seconds), none started after it. Writes "RC TARGET" as each ends (0:
      connected, 1: not); targets never tried get no line.
  python3 tcp.py banner HOST PORT SECS
      prints the first line the server at HOST:PORT sends within SECS.
  python3 tcp.py serve PORT LINE FOLLOWERS LINGER
      the end port: answers every connection to PORT with LINE and closes
      it; ends once the lead's own check (the first connection from
      127.0.0.1) and FOLLOWERS distinct addresses have connected, or after
      LINGER seconds; then prints how many followers did. IPv6 and IPv4
      where it can.

Exit codes: 0 done; 1 a connection failed (banner); 2 usage.
"""

import socket
import sys
import threading
import time


def sweep(path, port, lanes, rate, deadline, most):
    todo = [line.strip() for line in open(path) if line.strip()]
    lock, nxt, t0 = threading.Lock(), [0], time.time()

    def lane():
        while True:
            with lock:
                i = nxt[0]
                if i >= len(todo):
                    return
                nxt[0] = i + 1
            target = todo[i]
            pause = t0 + i / rate - time.time()
            if pause > 0:
                time.sleep(pause)
            left = deadline - time.time()
            if left <= 0:
                return
            host, p = (target, port) if port else target.rsplit(":", 1)
            try:
                socket.create_connection((host, int(p)), min(most, left)).close()
                rc = 0
            except Exception:
                rc = 1
            with lock:
                sys.stdout.write("%d %s\n" % (rc, target))
                sys.stdout.flush()

    threads = [threading.Thread(target=lane) for _ in range(max(1, min(lanes, len(todo))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def banner(host, port, secs):
    try:
        s = socket.create_connection((host, port), secs)
        s.settimeout(secs)
        sys.stdout.write(s.makefile("rb").readline().decode("latin-1"))
    except OSError:
        return 1
    return 0


def listener(port):
    try:
        s = socket.socket(socket.AF_INET6)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("::", port))
    except OSError:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("", port))
    s.listen(128)
    return s


def serve(port, line, want, linger):
    s, line, end = listener(port), (line + "\r\n").encode(), time.time() + linger
    seen, own = set(), True
    while (own or len(seen) < want) and time.time() < end:
        s.settimeout(max(0.01, end - time.time()))
        try:
            c, a = s.accept()
        except socket.timeout:
            break
        try:
            c.settimeout(1)
            c.sendall(line)
        except OSError:
            pass
        c.close()
        h = a[0][7:] if a[0].startswith("::ffff:") else a[0]
        if own and h == "127.0.0.1":
            own = False
        else:
            seen.add(h)
    print(len(seen))


def main(args):
    cmd, args = (args[0], args[1:]) if args else ("", [])
    if cmd == "check" and not args:
        return 0
    if cmd == "sweep" and len(args) == 6:
        return sweep(args[0], args[1], int(args[2]), float(args[3]), float(args[4]), float(args[5]))
    if cmd == "banner" and len(args) == 3:
        return banner(args[0], int(args[1]), float(args[2]))
    if cmd == "serve" and len(args) == 4:
        return serve(int(args[0]), args[1], int(args[2]), float(args[3]))
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
