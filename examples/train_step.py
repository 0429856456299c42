"""Train a tiny model that contains the fused Conv3d -> min -> softmax block.

Random inputs, a fixed random "teacher" of the same architecture gives the targets, and the
student's loss goes down over a few dozen Adam steps. Forward and backward both run the fused
op (autograd: fusedconv/_autograd.py), so no conv-output-sized tensor is ever allocated.

  python examples/train_step.py                  # CPU
  python examples/train_step.py --device cuda    # GPU
"""
from __future__ import annotations

import argparse

import torch
from torch import nn

import fusedconv


class TinyNet(nn.Module):
    """1x1x1 conv lift -> fused block -> per-pixel linear read-out."""

    def __init__(self, c_in=2, c_mid=4, c_out=8, kernel=3, dim=2):
        super().__init__()
        self.lift = nn.Conv3d(c_in, c_mid, 1)
        self.block = fusedconv.Conv3dMinSoftmax(c_mid, c_out, kernel, dim=dim)
        self.head = nn.Conv2d(c_out, 1, 1)

    def forward(self, x):
        return self.head(self.block(torch.tanh(self.lift(x)))).squeeze(1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    device = torch.device(args.device)

    torch.manual_seed(args.seed)
    teacher = TinyNet().to(device).requires_grad_(False)
    student = TinyNet().to(device)
    optimizer = torch.optim.Adam(student.parameters(), lr=args.lr)
    x_fixed = torch.randn(args.batch, 2, 10, 12, 12, device=device)

    losses = []
    for step in range(args.steps):
        x = x_fixed + 0.1 * torch.randn_like(x_fixed)
        loss = nn.functional.mse_loss(student(x), teacher(x))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 10 == 0 or step == args.steps - 1:
            print(f"step {step:3d}  loss {loss.item():.6f}")
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    print(f"mean loss of the first 5 steps {first:.6f} -> last 5 steps {last:.6f}")
    if not last < first:
        raise SystemExit("loss did not go down")
    return losses


if __name__ == "__main__":
    main()
