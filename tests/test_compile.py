"""torch.compile and torch.library.opcheck with autograd: the op traces as one node, forward and
backward, with no graph breaks; the backward op's fake kernel matches the real one."""
from __future__ import annotations

import pytest
import torch

import fusedconv  # noqa: F401
from conftest import DEVICES, cudnn_without_tf32, eager, make_inputs, rel_err, requires_cuda


class _Block(torch.nn.Module):
    """A tiny model: the fused block between two ordinary layers."""

    def __init__(self, c_in=3, c_out=5, kernel=(3, 2, 3), dim=2):
        super().__init__()
        self.pre = torch.nn.Conv3d(2, c_in, 1)
        self.conv = torch.nn.Conv3d(c_in, c_out, kernel)
        self.dim = dim

    def forward(self, x):
        h = self.pre(x)
        y = torch.ops.fusedconv.forward(h, self.conv.weight, self.conv.bias, self.dim)
        return (y * y.flip(1)).sum(1)


def _eager_reference(model, x):
    h = model.pre(x)
    y = eager(h, model.conv.weight, model.conv.bias, model.dim)
    return (y * y.flip(1)).sum(1)


def _step(fn, model, x):
    model.zero_grad(set_to_none=True)
    out = fn(x)
    out.square().mean().backward()
    return out.detach(), {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def _check_against_eager(compiled, model, x, tol):
    # Both sides with cuDNN's TF32 off: the ordinary conv layers around the op would otherwise
    # run TF32 on the compiled side (1.7e-4 on pre.weight's gradient on the H200).
    with cudnn_without_tf32():
        out, grads = _step(compiled, model, x)
        ref_out, ref_grads = _step(lambda t: _eager_reference(model, t), model, x)
    assert rel_err(out, ref_out) <= tol
    for name in ref_grads:
        assert rel_err(grads[name], ref_grads[name]) <= tol, (name, rel_err(grads[name], ref_grads[name]))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph_forward_backward_cpu(backend):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _Block()
    x = torch.randn(2, 2, 7, 6, 9)
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    _check_against_eager(compiled, model, x, 1e-4)


def test_compile_dynamic_shapes_and_other_dims_cpu():
    torch._dynamo.reset()
    torch.manual_seed(0)
    for dim in (3, 4):
        model = _Block(dim=dim)
        compiled = torch.compile(model, fullgraph=True, backend="aot_eager", dynamic=True)
        for batch, depth in ((2, 7), (3, 9)):
            _check_against_eager(compiled, model, torch.randn(batch, 2, depth, 6, 8), 1e-4)


@requires_cuda
def test_compile_reduce_overhead_cuda():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _Block(c_in=3, c_out=7).cuda()
    compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    # CUDA graphs replay from the third call on; check a few replays with fresh inputs.
    for _ in range(4):
        x = torch.randn(4, 2, 9, 10, 11, device="cuda")
        _check_against_eager(compiled, model, x, 1e-4)


def _opcheck_cases(device):
    x, w, b = make_inputs((2, 3, 5, 6, 7, 8, 3, 2, 3), device=device)
    x64, w64, b64 = make_inputs((1, 2, 3, 5, 5, 6, 2, 2, 2), dtype=torch.float64, device=device)
    return {
        "dim2": (x, w, b, 2),
        "dim3_no_bias": (x, w, None, 3),
        "dim4_float64": (x64, w64, b64, 4),
        "channels_last": (x.to(memory_format=torch.channels_last_3d), w, b, -3),
    }


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(_opcheck_cases("cpu")))
@pytest.mark.parametrize("requires_grad", [True, False])
def test_opcheck_forward_with_autograd(case, requires_grad, device):
    x, w, b, dim = _opcheck_cases(device)[case]
    args = [x.requires_grad_(requires_grad), w.requires_grad_(requires_grad),
            None if b is None else b.requires_grad_(requires_grad), dim]
    torch.library.opcheck(torch.ops.fusedconv.forward.default, args)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(_opcheck_cases("cpu")))
@pytest.mark.parametrize("mask", [[True, True, True], [False, True, False], [True, False, True]])
def test_opcheck_backward_op(case, mask, device):
    x, w, b, dim = _opcheck_cases(device)[case]
    y = torch.ops.fusedconv.forward(x, w, b, dim)
    grad_y = torch.randn_like(y)
    torch.library.opcheck(torch.ops.fusedconv.backward.default, (grad_y, y, x, w, b, dim, mask))


def test_backward_fake_kernel_validates_like_the_real_one():
    x, w, b = make_inputs((2, 3, 5, 6, 7, 8, 3, 2, 3))
    grad_y = torch.randn(2, 5, 6, 6)
    y = torch.rand(2, 5, 6, 6)
    bad = {
        "channel mismatch": (grad_y, y, x[:, :2], w, b, 2),
        "grad_y must have the output's shape": (grad_y[:1], y, x, w, b, 2),
        "y must have the output's shape": (grad_y, y[:, :2], x, w, b, 2),
        "dim must be one of": (grad_y, y, x, w, b, 7),
    }
    from torch._subclasses.fake_tensor import FakeTensorMode

    for message, args in bad.items():
        with pytest.raises(RuntimeError, match=message):
            torch.ops.fusedconv.backward(*args, [True, True, True])
        with FakeTensorMode() as mode, pytest.raises(RuntimeError, match=message):
            fake = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
            torch.ops.fusedconv.backward(*fake, [True, True, True])
