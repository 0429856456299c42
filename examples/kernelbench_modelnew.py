"""KernelBench level 2 problem 24 (Conv3d -> min -> softmax) with a fused ``ModelNew``.

``Model`` is the reference block; ``ModelNew`` has the same constructor, parameters and
state_dict keys (``conv.weight``, ``conv.bias``), so under the same ``torch.manual_seed``
both start with identical weights, but its forward is one call to the fused op
``torch.ops.fusedconv.forward`` (it never materialises the conv output).

Run it to compare the two on the reference workload:  python examples/kernelbench_modelnew.py
"""
import torch
import torch.nn as nn

import fusedconv


class Model(nn.Module):
    """Reference: 3-D convolution, min over one axis, softmax over channels."""

    def __init__(self, in_channels, out_channels, kernel_size, dim):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.dim = dim

    def forward(self, x):
        x = self.conv(x)
        x = torch.min(x, dim=self.dim)[0]
        return torch.softmax(x, dim=1)


class ModelNew(nn.Module):
    """Same block, same parameters, run by the fused fusedconv op."""

    def __init__(self, in_channels, out_channels, kernel_size, dim):
        super().__init__()
        # Built exactly like Model so that the same seed gives the same initial weights.
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.dim = dim

    def forward(self, x):
        return fusedconv.conv3d_min_softmax(x, self.conv.weight, self.conv.bias, self.dim)


batch_size = 128
in_channels = 3
out_channels = 24
D, H, W = 24, 32, 32
kernel_size = 3
dim = 2


def get_inputs():
    """The forward inputs, as KernelBench draws them."""
    return [torch.rand(batch_size, in_channels, D, H, W)]


def get_init_inputs():
    """The constructor arguments of Model and ModelNew."""
    return [in_channels, out_channels, kernel_size, dim]


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = Model(*get_init_inputs()).to(device)
    torch.manual_seed(0)
    model_new = ModelNew(*get_init_inputs()).to(device)
    inputs = [t.to(device) for t in get_inputs()]
    with torch.no_grad():
        expected = model(*inputs)
        actual = model_new(*inputs)
    err = (actual - expected).abs().max().item()
    ok = torch.allclose(actual, expected, atol=1e-4, rtol=1e-4)
    print(f"device={device} max_abs_err={err:.3e} allclose(1e-4, 1e-4)={ok}")
    raise SystemExit(0 if ok else 1)
