"""examples/train_step.py: a tiny model with the fused block trains (its loss goes down) on
every device present, forward and backward through the fused op."""
from __future__ import annotations

import pytest

from conftest import DEVICES, load_example


@pytest.mark.parametrize("device", DEVICES)
def test_train_step_example_loss_goes_down(device, capsys):
    losses = load_example("train_step").main(["--device", device, "--steps", "30"])
    assert len(losses) == 30
    # main() raises SystemExit when the mean of the last 5 steps is not below the first 5.
    assert sum(losses[-5:]) < sum(losses[:5])
    assert "loss" in capsys.readouterr().out
