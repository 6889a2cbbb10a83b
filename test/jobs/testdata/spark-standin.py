#!/usr/bin/env python3
"""A stand-in for Spark's processes in horovod-spark's pods (no reachable
registry carries Spark or Horovod). Installed as spark-class and
spark-submit. It checks the arguments and environment the pods give it
against the spark-defaults.conf trainsonnet rendered, and connects to the
addresses the way Spark would: workers register with the master at the
master URL, the master tells them where the driver is, and each worker's
executor connects to the driver at spark.driver.host:spark.driver.port.
The driver then runs the job's stand-in Horovod step: one "process" per
slot, an allreduce of their ranks, a file in the store.

Line protocol over TCP:
  worker -> master   WORKER <ip> <cores> <gpus>
  driver -> master   APP <driver host:port>
  master -> worker   LAUNCH <driver host:port>
  executor -> driver EXECUTOR <ip> <cores> <gpus>
"""
import json
import os
import pwd
import socket
import subprocess
import sys
import threading
import time


def log(*args):
    print("standin:", *args, flush=True)


def conf():
    path = os.path.join(os.environ["SPARK_CONF_DIR"], "spark-defaults.conf")
    out = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            key, value = line.split(None, 1)
            out[key] = value
    return out


def check(ok, what):
    if not ok:
        log("WRONG:", what)
        sys.exit(3)


def connect(host, port, deadline=120):
    end = time.time() + deadline
    while True:
        try:
            s = socket.create_connection((host, int(port)), timeout=10)
            s.settimeout(None)  # the timeout was for connecting; reads wait
            return s
        except OSError as e:
            if time.time() > end:
                raise
            log("retrying", host, port, e)
            time.sleep(1)


def serve(port, handle):
    srv = socket.create_server(("", int(port)))
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def master(args, c):
    host, port, ui = args[args.index("--host") + 1], args[args.index("--port") + 1], args[args.index("--webui-port") + 1]
    check(host == os.environ["POD_IP"], "--host %s is not the pod's IP %s" % (host, os.environ["POD_IP"]))
    check(c["spark.master"] == "spark://%s-master:%s" % (os.environ["STANDIN_JOB"], port), "spark.master " + c["spark.master"])
    # Like Spark's master: an application gets an executor on every worker,
    # those registered before it and those that register later.
    workers, apps, lock = [], [], threading.Lock()

    def handle(conn):
        f = conn.makefile("rw")
        words = f.readline().split()
        if words and words[0] == "WORKER":
            log("master: worker registered:", " ".join(words[1:]))
            with lock:
                workers.append(f)
                f.write("REGISTERED\n")
                for app in apps:
                    f.write("LAUNCH %s\n" % app)
                f.flush()
        elif words and words[0] == "APP":
            with lock:
                log("master: application of driver", words[1], "on", len(workers), "workers so far")
                apps.append(words[1])
                for w in workers:
                    w.write("LAUNCH %s\n" % words[1])
                    w.flush()
            f.write("ACCEPTED\n")
            f.flush()

    threading.Thread(target=serve, args=(ui, lambda conn: conn.close()), daemon=True).start()
    log("master: listening on", host, port, "UI", ui)
    serve(port, handle)


def worker(args, c):
    host, url = args[args.index("--host") + 1], args[-1]
    check(host == os.environ["POD_IP"], "--host %s is not the pod's IP" % host)
    check(url == c["spark.master"], "master URL %s is not spark.master %s" % (url, c["spark.master"]))
    cores = int(os.environ["SPARK_WORKER_CORES"])
    gpus = []
    if "spark.worker.resource.gpu.amount" in c:
        out = subprocess.run(["sh", c["spark.worker.resource.gpu.discoveryScript"]], capture_output=True, text=True, check=True).stdout
        gpus = json.loads(out)["addresses"]
        check(len(gpus) == int(c["spark.worker.resource.gpu.amount"]), "discovered %s, amount %s" % (gpus, c["spark.worker.resource.gpu.amount"]))
        check(cores == len(gpus), "SPARK_WORKER_CORES %d is not the GPUs %s" % (cores, gpus))
    mhost, mport = url[len("spark://"):].rsplit(":", 1)
    f = connect(mhost, mport).makefile("rw")
    f.write("WORKER %s %d %s\n" % (host, cores, ",".join(gpus) or "-"))
    f.flush()
    log("worker:", f.readline().strip(), "with", cores, "cores, GPUs", gpus or "none")
    for line in f:
        words = line.split()
        if words[0] == "LAUNCH":
            dhost, dport = words[1].rsplit(":", 1)
            log("worker: launching an executor for the driver at", words[1])
            e = connect(dhost, dport).makefile("rw")
            e.write("EXECUTOR %s %d %s\n" % (host, cores, ",".join(gpus) or "-"))
            e.flush()
            log("worker: executor got", e.readline().strip())
    while True:  # a Spark worker runs until stopped
        time.sleep(60)


