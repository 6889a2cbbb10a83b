"""A real data-parallel training, small enough for the test node's CPUs
(test/jobs/training_test.go).

A tiny MLP learns y = x.w + b (8 features, a little noise) from synthetic
data drawn from fixed seeds, with torch.distributed over gloo and
DistributedDataParallel: every rank draws the whole data set, trains on its
own share of it (every world-th sample), and DDP averages the gradients
across the ranks at every step, so every rank ends with the same
parameters.

Rank, world size and rendezvous are torchrun's (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT) or Open MPI's (OMPI_COMM_WORLD_RANK and
OMPI_COMM_WORLD_SIZE, with MASTER_ADDR and MASTER_PORT given by mpirun -x).

Every rank prints, once it has joined the others,
    train: rank R of N starts
and at the end one line,
    train: rank R of N: loss FIRST -> LAST, parameters SHA
where the losses are the mean over all ranks at the first and the last
step, and SHA is the start of the sha256 of the rank's parameters. With
--checkpoint DIR, rank 0 writes DIR/model.pt (torch.save), which
evaluate.py reads.

With --resume DIR (on storage every rank sees), the training survives
being stopped: rank 0 writes its state (parameters, optimizer, losses so
far) to DIR/state.pt every --every steps, atomically, and the number of
the last step done to DIR/progress; a training that finds DIR/state.pt
starts from there, and rank 0 prints
    train: resumed at step S, redoing K steps
K being the steps done after that state by the training that stopped.
Everything else is the same: the data, and the state written, are the
same on every rank, so a resumed training ends with the parameters of one
that never stopped. --step-seconds makes each step last at least that
long, so that a test has time to stop it; --oom RANK:STEP makes one rank
outgrow its memory limit, once (the file oomed in the --resume directory
says it did).
"""

import argparse
import datetime
import hashlib
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

FEATURES = 8
SAMPLES = 1536


def dataset(seed):
    """SAMPLES samples drawn with seed, all of the same function."""
    truth = torch.Generator().manual_seed(27)
    w = torch.randn(FEATURES, 1, generator=truth)
    b = torch.randn(1, generator=truth)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(SAMPLES, FEATURES, generator=g)
    return x, x @ w + b + 0.05 * torch.randn(SAMPLES, 1, generator=g)


def write(path, how):
    """Writes path atomically: a stopped training leaves the old or the new file."""
    with open(path + ".tmp", "wb") as f:
        how(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def model():
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--checkpoint", help="directory rank 0 writes model.pt into")
    ap.add_argument("--resume", help="directory of the state to resume from and to write")
    ap.add_argument("--every", type=int, default=10, help="steps between two states written")
    ap.add_argument("--step-seconds", type=float, default=0, help="least duration of a step")
    ap.add_argument("--oom", metavar="RANK:STEP", help="rank RANK takes memory without end at step STEP (a fault)")
    args = ap.parse_args()
    if "OMPI_COMM_WORLD_RANK" in os.environ:
        os.environ["RANK"] = os.environ["OMPI_COMM_WORLD_RANK"]
        os.environ["WORLD_SIZE"] = os.environ["OMPI_COMM_WORLD_SIZE"]
    torch.set_num_threads(1)  # several ranks share the node's two cores
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(minutes=2))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"train: rank {rank} of {world} starts", flush=True)  # make bench-start's mark

    torch.manual_seed(100 + rank)  # each rank starts elsewhere: DDP gives them rank 0's parameters
    net = DistributedDataParallel(model())
    x, y = dataset(seed=1)
    x, y = x[rank::world], y[rank::world]
    opt = torch.optim.Adam(net.parameters(), lr=0.03)
    losses = []
    state = os.path.join(args.resume, "state.pt") if args.resume else None
    progress = os.path.join(args.resume, "progress") if args.resume else None
    if state and os.path.exists(state):
        saved = torch.load(state)
        net.module.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        losses = saved["losses"]
        if rank == 0:
            with open(progress) as f:
                done = int(f.read())
            print(f"train: resumed at step {len(losses)}, redoing {done - len(losses)} steps", flush=True)
    elif state and rank == 0:
        os.makedirs(args.resume, exist_ok=True)
    oom_rank, oom_step = (int(n) for n in args.oom.split(":")) if args.oom else (-1, -1)
    while len(losses) < args.steps:
        began = time.monotonic()
        oomed = os.path.join(args.resume or ".", "oomed")
        if rank == oom_rank and len(losses) == oom_step and not os.path.exists(oomed):
            open(oomed, "w").close()  # once: a retry trains on
            print(f"train: rank {rank} takes memory without end at step {oom_step}", flush=True)
            hog = []
            while True:  # until the kernel kills it at its container's limit
                hog.append(bytearray(b"\x01") * (64 << 20))  # written: resident
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / world)
        if state and rank == 0:
            write(progress, lambda f: f.write(str(len(losses)).encode()))
            if len(losses) % args.every == 0:
                saved = {"model": net.module.state_dict(), "optimizer": opt.state_dict(), "losses": losses}
                write(state, lambda f: torch.save(saved, f))
        time.sleep(max(0, args.step_seconds - (time.monotonic() - began)))

    params = b"".join(p.detach().numpy().tobytes() for p in net.module.parameters())
    sha = hashlib.sha256(params).hexdigest()[:16]
    print(f"train: rank {rank} of {world}: loss {losses[0]:.6f} -> {losses[-1]:.6f}, parameters {sha}", flush=True)
    if rank == 0 and args.checkpoint:
        os.makedirs(args.checkpoint, exist_ok=True)
        path = os.path.join(args.checkpoint, "model.pt")
        torch.save({"model": net.module.state_dict(), "steps": args.steps, "ranks": world, "loss": losses[-1]}, path)
        print(f"train: rank 0 wrote {path} ({os.path.getsize(path)} bytes)", flush=True)
    dist.barrier()  # the checkpoint is written before any rank ends
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
