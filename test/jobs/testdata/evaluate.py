"""Evaluates the checkpoint train.py wrote (test/jobs/training_test.go):
the model it holds predicts held-out samples of the same function, drawn
with another seed, and the mean squared error and R^2 are printed,
    eval: PATH (S steps on N ranks): mse M, r2 R on K held-out samples
and written to OUT_DIR/metrics.json.

    python3 evaluate.py CHECKPOINT OUT_DIR
"""

import json
import os
import sys

import torch

from train import dataset, model


def main():
    path, out = sys.argv[1], sys.argv[2]
    checkpoint = torch.load(path)
    net = model()
    net.load_state_dict(checkpoint["model"])
    net.eval()
    x, y = dataset(seed=2)  # held out: train.py drew its samples with seed 1
    with torch.no_grad():
        mse = torch.nn.functional.mse_loss(net(x), y).item()
    r2 = 1 - mse / y.var(unbiased=False).item()
    metrics = {"checkpoint": path, "steps": checkpoint["steps"], "ranks": checkpoint["ranks"], "mse": mse, "r2": r2, "samples": len(x)}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "metrics.json"), "w") as f:
        json.dump(metrics, f)
    print(f"eval: {path} ({checkpoint['steps']} steps on {checkpoint['ranks']} ranks): "
          f"mse {mse:.6f}, r2 {r2:.4f} on {len(x)} held-out samples", flush=True)


if __name__ == "__main__":
    main()
