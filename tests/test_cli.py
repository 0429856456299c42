"""The main job: python -m fusedconv (smoke tests on a tiny shape, on the CPU)."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
import torch

import fusedconv
from fusedconv import __main__ as cli

TINY = "2,3,5,6,7,8,3"


def _run(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "fusedconv", *args], capture_output=True, text=True, timeout=timeout
    )


def test_cli_tiny_shape_on_cpu():
    result = _run("--shape", TINY, "--device", "cpu", "--repeats", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "B=2 C_in=3 C_out=5 D=6 H=7 W=8 k=3x3x3 dim=2 dtype=float32 precision=highest" in out
    assert "check vs eager: max abs err" in out and "PASS" in out
    assert "check vs float64: rel err" in out
    assert "eager PyTorch: median" in out and "fusedconv:     median" in out
    assert "speedup:" in out and "result: PASS" in out
    assert "[fusedconv] timing fused" in result.stderr  # progress goes to stderr


@pytest.fixture
def in_process(capsys):
    """Runs cli.main in this process; restores the global precision settings it changes."""
    precision = torch.get_float32_matmul_precision()
    cudnn_tf32 = torch.backends.cudnn.allow_tf32

    def run(*args):
        try:
            code = cli.main(list(args))
        except SystemExit as exit_:  # argparse usage errors
            code = exit_.code
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    yield run
    torch.set_float32_matmul_precision(precision)
    torch.backends.cudnn.allow_tf32 = cudnn_tf32


@pytest.mark.parametrize(
    "extra",
    [
        ["--shape", TINY, "--dim", "-1", "--dtype", "float64"],
        ["--shape", TINY, "--dim", "3", "--dtype", "bfloat16", "--precision", "high"],
        ["--shape", "1,2,4,5,6,7,3,1,2", "--precision", "medium", "--no-fp64-check"],
    ],
)
def test_cli_options(extra, in_process):
    code, out, err = in_process("--device", "cpu", "--repeats", "2", "--warmup", "0", *extra)
    assert code == 0, out + err
    assert "result: PASS" in out


@pytest.mark.parametrize(
    "args,message",
    [
        (["--shape", "2,3"], "--shape wants"),
        (["--shape", TINY, "--dim", "1"], "dim must be one of 2, 3, 4"),
        (["--shape", "2,3,5,2,7,8,3"], "kernel larger than input"),
        (["--dtype", "int32"], "invalid choice"),
        (["--shape", TINY, "--repeats", "0"], "--repeats must be >= 1"),
    ],
)
def test_cli_usage_errors_exit_2(args, message, in_process):
    code, _, err = in_process("--device", "cpu", *args)
    assert code == 2
    assert message in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without a GPU")
def test_cli_cuda_without_gpu():
    result = _run("--device", "cuda", "--shape", TINY)
    assert result.returncode != 0 and "no CUDA GPU" in result.stderr


def test_cli_fails_when_the_check_fails(monkeypatch, in_process):
    """A wrong fused result must give exit code 1 (in-process, with a sabotaged op)."""
    real = fusedconv.conv3d_min_softmax
    monkeypatch.setattr(fusedconv, "conv3d_min_softmax", lambda *a: real(*a).flip(1))
    code, out, _ = in_process("--shape", TINY, "--device", "cpu", "--repeats", "1", "--warmup", "0")
    assert code == 1
    assert "FAIL" in out and "result: FAIL" in out


def test_console_script():
    """The `fusedconv` console script (present once the package is pip-installed)."""
    script = shutil.which("fusedconv")
    if script is None:
        pytest.skip("the fusedconv console script is not installed (not a pip install)")
    result = subprocess.run(
        [script, "--shape", TINY, "--device", "cpu", "--repeats", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "result: PASS" in result.stdout
