"""examples/kernelbench_modelnew.py: ModelNew is a drop-in for the KernelBench Model."""
from __future__ import annotations

import pytest
import torch

from conftest import kernelbench_example, reference, rel_err


@pytest.fixture(scope="module")
def example():
    return kernelbench_example()


def test_init_inputs_are_the_reference_workload(example):
    assert example.get_init_inputs() == [3, 24, 3, 2]
    (x,) = example.get_inputs()
    assert x.shape == (128, 3, 24, 32, 32) and x.dtype == torch.float32


def test_modelnew_matches_model_under_one_seed(example):
    init = example.get_init_inputs()
    torch.manual_seed(42)
    model = example.Model(*init)
    torch.manual_seed(42)
    model_new = example.ModelNew(*init)
    for key, value in model.state_dict().items():
        assert torch.equal(model_new.state_dict()[key], value), key
    torch.manual_seed(0)
    x = example.get_inputs()[0][:8]  # the real C, D, H, W; a trimmed batch keeps it quick
    with torch.no_grad():
        expected, actual = model(x), model_new(x)
    torch.testing.assert_close(actual, expected, atol=1e-4, rtol=1e-4)
    weight, bias = model.conv.weight, model.conv.bias
    assert rel_err(actual, reference(x, weight, bias, model.dim)) <= 1e-5


def test_modelnew_loads_model_state_dict(example):
    model = example.Model(3, 5, 2, 4)
    model_new = example.ModelNew(3, 5, 2, 4)
    model_new.load_state_dict(model.state_dict())
    x = torch.randn(2, 3, 5, 6, 7)
    with torch.no_grad():
        torch.testing.assert_close(model_new(x), model(x), atol=1e-4, rtol=1e-4)