def submit(args, c):
    job = os.environ["STANDIN_JOB"]
    # the driver's pod name in the job's form: <job>-driver, or a JobSet's <job>-driver-0-0
    check(c["spark.driver.host"] == "%s-driver%s.%s" % (job, os.environ.get("STANDIN_POD_SUFFIX", ""), job), "spark.driver.host " + c["spark.driver.host"])
    check(c["spark.driver.bindAddress"] == "0.0.0.0", "spark.driver.bindAddress")
    num_proc, task_cpus = int(os.environ["NUM_PROC"]), int(c["spark.task.cpus"])
    check(os.environ["HOROVOD_SPARK_START_TIMEOUT"].isdigit(), "HOROVOD_SPARK_START_TIMEOUT")
    log("driver: spark-submit", " ".join(args), "for", num_proc, "processes of", task_cpus, "cores")
    slots, executors, lock, enough = [], [], threading.Lock(), threading.Event()

    def handle(conn):
        f = conn.makefile("rw")
        words = f.readline().split()
        with lock:
            executors.append(words[1])
            for _ in range(int(words[2]) // task_cpus):
                slots.append(words[1])
            f.write("RUN %d slots\n" % (int(words[2]) // task_cpus))
            f.flush()
            if len(slots) >= num_proc:
                enough.set()

    threading.Thread(target=serve, args=(c["spark.driver.port"], handle), daemon=True).start()
    mhost, mport = c["spark.master"][len("spark://"):].rsplit(":", 1)
    m = connect(mhost, mport).makefile("rw")
    m.write("APP %s:%s\n" % (c["spark.driver.host"], c["spark.driver.port"]))
    m.flush()
    log("driver: master", m.readline().strip())
    check(enough.wait(int(os.environ["HOROVOD_SPARK_START_TIMEOUT"])), "timed out waiting for Spark tasks to start")
    # the training: long enough for the watchdogs of the master and workers
    # to have seen the driver (they check every 2 s), as a real run would be
    time.sleep(float(os.environ.get("STANDIN_SECONDS", "5")))  # the training
    ranks = list(range(num_proc))
    log("driver: %d processes on executors %s; allreduce of ranks = %d" % (num_proc, " ".join(sorted(set(slots[:num_proc]))), sum(ranks)))
    os.makedirs(os.environ["STORE_DIR"], exist_ok=True)
    with open(os.path.join(os.environ["STORE_DIR"], "model"), "w") as f:
        f.write("trained by %d processes\n" % num_proc)
    code = int(os.environ.get("STANDIN_EXIT", "0"))
    log("driver: done, exit", code)
    sys.exit(code)


def login():
    """What Spark's Hadoop login (UnixLoginModule) asks of the OS: the name
    of the process's user, from the passwd database. Without one the JVM
    fails every Spark process at start: 'failure to login:
    javax.security.auth.login.LoginException: java.lang.NullPointerException:
    invalid null input: name'."""
    uid = os.getuid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        check(False, "failure to login: uid %d has no name in /etc/passwd (invalid null input: name)" % uid)
    log("login: %s (uid %d)" % (name, uid))


def main():
    login()
    c = conf()
    check(c["spark.task.cpus"].isdigit(), "spark.task.cpus")
    prog, args = os.path.basename(sys.argv[0]), sys.argv[1:]
    if prog == "spark-submit":
        submit(args, c)
    elif args and args[0] == "org.apache.spark.deploy.master.Master":
        master(args[1:], c)
    elif args and args[0] == "org.apache.spark.deploy.worker.Worker":
        worker(args[1:], c)
    else:
        check(False, "unexpected command %s %s" % (prog, args))


main()
