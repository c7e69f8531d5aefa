"""What one epoch does on one rank: the optimiser, the training pass and validation.

Precision is applied here and only here: ``torch.autocast`` around the
forward pass (bf16 or fp16), the loss always in fp32, a ``GradScaler`` only
for fp16. Master weights and optimiser state stay fp32 in every mode.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from training.config import Runtime, TrainConfig
from training.gradients import FlatGradients
from training.model import TabularNet

EVAL_CHUNK = 16384
"""Validation rows per forward pass: bounds memory on large validation splits."""
AMP_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW with the fused kernel (CPU and CUDA): one kernel for all parameters instead of a loop."""
    return torch.optim.AdamW(
        model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay, fused=True
    )


def epoch_indices(rows: int, world_size: int, rank: int, seed: int, epoch: int) -> torch.Tensor:
    """This rank's shuffled row order for ``epoch``: exactly ``torch.utils.data.DistributedSampler``'s
    (shuffle, padded to a multiple of the ranks, every ``world_size``-th from ``rank``), as one tensor.

    The sampler builds a Python list of every index each epoch (about a second per epoch at millions of
    rows, inside the timed loop); the same permutation from the same generator, kept as a tensor, costs
    milliseconds. Identical orders keep a checkpoint taken before this change resumable to the same result.
    """
    generator = torch.Generator()
    generator.manual_seed(seed + epoch)
    order = torch.randperm(rows, generator=generator)
    per_rank = -(-rows // world_size)
    padding = per_rank * world_size - rows
    if padding:
        order = torch.cat([order, order.repeat(-(-padding // rows))[:padding]])
    return order[rank::world_size]


def train_epoch(
    step_model: nn.Module,
    model: TabularNet,
    grads: FlatGradients,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    indices: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    batch: int,
    config: TrainConfig,
    runtime: Runtime,
) -> torch.Tensor:
    """One pass over this rank's shard; returns [sum of per-row losses, rows] for reduction."""
    model.train()
    loss_fn = nn.BCEWithLogitsLoss()
    amp = runtime.precision in AMP_DTYPES
    amp_dtype = AMP_DTYPES.get(runtime.precision, torch.bfloat16)
    scaled = scaler.is_enabled()
    total = torch.zeros((), dtype=torch.float64, device=x.device)
    for start in range(0, len(indices), batch):
        idx = indices[start : start + batch]
        # Small steps make per-step Python cost visible: no disabled autocast or scaler calls in fp32.
        with torch.autocast(runtime.device_type, dtype=amp_dtype) if amp else contextlib.nullcontext():
            logits = step_model(x[idx])
        loss = loss_fn(logits.float(), y[idx])
        grads.zero_()
        if scaled:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
        else:
            loss.backward()
        if config.grad_clip_norm:
            grads.clip_norm_(config.grad_clip_norm)
        if scaled:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        total.add_(loss.detach(), alpha=len(idx))
    return torch.stack([total, torch.tensor(float(len(indices)), dtype=torch.float64, device=x.device)])


@torch.inference_mode()
def evaluate(model: TabularNet, x: torch.Tensor, y: torch.Tensor, runtime: Runtime) -> tuple[float, float]:
    """(mean BCE loss, ROC AUC) of ``model`` on ``x``/``y``, under the run's autocast."""
    from sklearn.metrics import roc_auc_score

    model.eval()
    amp = runtime.precision in AMP_DTYPES
    amp_dtype = AMP_DTYPES.get(runtime.precision, torch.bfloat16)
    parts = []
    for start in range(0, len(x), EVAL_CHUNK):
        with torch.autocast(runtime.device_type, dtype=amp_dtype, enabled=amp):
            parts.append(model(x[start : start + EVAL_CHUNK]).float())
    logits = torch.cat(parts)
    loss = nn.functional.binary_cross_entropy_with_logits(logits, y).item()
    auc = float(roc_auc_score(y.cpu().numpy(), logits.cpu().numpy()))
    return loss, auc
