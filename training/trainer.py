"""The entry point of the training core: a DataFrame in, a saved model and its metrics out.

:func:`train` knows nothing about pipelines or model registries. It splits and
encodes the data once in the calling process, hands the job to a
:class:`~training.launcher.Launcher` that runs :func:`training.loop.run_worker` as
every rank (by default in-process for ``nproc == 1``, else ``nproc`` local DDP
processes), and saves the best epoch's weights with :func:`training.model.save_model`.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from mlops.data.dataset import DatasetSchema
from training.checkpoint import fingerprint
from training.config import Runtime, TrainConfig, resolve_runtime
from training.data_splits import encode_splits, split_frame
from training.launcher import Launcher, local_launcher
from training.loop import WorkerJob, threads_per_rank
from training.metrics_logger import MetricsLogger, NullLogger
from training.model import TabularNet, rank_step_macs, save_model

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class EpochMetrics:
    epoch: int
    """1-based epoch number."""
    train_loss: float
    """Mean BCE over the epoch's training rows (all ranks)."""
    val_loss: float
    """Mean BCE on the validation split after the epoch."""
    val_auc: float
    """ROC AUC on the validation split after the epoch (the early-stopping criterion)."""
    seconds: float
    """Wall time of the epoch's training and validation."""
    samples_per_second: float
    """Training rows per second of that epoch."""


PARTS = {
    "split": "the row-hash split into train, validation and test",
    "encode": "fitting the feature encoding and building the tensors",
    "ranks": "the launcher: starting the ranks, their epochs, collecting the result",
    "loop": "of ranks: the epochs (training, validation, checkpoints, logging)",
    "validation": "of loop: scoring the validation split each epoch",
    "checkpoints": "of loop: copying each epoch's state, waiting for the last write",
    "logging": "of loop: handing each epoch's metrics to the logger",
    "save": "saving the best epoch's weights and logging them as an artifact",
}
"""The parts :attr:`TrainResult.seconds` times, and what each holds."""


@dataclass(frozen=True)
class TrainResult:
    model_dir: Path
    """Directory written by :func:`training.model.save_model` holding the best epoch's weights."""
    model: TabularNet
    """The same model, loaded, in eval mode on CPU."""
    test_frame: pd.DataFrame
    """Held-out test rows with all original columns (label, protected attributes included)."""
    history: tuple[EpochMetrics, ...]
    """Every completed epoch, including ones restored from a checkpoint."""
    best_epoch: int
    """Epoch whose weights were kept (highest validation AUC)."""
    best_val_auc: float
    best_val_loss: float
    final_val_auc: float
    """Validation AUC after the last epoch run (may be below ``best_val_auc``)."""
    final_val_loss: float
    stopped_early: bool
    """True when patience ran out before ``epochs``."""
    resumed_from_epoch: int
    """Epochs restored from ``checkpoint_dir`` (0: trained from scratch)."""
    samples_per_second: float
    """Training rows per second over this session's epochs, validation and checkpointing included."""
    system_info: dict[str, str]
    """Where it ran: torch version, device, processes, precision, CPU count, CUDA device name."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time by part of the call (:data:`PARTS`): where a training run's time went."""

    @property
    def epochs_run(self) -> int:
        return len(self.history)


def system_info(config: TrainConfig, runtime: Runtime) -> dict[str, str]:
    cuda = runtime.device_type == "cuda"
    return {
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "device": runtime.device_type,
        "cuda_name": torch.cuda.get_device_name(0) if cuda else "",
        "nproc": str(config.nproc),
        "backend": runtime.backend if config.nproc > 1 else "none",
        "precision": runtime.precision,
        "cpu_count": str(os.cpu_count() or 0),
        # Per process: DDP ranks on CPU split the cores between them (see training.loop.run_worker).
        "torch_threads": str(
            threads_per_rank(config.nproc) if config.nproc > 1 and not cuda else torch.get_num_threads()
        ),
    }


def train(
    frame: pd.DataFrame,
    schema: DatasetSchema,
    config: TrainConfig,
    output_dir: Path,
    checkpoint_dir: Path | None = None,
    logger: MetricsLogger | None = None,
    launcher: Launcher | None = None,
) -> TrainResult:
    """Train on ``frame`` and save the best model to ``output_dir``.

    With ``checkpoint_dir`` a checkpoint is written after every epoch, and a
    call with the same directory (same data and settings) continues from the
    last one, ending with the same metrics as an uninterrupted run.
    ``launcher`` decides where the ``config.nproc`` ranks run (default:
    :func:`training.launcher.local_launcher`).
    """
    schema.check(frame, "training data")
    logger = logger or NullLogger()
    # An impossible device or precision fails here, before the data is read; the size is known after encoding.
    resolve_runtime(config, macs_per_step=0)
    started = time.perf_counter()
    splits = split_frame(frame, schema, config)
    seconds = {"split": time.perf_counter() - started}
    started = time.perf_counter()
    data = encode_splits(splits, schema)
    seconds["encode"] = time.perf_counter() - started
    step_macs = rank_step_macs(data.spec, config)
    runtime = resolve_runtime(config, macs_per_step=step_macs)
    info = {**system_info(config, runtime), "macs_per_step": str(step_macs)}
    logger.log_params(
        {
            **config.flat_params(),
            **{f"system.{k}": v for k, v in info.items()},
            "data.train_rows": len(splits.train),
            "data.val_rows": len(splits.val),
            "data.test_rows": len(splits.test),
        }
    )
    job = WorkerJob(
        data=data,
        config=config,
        runtime=runtime,
        fingerprint=fingerprint(config, runtime, data.fingerprint()),
        checkpoint_dir=Path(checkpoint_dir) if checkpoint_dir is not None else None,
        logger=logger,
    )
    started = time.perf_counter()
    outcome = (launcher or local_launcher(config.nproc)).run(job)
    seconds["ranks"] = time.perf_counter() - started
    seconds.update(
        loop=outcome.loop_seconds,
        validation=outcome.validation_seconds,
        checkpoints=outcome.checkpoint_seconds,
        logging=outcome.logging_seconds,
    )

    started = time.perf_counter()
    model = TabularNet(data.spec, config.model)
    model.load_state_dict(outcome.best_model)
    model.eval()
    save_model(Path(output_dir), model)

    history = tuple(EpochMetrics(**entry) for entry in outcome.history)  # type: ignore[arg-type]
    best = history[outcome.early_stopping.best_epoch - 1]
    if outcome.rows_trained:
        speed = outcome.rows_trained / outcome.loop_seconds
    else:  # everything was restored from a checkpoint: report the recorded epochs' speed
        speed = sum(h.samples_per_second for h in history) / len(history)
    logger.log_metrics(
        {
            "best_val_auc": best.val_auc,
            "best_val_loss": best.val_loss,
            "best_epoch": float(best.epoch),
            "epochs_run": float(len(history)),
            "train_samples_per_second": speed,
        },
        step=len(history),
    )
    logger.log_artifacts(Path(output_dir), "model")
    seconds["save"] = time.perf_counter() - started
    return TrainResult(
        model_dir=Path(output_dir),
        model=model,
        test_frame=splits.test,
        history=history,
        best_epoch=best.epoch,
        best_val_auc=best.val_auc,
        best_val_loss=best.val_loss,
        final_val_auc=history[-1].val_auc,
        final_val_loss=history[-1].val_loss,
        stopped_early=outcome.early_stopping.stopped,
        resumed_from_epoch=outcome.resumed_from_epoch,
        samples_per_second=speed,
        system_info=info,
        seconds=seconds,
    )
