"""Distributed XGBoost training for the node's tests, with Debian's
python3-xgboost (1.7.4): what a user's program under the Kubeflow Trainer's
xgboost-distributed, or trainsonnet's xgboost prototype, does with the
DMLC_* variables the pods have.

Worker 0 (DMLC_TASK_ID 0) starts XGBoost's Rabit tracker on
DMLC_TRACKER_PORT for DMLC_NUM_WORKER workers; every worker waits until
the tracker's name resolves (once its pod runs), joins it (retrying the
connection until the tracker listens)
(xgboost.collective reads DMLC_* from the environment) and trains on a
shard of synthetic regression data of its own (y = X w + noise, seeded by
its rank): each boosting round's histograms are all-reduced, so every
worker ends with the same model. With --checkpoint, worker 0 writes the
model every --every rounds (model.json and rounds) and the last round
done to progress, and a run that finds a model resumes from it: its rounds
count toward --rounds, and worker 0 says

    xgboost: worker 0 resumed at round S, redoing K rounds

K being the rounds done after that model by the run that stopped. Each
worker prints

    xgboost: worker R of N: rounds A..B, rmse X -> Y, model <hash>

(rmse over all shards, all-reduced; the hash of the model, the same on
every worker), and worker 0 "xgboost: worker 0 wrote <dir>/model.json at
round K".
"""
import argparse
import hashlib
import os
import socket
import sys
import time

import numpy as np
import xgboost as xgb
from xgboost import collective
from xgboost.tracker import RabitTracker


def wait_for(host, limit=120):
    """Waits until the tracker's host name resolves (its pod runs). Not a
    connection: the tracker takes every connection for a worker's."""
    deadline = time.time() + limit
    while True:
        try:
            socket.getaddrinfo(host, None)
            return
        except OSError as e:
            if time.time() > deadline:
                sys.exit("xgboost: the tracker's host %s does not resolve: %s" % (host, e))
            time.sleep(0.5)


def shard(rank):
    rng = np.random.default_rng(1000 + rank)
    x = rng.normal(size=(2000, 4))
    y = x @ np.array([3.0, -2.0, 0.5, 1.0]) + 0.1 * rng.normal(size=2000)
    return x, y


def rmse(bst, d, y):
    err = np.array([float(((bst.predict(d) - y) ** 2).sum()), float(len(y))])
    tot = collective.allreduce(err, collective.Op.SUM)
    return (tot[0] / tot[1]) ** 0.5


class Checkpoint(xgb.callback.TrainingCallback):
    def __init__(self, rank, path, every, start):
        self.rank, self.path, self.every, self.start = rank, path, every, start

    def after_iteration(self, model, epoch, evals_log):
        done = self.start + epoch + 1
        if self.rank == 0 and self.path and done % self.every == 0:
            tmp = os.path.join(self.path, "model.tmp.json")  # the extension names the format
            model.save_model(tmp)
            os.replace(tmp, os.path.join(self.path, "model.json"))
            with open(os.path.join(self.path, "rounds"), "w") as f:
                f.write(str(done))
            print("xgboost: worker 0 wrote %s/model.json at round %d" % (self.path, done), flush=True)
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--checkpoint", help="directory of the model worker 0 writes and every worker resumes from")
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--round-seconds", type=float, default=0, help="least duration of a round")
    a = ap.parse_args()
    rank = int(os.environ["DMLC_TASK_ID"])
    n = int(os.environ["DMLC_NUM_WORKER"])
    host, port = os.environ["DMLC_TRACKER_URI"], int(os.environ["DMLC_TRACKER_PORT"])
    if rank == 0:
        tracker = RabitTracker(host_ip="0.0.0.0", n_workers=n, port=port, sortby="task")
        tracker.start(n)
    wait_for(host)
    # the tracker may not listen yet: XGBoost retries the connection
    os.environ.setdefault("DMLC_WORKER_CONNECT_RETRY", "120")
    start, resume = 0, None
    if a.checkpoint and os.path.exists(os.path.join(a.checkpoint, "rounds")):
        with open(os.path.join(a.checkpoint, "rounds")) as f:
            start = int(f.read())
        resume = os.path.join(a.checkpoint, "model.json")
    if a.checkpoint and rank == 0:
        os.makedirs(a.checkpoint, exist_ok=True)
    with collective.CommunicatorContext():
        assert collective.get_world_size() == n, collective.get_world_size()
        x, y = shard(rank)
        d = xgb.DMatrix(x, y)
        params = {"objective": "reg:squarederror", "max_depth": 3, "eta": 0.3, "tree_method": "hist", "seed": 0}
        first = xgb.train(params, d, num_boost_round=1, xgb_model=resume)
        before = rmse(first, d, y)
        if resume:
            print("xgboost: worker %d resumed from round %d" % (rank, start), flush=True)

        if resume and rank == 0 and os.path.exists(os.path.join(a.checkpoint, "progress")):
            with open(os.path.join(a.checkpoint, "progress")) as f:
                print("xgboost: worker 0 resumed at round %d, redoing %d rounds" % (start, int(f.read()) - start), flush=True)

        class Slow(xgb.callback.TrainingCallback):
            def after_iteration(self, model, epoch, evals_log):
                time.sleep(a.round_seconds)
                if rank == 0 and a.checkpoint:
                    tmp = os.path.join(a.checkpoint, "progress.tmp")
                    with open(tmp, "w") as f:
                        f.write(str(start + epoch + 1))
                    os.replace(tmp, os.path.join(a.checkpoint, "progress"))
                return False

        bst = xgb.train(params, d, num_boost_round=max(a.rounds - start, 0), xgb_model=resume,
                        callbacks=[Checkpoint(rank, a.checkpoint, a.every, start), Slow()])
        after = rmse(bst, d, y)
        digest = hashlib.sha256(bst.save_raw("json")).hexdigest()[:16]
        print("xgboost: worker %d of %d: rounds %d..%d, rmse %.6f -> %.6f, model %s" % (
            rank, n, start, a.rounds, before, after, digest), flush=True)
    if rank == 0:
        tracker.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
