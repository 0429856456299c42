"""Conv3dMinSoftmax as a drop-in for the plain PyTorch Model (DESIGN.md section 1)."""
from __future__ import annotations

import pytest
import torch
from torch import nn

import fusedconv
from fusedconv import Conv3dMinSoftmax
from conftest import DEVICES, cudnn_without_tf32, kernelbench_example, reference, rel_err


# The module users already have (DESIGN.md section 1), as the KernelBench example defines it.
Model = kernelbench_example().Model


ARGS = (3, 7, 3)  # in_channels, out_channels, kernel_size


def _x(device="cpu", dtype=torch.float32):
    return torch.rand(2, 3, 7, 9, 8, device=device, dtype=dtype)


def _assert_same_output(fused, model, x):
    with torch.no_grad(), cudnn_without_tf32():
        actual, expected = fused(x), model(x)
    torch.testing.assert_close(actual, expected, atol=1e-4, rtol=1e-4)
    assert rel_err(actual, reference(x, model.conv.weight, model.conv.bias, model.dim)) <= 1e-5


@pytest.mark.parametrize("dim", [2, 3, 4, -1])
def test_same_seed_same_init_and_output(dim):
    torch.manual_seed(123)
    model = Model(*ARGS, dim)
    torch.manual_seed(123)
    fused = Conv3dMinSoftmax(*ARGS, dim=dim)
    assert list(fused.state_dict()) == ["conv.weight", "conv.bias"]
    for key, value in model.state_dict().items():
        assert torch.equal(fused.state_dict()[key], value), key
    _assert_same_output(fused, model, _x())


def test_state_dict_round_trip_with_model():
    model = Model(*ARGS, 3)
    fused = Conv3dMinSoftmax(*ARGS, dim=3)
    fused.load_state_dict(model.state_dict())  # strict: same keys, same shapes
    _assert_same_output(fused, model, _x())
    other = Model(*ARGS, 3)
    other.load_state_dict(fused.state_dict())
    for key, value in model.state_dict().items():
        assert torch.equal(other.state_dict()[key], value)


def test_default_dim_and_kernel_tuple():
    fused = Conv3dMinSoftmax(3, 5, (3, 2, 1))
    assert fused.dim == 2 and fused.conv.kernel_size == (3, 2, 1)
    x = _x()
    out = fused(x)
    assert out.shape == (2, 5, 8, 8)
    assert rel_err(out, reference(x, fused.conv.weight, fused.conv.bias, 2)) <= 1e-5


def test_no_bias():
    fused = Conv3dMinSoftmax(*ARGS, dim=4, bias=False)
    assert fused.conv.bias is None and list(fused.state_dict()) == ["conv.weight"]
    x = _x()
    assert rel_err(fused(x), reference(x, fused.conv.weight, None, 4)) <= 1e-5


@pytest.mark.parametrize("device", DEVICES)
def test_device_and_dtype_arguments(device):
    fused = Conv3dMinSoftmax(*ARGS, dim=2, device=device, dtype=torch.float64)
    assert fused.conv.weight.dtype == torch.float64 and fused.conv.weight.device.type == device
    x = _x(device, torch.float64)
    out = fused(x)
    assert out.dtype == torch.float64
    assert rel_err(out, reference(x, fused.conv.weight, fused.conv.bias, 2)) <= 1e-12


@pytest.mark.parametrize("dim", [0, 1, 5, -4, 2.0, "2", True, None])
def test_constructor_rejects_bad_dim(dim):
    with pytest.raises(ValueError, match=r"dim must be one of 2, 3, 4"):
        Conv3dMinSoftmax(*ARGS, dim=dim)


def test_repr_mentions_dim():
    assert "dim=3" in repr(Conv3dMinSoftmax(*ARGS, dim=3))


# ---- from_module ---------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [2, 3, 4, -2])
def test_from_module_same_output(dim, device):
    model = Model(*ARGS, dim).to(device)
    fused = Conv3dMinSoftmax.from_module(model)
    assert isinstance(fused, Conv3dMinSoftmax) and fused.dim == dim
    assert fused.conv.weight.device == model.conv.weight.device
    _assert_same_output(fused, model, _x(device))


