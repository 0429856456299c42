"""The built op library itself (runs without a GPU)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

import fusedconv._library as library

# std::ostream::_M_insert<long>: defined only by libstdc++ itself.
_LIBSTDCXX_ONLY_SYMBOL = "_ZNSo9_M_insertIlEERSoT_"


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs binutils' nm")
def test_library_shares_the_process_libstdcxx():
    """A static libstdc++ inside the op library crashes every error message (seen on the H200:
    segfault in ostream formatting inside TORCH_CHECK): the symbol must be imported, not defined."""
    out = subprocess.run(["nm", "-D", "--defined-only", str(library.LIBRARY_PATH)],
                         capture_output=True, text=True, check=True).stdout
    assert _LIBSTDCXX_ONLY_SYMBOL not in out, f"{library.LIBRARY_PATH} carries its own libstdc++"


def test_error_message_survives_the_library_boundary():
    import torch

    x = torch.randn(1, 3, 4, 4, 4)
    with pytest.raises(RuntimeError, match=r"channel mismatch: x has C_in=3"):
        torch.ops.fusedconv.forward(x, torch.randn(2, 2, 3, 3, 3))
