"""Loads the compiled op library (libfusedconv_ops.so) into torch.ops.fusedconv."""
from __future__ import annotations

import os
from pathlib import Path

import torch

_PACKAGE_DIR = Path(__file__).resolve().parent
# Developers can point at a library from their own CMake build tree.
_OVERRIDE_ENV = "FUSEDCONV_LIBRARY"


def _find_library() -> Path:
    override = os.environ.get(_OVERRIDE_ENV)
    if override:
        return Path(override)
    found = sorted(_PACKAGE_DIR.glob("libfusedconv_ops*.so"))
    if not found:
        raise ImportError(
            f"fusedconv: the compiled op library was not found in {_PACKAGE_DIR}. "
            "Install the package with 'pip install .' (or set "
            f"{_OVERRIDE_ENV}=/path/to/libfusedconv_ops.so for a CMake build tree)."
        )
    return found[0]


LIBRARY_PATH = _find_library()
torch.ops.load_library(str(LIBRARY_PATH))


def cuda_kernels_built() -> bool:
    """True when this build of fusedconv contains the CUDA kernels."""
    return torch._C._dispatch_has_kernel_for_dispatch_key("fusedconv::forward", "CUDA")
