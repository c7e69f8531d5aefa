"""Train the tabular classifier as one pipeline task, logged as one MLflow run.

This is the glue between the pipeline's plain values and the training core:
it reads the validated dataset, opens the task's MLflow run, hands the core an
:class:`~training.metrics_logger.MlflowLogger` for that run, and writes the held-out
test split for the evaluation and export steps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mlops.data.dataset import DatasetSchema, load_table
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import DATASET_DIGEST_TAG, DATASET_URI_TAG
from training.config import TrainConfig

if TYPE_CHECKING:
    from components.train.config import TrainTaskSettings
    from training.launcher import Launcher

TASK_NAME = "train"
CHECKPOINT_SUBDIR = "checkpoints"
SECONDS_PREFIX = "seconds."
"""The run's metrics of where the step's time went: ``seconds.read``, ``seconds.loop``, … (each part in
:data:`training.trainer.PARTS`, plus ``read`` and ``test_split``)."""


def time_line(seconds: dict[str, float]) -> str:
    """The step log's line of where the time went: each part once, the loop's own parts after it."""
    inner = ("validation", "checkpoints", "logging")
    top = [f"{part} {value:.2f}" for part, value in seconds.items() if part not in inner]
    within = ", ".join(f"{part} {seconds[part]:.2f}" for part in inner if part in seconds)
    return "train-model seconds: " + ", ".join(top) + (f" (of loop: {within})" if within else "")


@dataclass(frozen=True)
class TrainingOutcome:
    """What the pipeline passes on and shows for the training step."""

    run_id: str
    """MLflow run id of this task (lineage for the registered model version)."""
    val_auc: float
    """Validation ROC AUC of the returned (best-epoch) model."""
    val_loss: float
    """Validation BCE loss of the returned model."""
    best_epoch: int
    """Epoch whose weights were kept."""
    epochs_run: int
    """Epochs completed, including ones restored from a checkpoint."""
    stopped_early: bool
    """True when early stopping ended training before ``epochs``."""
    resumed_from_epoch: int
    """Epochs restored from the checkpoint directory (0: trained from scratch)."""
    samples_per_second: float
    """Training throughput of this task's epochs (validation and checkpointing included)."""
    split_rule: str = ""
    """The split rule (JSON, :class:`training.row_split.SplitRule`): registered with the version."""


def resolve_checkpoint_dir(checkpoint_dir: str, model_dir: Path) -> Path:
    """``""`` means ``<model_dir>/../checkpoints``: next to the task's outputs, so a retried task resumes.

    On a cluster that directory lives in the pod; pass a path on a persistent
    volume to survive a pod being replaced.
    """
    return Path(checkpoint_dir) if checkpoint_dir.strip() else model_dir.parent / CHECKPOINT_SUBDIR


def launcher_for(settings: TrainTaskSettings, nproc: int) -> Launcher:
    """The launcher the task's settings name: ranks in this task, or a job on the Kubernetes cluster."""
    from training.launcher import local_launcher

    if settings.launcher == "local":
        return local_launcher(nproc)
    from training.kubernetes_config import check_policy
    from training.kubernetes_launcher import KubernetesLauncher

    check_policy(settings.cluster, nproc)  # refuse a bad plan before the training data is even read
    return KubernetesLauncher(settings.cluster)


def run_training(
    dataset_path: str,
    schema: DatasetSchema,
    config: TrainConfig,
    store: TrackingStore,
    model_dir: Path,
    test_data_path: Path,
    checkpoint_dir: Path | None,
    launcher: Launcher | None = None,
) -> TrainingOutcome:
    """Train on ``dataset_path``; save the model to ``model_dir`` and the test split to ``test_data_path``.

    ``launcher`` runs the ranks (None: the local default for ``config.nproc``).
    """
    import mlflow

    from mlops.vocabulary import SPLIT_TAG
    from training.data_splits import split_rule
    from training.metrics_logger import MlflowLogger, ProgressLogger
    from training.trainer import train

    started = time.perf_counter()
    frame, digest = load_table(dataset_path)
    seconds = {"read": time.perf_counter() - started}
    rule = split_rule(schema, config).to_json()
    with store.task_run(TASK_NAME) as run:
        mlflow.set_tags({DATASET_DIGEST_TAG: digest, DATASET_URI_TAG: dataset_path, SPLIT_TAG: rule})
        # The logger carries the store (its settings, not a client): ranks and pods log through it.
        logger = ProgressLogger(MlflowLogger(run_id=run.info.run_id, store=store), config.epochs)
        result = train(
            frame, schema, config, model_dir, checkpoint_dir=checkpoint_dir, logger=logger, launcher=launcher
        )
        started = time.perf_counter()
        test_data_path.parent.mkdir(parents=True, exist_ok=True)
        result.test_frame.to_parquet(test_data_path, index=False)
        seconds = {**seconds, **result.seconds, "test_split": time.perf_counter() - started}
        mlflow.log_metrics({f"{SECONDS_PREFIX}{part}": value for part, value in seconds.items()})
        print(time_line(seconds), flush=True)
        mlflow.set_tags(
            {"mlops.best_epoch": str(result.best_epoch), "mlops.stopped_early": str(result.stopped_early)}
        )
        return TrainingOutcome(
            run_id=run.info.run_id,
            val_auc=result.best_val_auc,
            val_loss=result.best_val_loss,
            best_epoch=result.best_epoch,
            epochs_run=result.epochs_run,
            stopped_early=result.stopped_early,
            resumed_from_epoch=result.resumed_from_epoch,
            samples_per_second=result.samples_per_second,
            split_rule=rule,
        )
