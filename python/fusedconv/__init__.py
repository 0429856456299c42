"""fusedconv: softmax(min(conv3d(x), dim), dim=1) as one fused PyTorch operator.

The op is ``torch.ops.fusedconv.forward(x, weight, bias=None, dim=2)``; this package
adds the functional form, an ``nn.Module`` drop-in, a fake (meta) kernel for
``torch.compile`` and a CLI (``python -m fusedconv``).
"""
from fusedconv import _library  # noqa: F401  (registers torch.ops.fusedconv)
from fusedconv import _fake  # noqa: F401  (registers the fake kernel)
from fusedconv import _autograd  # noqa: F401  (registers autograd)
from fusedconv._library import cuda_kernels_built
from fusedconv.functional import conv3d_min_softmax, kernel_path
from fusedconv.module import Conv3dMinSoftmax

__all__ = ["Conv3dMinSoftmax", "conv3d_min_softmax", "cuda_kernels_built", "kernel_path"]
__version__ = "0.1.0"
