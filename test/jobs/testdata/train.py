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

Every rank prints one line,
    train: rank R of N: loss FIRST -> LAST, parameters SHA
where the losses are the mean over all ranks at the first and the last
step, and SHA is the start of the sha256 of the rank's parameters. With
--checkpoint DIR, rank 0 writes DIR/model.pt (torch.save), which
evaluate.py reads.
"""

import argparse
import datetime
import hashlib
import os

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


def model():
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--checkpoint", help="directory rank 0 writes model.pt into")
    args = ap.parse_args()
    if "OMPI_COMM_WORLD_RANK" in os.environ:
        os.environ["RANK"] = os.environ["OMPI_COMM_WORLD_RANK"]
        os.environ["WORLD_SIZE"] = os.environ["OMPI_COMM_WORLD_SIZE"]
    torch.set_num_threads(1)  # several ranks share the node's two cores
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(minutes=2))
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(100 + rank)  # each rank starts elsewhere: DDP gives them rank 0's parameters
    net = DistributedDataParallel(model())
    x, y = dataset(seed=1)
    x, y = x[rank::world], y[rank::world]
    opt = torch.optim.Adam(net.parameters(), lr=0.03)
    losses = []
    for _ in range(args.steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / world)

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
