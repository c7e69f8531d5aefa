"""The per-process training loop, identical for one process and for every DDP rank.

Batches are drawn from a ``DistributedSampler`` (also with one process): its
permutation depends only on ``seed + epoch``, and rank ``r`` of ``n`` takes
every ``n``-th index of it, so at the same GLOBAL batch size the union of the
ranks' step-``t`` batches is exactly the single-process step-``t`` batch.
With gradients averaged by DDP, one process and ``n`` processes then follow
the same optimisation up to floating-point reduction order (and dropout
masks, which are drawn per rank).

Rank 0 alone validates, keeps the early-stopping state, checkpoints (on a
background thread, overlapping the next epoch) and logs; it broadcasts the
stop decision so all ranks leave the loop together.
Tensors are indexed in memory rather than through a ``DataLoader``: for
tabular rows already in RAM the loader's per-batch overhead costs more than
the model's step.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from training.checkpoint import (
    Checkpoint,
    CheckpointWriter,
    EarlyStopping,
    capture_rng,
    load_checkpoint,
    restore_rng,
)
from training.config import Runtime, TrainConfig
from training.data_splits import EncodedData
from training.gradients import FlatGradients
from training.metrics_logger import MetricsLogger
from training.model import TabularNet
from training.steps import epoch_indices, evaluate, make_optimizer, train_epoch


@dataclass(frozen=True)
class WorkerJob:
    """Everything a rank needs; plain picklable data for spawned workers."""

    data: EncodedData
    config: TrainConfig
    runtime: Runtime
    fingerprint: str
    """Checkpoint fingerprint (see :func:`training.checkpoint.fingerprint`)."""
    checkpoint_dir: Path | None
    """Where to checkpoint after every epoch and resume from; None: no checkpoints."""
    logger: MetricsLogger
    """Rank 0 logs per-epoch metrics here."""
    result_path: Path | None = None
    """With several processes, rank 0 saves its :class:`WorkerResult` here for the parent."""
    checkpoint_uri: str | None = None
    """Also upload each checkpoint here (``s3://…``): pods of a cluster job keep no disk between attempts."""


@dataclass
class WorkerResult:
    best_model: dict[str, torch.Tensor]
    """Weights of the best epoch (the model the run returns)."""
    history: list[dict[str, float]]
    """Per completed epoch: epoch, train_loss, val_loss, val_auc, seconds, samples_per_second."""
    early_stopping: EarlyStopping
    resumed_from_epoch: int = 0
    """Epochs restored from a checkpoint (0: started afresh)."""
    rows_trained: int = 0
    """Training rows processed in this session (excluding restored epochs)."""
    loop_seconds: float = 0.0
    """Wall time of this session's epochs, including validation, checkpoints and logging."""
    validation_seconds: float = 0.0
    """Of ``loop_seconds``: scoring the validation split and its AUC, every epoch."""
    checkpoint_seconds: float = 0.0
    """Of ``loop_seconds``: copying each epoch's state for the writer, and waiting for its last write."""
    logging_seconds: float = 0.0
    """Of ``loop_seconds``: handing each epoch's metrics to the logger (MLflow's client)."""


CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def available_cpus(cpu_max: Path = CGROUP_CPU_MAX) -> int:
    """Cores this process may use: its CPU affinity, capped by a cgroup v2 quota (a pod's CPU limit)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = cpu_max.read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass  # no cgroup v2 quota visible: the affinity is the limit
    return cpus


def threads_per_rank(ranks_here: int) -> int:
    """CPU ranks on one machine (or pod) share its cores; more threads than cores only adds contention."""
    return max(1, available_cpus() // ranks_here)


def _clone(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in state.items()}


class _RankState:
    """Model, optimiser and bookkeeping of one rank, fresh or restored from a checkpoint."""

    def __init__(self, rank: int, world_size: int, job: WorkerJob, device: torch.device) -> None:
        config = job.config
        random.seed(config.seed)
        np.random.seed(config.seed)
        torch.manual_seed(config.seed)  # same initial weights on every rank
        self.model = TabularNet(job.data.spec, config.model).to(device)
        torch.manual_seed(config.seed + 7919 * rank)  # independent dropout masks per rank
        self.grads = FlatGradients(self.model.parameters())
        self.optimizer = make_optimizer(self.model, config)
        self.scaler = torch.amp.GradScaler(job.runtime.device_type, enabled=job.runtime.precision == "fp16")
        self.stopper = EarlyStopping(config.patience)
        self.history: list[dict[str, float]] = []
        self.best_state = _clone(self.model.state_dict())
        self.start_epoch = 0

        checkpoint = load_checkpoint(job.checkpoint_dir, job.fingerprint)
        if checkpoint is None:
            return
        if checkpoint.epoch > config.epochs:
            raise ValueError(
                f"checkpoint in {job.checkpoint_dir} already holds {checkpoint.epoch} epochs, more than "
                f"epochs={config.epochs}; raise epochs or use a fresh checkpoint_dir"
            )
        self.model.load_state_dict(checkpoint.model)  # copies into the parameters: gradient views stay
        self.optimizer.load_state_dict(checkpoint.optimizer)
        self.scaler.load_state_dict(checkpoint.scaler)
        if len(checkpoint.rng) == world_size:
            restore_rng(checkpoint.rng[rank], job.runtime.device_type)
        self.stopper, self.history = checkpoint.early_stopping, checkpoint.history
        self.best_state, self.start_epoch = checkpoint.best_model, checkpoint.epoch

    def checkpoint(self, job: WorkerJob, epoch: int, rng: list[Any]) -> Checkpoint:
        return Checkpoint(
            fingerprint=job.fingerprint,
            epoch=epoch,
            model=_clone(self.model.state_dict()),
            best_model=self.best_state,
            optimizer=self.optimizer.state_dict(),
            scaler=self.scaler.state_dict(),
            early_stopping=self.stopper,
            history=self.history,
            rng=rng,
        )


def _gather_rng(job: WorkerJob, world_size: int) -> list[Any]:
    """Every rank's RNG states on rank 0 (a collective: all ranks call it)."""
    if job.checkpoint_dir is None:
        return []
    mine = capture_rng(job.runtime.device_type)
    if world_size == 1:
        return [mine]
    states: list[Any] = [None] * world_size
    dist.all_gather_object(states, mine)
    return states


def run_worker(rank: int, world_size: int, job: WorkerJob) -> WorkerResult | None:
    """Train as rank ``rank`` of ``world_size``; rank 0 returns (or saves) the result."""
    config, runtime = job.config, job.runtime
    job.data.check_finite()  # again here: a staged job may come from anywhere
    distributed = world_size > 1
    # The GPU index is the rank on this node: torchrun (cluster jobs) says so in LOCAL_RANK.
    device = torch.device(
        f"cuda:{os.environ.get('LOCAL_RANK', rank)}" if runtime.device_type == "cuda" else "cpu"
    )
    if distributed and runtime.device_type == "cpu":
        # Ranks on THIS machine share its cores: torchrun says how many (pods of a job each have their own).
        torch.set_num_threads(threads_per_rank(int(os.environ.get("LOCAL_WORLD_SIZE", world_size))))
    state = _RankState(rank, world_size, job, device)
    if rank == 0:  # a restarted task's run still shows the whole curve
        for entry in state.history:
            job.logger.log_metrics(_epoch_metrics(entry), step=int(entry["epoch"]))

    step_model: nn.Module = state.model
    if distributed:
        step_model = nn.parallel.DistributedDataParallel(
            state.model,
            device_ids=[device.index] if device.type == "cuda" else None,
            forward_sync_buffers=False,
        )
    x_train = torch.from_numpy(job.data.x_train).to(device)
    y_train = torch.from_numpy(job.data.y_train).to(device)
    x_val = torch.from_numpy(job.data.x_val).to(device)
    y_val = torch.from_numpy(job.data.y_val).to(device)
    writer = (
        CheckpointWriter(job.checkpoint_dir, job.checkpoint_uri)
        if rank == 0 and job.checkpoint_dir is not None
        else None
    )

    import sklearn.metrics  # noqa: F401  evaluate's AUC: imported before the clock starts, not in epoch 1

    loop_start = time.perf_counter()
    rows = 0
    clock = {"validation": 0.0, "checkpoint": 0.0, "logging": 0.0}  # rank 0's share of the loop, by part
    try:
        for epoch in range(state.start_epoch + 1, config.epochs + 1):
            if state.stopper.stopped:
                break
            epoch_start = time.perf_counter()
            indices = epoch_indices(len(x_train), world_size, rank, config.seed, epoch).to(device)
            sums = train_epoch(
                step_model,
                state.model,
                state.grads,
                state.optimizer,
                state.scaler,
                indices,
                x_train,
                y_train,
                config.batch_size // world_size,
                config,
                runtime,
            )
            if distributed:
                dist.all_reduce(sums)
            rows += len(x_train)
            rng = _gather_rng(job, world_size)
            stop = torch.zeros(1, device=device)
            if rank == 0:
                started = time.perf_counter()
                val_loss, val_auc = evaluate(state.model, x_val, y_val, runtime)
                if state.stopper.update(epoch, val_auc):
                    state.best_state = _clone(state.model.state_dict())
                clock["validation"] += time.perf_counter() - started
                seconds = time.perf_counter() - epoch_start
                entry = {
                    "epoch": epoch,
                    "train_loss": float(sums[0] / sums[1]),
                    "val_loss": val_loss,
                    "val_auc": val_auc,
                    "seconds": seconds,
                    "samples_per_second": len(x_train) / seconds,
                }
                state.history.append(entry)
                started = time.perf_counter()
                if writer is not None:
                    writer.submit(state.checkpoint(job, epoch, rng))
                clock["checkpoint"] += time.perf_counter() - started
                started = time.perf_counter()
                job.logger.log_metrics(_epoch_metrics(entry), step=epoch)
                clock["logging"] += time.perf_counter() - started
                stop[0] = float(state.stopper.stopped)
            if distributed:
                dist.broadcast(stop, src=0)
            state.stopper.stopped = bool(stop.item())
    finally:
        started = time.perf_counter()
        if writer is not None:
            writer.close()
        clock["checkpoint"] += time.perf_counter() - started

    if rank != 0:
        return None
    result = WorkerResult(
        best_model=state.best_state,
        history=state.history,
        early_stopping=state.stopper,
        resumed_from_epoch=state.start_epoch,
        rows_trained=rows,
        loop_seconds=time.perf_counter() - loop_start,
        validation_seconds=clock["validation"],
        checkpoint_seconds=clock["checkpoint"],
        logging_seconds=clock["logging"],
    )
    if job.result_path is not None:
        torch.save(asdict(result), job.result_path)
    return result


def run_worker_from_file(rank: int, world_size: int, job_path: Path) -> None:
    """Spawn entry point: load the pickled :class:`WorkerJob` the parent wrote, then train."""
    import pickle

    with job_path.open("rb") as handle:
        job = pickle.load(handle)
    run_worker(rank, world_size, job)


def _epoch_metrics(entry: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in entry.items() if k != "epoch"}
