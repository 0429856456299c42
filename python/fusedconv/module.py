"""``nn.Module`` drop-in for the KernelBench-style Conv3d -> min -> softmax block."""
from __future__ import annotations

import copy

import torch
from torch import nn

from fusedconv.functional import conv3d_min_softmax

_VALID_DIMS = (2, 3, 4, -3, -2, -1)


def _check_dim(dim: object) -> int:
    # bool is an int subclass; True/False as a dim is almost certainly a mistake.
    if isinstance(dim, bool) or not isinstance(dim, int) or dim not in _VALID_DIMS:
        raise ValueError(
            f"Conv3dMinSoftmax: dim must be one of 2, 3, 4 (or -3, -2, -1): the depth, height or "
            f"width axis of the 5-D conv output, got dim={dim!r}"
        )
    return dim


def _triple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value, value)


class Conv3dMinSoftmax(nn.Module):
    """``softmax(min(conv3d(x), dim).values, dim=1)`` as one module, run by the fused op.

    A drop-in for the module people already have::

        class Model(nn.Module):
            def __init__(self, in_channels, out_channels, kernel_size, dim):
                super().__init__()
                self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
                self.dim = dim
            def forward(self, x):
                x = self.conv(x)
                x = torch.min(x, dim=self.dim)[0]
                return torch.softmax(x, dim=1)

    The parameters live in ``self.conv`` (an ``nn.Conv3d`` with stride 1 and no padding), so
    the state_dict keys are ``conv.weight`` and ``conv.bias`` exactly as in ``Model``: a
    ``Model`` state_dict loads as is, and the same ``torch.manual_seed`` gives the same
    initial weights as ``Model``. Only ``forward`` differs: it calls
    ``torch.ops.fusedconv.forward``, which never materialises the conv output.

    Args:
        in_channels: C_in of the input (B, C_in, D, H, W).
        out_channels: C_out, the number of conv filters (the softmax axis).
        kernel_size: int or (kD, kH, kW).
        dim: conv-output axis to take the min over: 2 (depth, default), 3 (height) or 4 (width);
            -3, -2, -1 mean the same.
        bias: whether the conv has a bias (default True).
        device, dtype: as for ``nn.Conv3d``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        dim: int = 2,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.conv = nn.Conv3d(
            in_channels, out_channels, kernel_size, bias=bias, device=device, dtype=dtype
        )
        self.dim = _check_dim(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Returns (B, C_out, ...) with the ``dim`` axis of the conv output removed."""
        return conv3d_min_softmax(x, self.conv.weight, self.conv.bias, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"

    @classmethod
    def from_module(cls, model: nn.Module) -> "Conv3dMinSoftmax":
        """Converts a ``Model``-like module into a ``Conv3dMinSoftmax`` computing the same thing.

        ``model`` needs a ``.conv`` attribute holding an ``nn.Conv3d`` with stride 1, padding 0
        (``padding_mode`` is then irrelevant), dilation 1 and groups 1, and a ``.dim`` attribute
        (2, 3, 4 or -3, -2, -1). The result holds a copy of ``model.conv`` (same weights, bias,
        device, dtype and ``requires_grad``); ``model`` itself is left unchanged. Its train/eval
        mode follows ``model``.

        Raises:
            ValueError: when ``model`` lacks ``.conv``/``.dim`` or its conv or dim cannot be
                represented by the fused op; the message names the offending setting.
        """
        name = type(model).__name__
        conv = getattr(model, "conv", None)
        if not isinstance(conv, nn.Conv3d):
            raise ValueError(
                f"Conv3dMinSoftmax.from_module: {name} must have a .conv attribute that is an "
                f"nn.Conv3d, got {type(conv).__name__}"
            )
        if not hasattr(model, "dim"):
            raise ValueError(f"Conv3dMinSoftmax.from_module: {name} has no .dim attribute")
        unsupported = []
        if _triple(conv.stride) != (1, 1, 1):
            unsupported.append(f"stride={conv.stride} (need 1)")
        padding = conv.padding
        if padding != "valid" and (isinstance(padding, str) or _triple(padding) != (0, 0, 0)):
            unsupported.append(f"padding={padding!r} (need 0)")
        if _triple(conv.dilation) != (1, 1, 1):
            unsupported.append(f"dilation={conv.dilation} (need 1)")
        if conv.groups != 1:
            unsupported.append(f"groups={conv.groups} (need 1)")
        if unsupported:
            raise ValueError(
                f"Conv3dMinSoftmax.from_module: the fused op only supports Conv3d with stride 1, "
                f"padding 0, dilation 1 and groups 1; {name}.conv = {conv} has "
                + ", ".join(unsupported)
            )
        try:
            dim = _check_dim(model.dim)
        except ValueError as err:
            raise ValueError(f"Conv3dMinSoftmax.from_module: {name}.dim: {err}") from None

        fused = cls.__new__(cls)
        nn.Module.__init__(fused)
        fused.conv = copy.deepcopy(conv)
        fused.dim = dim
        fused.train(model.training)
        return fused