def test_from_module_copies_and_keeps_flags():
    model = Model(*ARGS, 2).double().eval()
    model.conv.bias.requires_grad_(False)
    fused = Conv3dMinSoftmax.from_module(model)
    assert not fused.training
    assert fused.conv.weight.dtype == torch.float64
    assert fused.conv.weight.requires_grad and not fused.conv.bias.requires_grad
    assert fused.conv.weight.data_ptr() != model.conv.weight.data_ptr()
    before = fused.conv.weight.detach().clone()
    with torch.no_grad():
        model.conv.weight.add_(1.0)  # the source changes; the converted copy does not
    assert torch.equal(fused.conv.weight, before)
    assert set(fused.state_dict()) == set(model.state_dict())


def test_from_module_accepts_valid_padding_and_any_padding_mode():
    model = Model(*ARGS, 2)
    model.conv = nn.Conv3d(3, 7, 3, padding="valid", padding_mode="reflect")
    fused = Conv3dMinSoftmax.from_module(model)
    _assert_same_output(fused, model, _x())


def test_from_module_without_bias():
    model = Model(*ARGS, 3)
    model.conv = nn.Conv3d(3, 7, (2, 3, 1), bias=False)
    _assert_same_output(Conv3dMinSoftmax.from_module(model), model, _x())


@pytest.mark.parametrize(
    "conv,match",
    [
        (nn.Conv3d(3, 7, 3, stride=2), r"stride=\(2, 2, 2\)"),
        (nn.Conv3d(3, 7, 3, stride=(1, 1, 2)), r"stride=\(1, 1, 2\)"),
        (nn.Conv3d(3, 7, 3, padding=1), r"padding=\(1, 1, 1\)"),
        (nn.Conv3d(3, 7, 3, padding="same"), r"padding='same'"),
        (nn.Conv3d(3, 7, 3, padding=1, padding_mode="circular"), r"padding=\(1, 1, 1\)"),
        (nn.Conv3d(3, 7, 3, dilation=2), r"dilation=\(2, 2, 2\)"),
        (nn.Conv3d(3, 6, 3, groups=3), r"groups=3"),
        (nn.Conv3d(3, 6, 3, stride=2, groups=3), r"stride=\(2, 2, 2\) \(need 1\), groups=3"),
    ],
)
def test_from_module_rejects_unrepresentable_conv(conv, match):
    model = Model(*ARGS, 2)
    model.conv = conv
    with pytest.raises(ValueError, match=r"only supports Conv3d with stride 1.*" + match):
        Conv3dMinSoftmax.from_module(model)


def test_from_module_rejects_missing_or_wrong_parts():
    model = Model(*ARGS, 2)
    model.conv = nn.Conv2d(3, 7, 3)
    with pytest.raises(ValueError, match=r"\.conv attribute that is an nn.Conv3d, got Conv2d"):
        Conv3dMinSoftmax.from_module(model)
    with pytest.raises(ValueError, match=r"got NoneType"):
        Conv3dMinSoftmax.from_module(nn.Identity())
    model = Model(*ARGS, 2)
    del model.dim
    with pytest.raises(ValueError, match=r"Model has no \.dim attribute"):
        Conv3dMinSoftmax.from_module(model)
    for dim in (0, 1, 5):
        with pytest.raises(ValueError, match=rf"Model\.dim: .*got dim={dim}"):
            Conv3dMinSoftmax.from_module(Model(*ARGS, dim))


def test_public_names_have_docstrings():
    names = [fusedconv.Conv3dMinSoftmax, fusedconv.Conv3dMinSoftmax.from_module,
             fusedconv.Conv3dMinSoftmax.forward, fusedconv.conv3d_min_softmax,
             fusedconv.kernel_path, fusedconv.cuda_kernels_built, fusedconv]
    for obj in names:
        assert obj.__doc__ and len(obj.__doc__.strip()) > 20, obj
    for name in fusedconv.__all__:
        assert getattr(fusedconv, name).__doc__, name
