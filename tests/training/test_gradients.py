"""The flat gradient buffer behaves like per-tensor gradients with clip_grad_norm_."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from training.gradients import FlatGradients


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))


@pytest.mark.parametrize("max_norm", [0.05, 100.0])
def test_clipping_matches_clip_grad_norm(max_norm: float) -> None:
    x, y = torch.randn(32, 6), torch.randn(32, 1)
    reference, flat_net = _net(), _net()
    nn.functional.mse_loss(reference(x), y).backward()
    expected_norm = nn.utils.clip_grad_norm_(reference.parameters(), max_norm)

    grads = FlatGradients(flat_net.parameters())
    nn.functional.mse_loss(flat_net(x), y).backward()
    norm = grads.clip_norm_(max_norm)

    assert norm.item() == pytest.approx(expected_norm.item(), rel=1e-6)
    for ours, theirs in zip(flat_net.parameters(), reference.parameters(), strict=True):
        assert ours.grad is not None and theirs.grad is not None
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-5, atol=1e-7)


def test_views_survive_backward_and_optimizer_steps() -> None:
    net = _net()
    grads = FlatGradients(net.parameters())
    optimizer = torch.optim.AdamW(net.parameters(), lr=0.1, fused=True)
    for _ in range(3):
        grads.zero_()
        net(torch.randn(4, 6)).sum().backward()
        optimizer.step()
    assert grads.attached()
    assert grads.buffer.abs().sum() > 0  # backward accumulated into the shared buffer
    grads.zero_()
    assert all(p.grad is not None and not p.grad.any() for p in net.parameters())
