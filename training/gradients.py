"""Parameter gradients as views of one contiguous buffer.

For a small tabular network a training step is dominated by per-tensor
overhead, not arithmetic: ``clip_grad_norm_`` runs a norm per parameter tensor,
a combine, and a multiply per tensor, which cost about a tenth of the step.
With every ``.grad`` a view of one flat buffer, clipping is one norm and one
multiply and zeroing is one fill. Autograd (and DDP, which copies reduced
buckets into existing gradients) accumulates into an existing ``.grad`` in
place, so the views stay attached as long as nobody sets ``.grad`` to None:
call :meth:`FlatGradients.zero_` instead of ``optimizer.zero_grad()``.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn


class FlatGradients:
    def __init__(self, parameters: Iterable[nn.Parameter]) -> None:
        params = [p for p in parameters if p.requires_grad]
        if not params:
            raise ValueError("model has no trainable parameters")
        first = params[0]
        self.buffer = torch.zeros(sum(p.numel() for p in params), dtype=first.dtype, device=first.device)
        offset = 0
        for param in params:
            if param.dtype != first.dtype or param.device != first.device:
                raise ValueError("all parameters must share one dtype and device to share a gradient buffer")
            param.grad = self.buffer[offset : offset + param.numel()].view_as(param)
            offset += param.numel()
        self.parameters = params

    def zero_(self) -> None:
        self.buffer.zero_()

    def clip_norm_(self, max_norm: float) -> torch.Tensor:
        """Scale all gradients so their global L2 norm is at most ``max_norm`` (as ``clip_grad_norm_``)."""
        norm = torch.linalg.vector_norm(self.buffer)
        if self.buffer.device.type == "cpu":  # reading the norm costs no device sync here: skip no-op scaling
            value = float(norm)
            if value + 1e-6 > max_norm:
                self.buffer.mul_(max_norm / (value + 1e-6))
        else:
            self.buffer.mul_(torch.clamp(max_norm / (norm + 1e-6), max=1.0))
        return norm

    def attached(self) -> bool:
        """True while every ``.grad`` is still a view of the buffer (a misuse check for tests)."""
        return all(p.grad is not None and p.grad._base is self.buffer for p in self.parameters)
