"""The narrow interface through which training reports to an experiment tracker.

The training core calls a :class:`MetricsLogger` and never imports MLflow
itself, so it runs (and is tested) without a tracking store. Loggers are
handed to spawned DDP workers and, inside the staged job, to the pods of a
Kubernetes job (rank 0 logs live, epoch by epoch), so an implementation must
be picklable: :class:`MlflowLogger` carries the run id and the task's
:class:`~mlops.tracking.store.TrackingStore` — its settings, with explicit
URIs — and each process builds the store's client on first use. This is the
one way a pod learns where to log: no tracking variable is set on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mlops.tracking.store import TrackingStore


class MetricsLogger(Protocol):
    """Receives a run's params, per-epoch metrics and output files."""

    def log_params(self, params: Mapping[str, Any]) -> None: ...

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None: ...

    def log_artifacts(self, local_dir: Path, artifact_path: str) -> None: ...


class NullLogger:
    """Discards everything: for runs without a tracker (tests, benchmarks, notebooks)."""

    def log_params(self, params: Mapping[str, Any]) -> None:
        pass

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        pass

    def log_artifacts(self, local_dir: Path, artifact_path: str) -> None:
        pass


@dataclass(frozen=True)
class MlflowLogger:
    """Logs into an existing MLflow run, from whichever process holds this object."""

    run_id: str
    """The MLflow run to log into (opened and closed by the caller)."""
    store: TrackingStore
    """The store of that run; pickled with the logger (settings only), so a spawned rank or a pod logs
    to the same place without any process-wide MLflow state."""

    def log_params(self, params: Mapping[str, Any]) -> None:
        from mlflow.entities import Param

        self.store.log_batch(self.run_id, params=[Param(k, str(v)) for k, v in params.items()])

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        batch = [Metric(k, float(v), now, step) for k, v in metrics.items()]
        self.store.log_batch(self.run_id, metrics=batch)

    def log_artifacts(self, local_dir: Path, artifact_path: str) -> None:
        self.store.log_run_artifacts(self.run_id, local_dir, artifact_path)


@dataclass(frozen=True)
class ForwardingLogger:
    """Forwards everything to ``inner``; a subclass adds its own reaction to each epoch's metrics."""

    inner: MetricsLogger

    def log_params(self, params: Mapping[str, Any]) -> None:
        self.inner.log_params(params)

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        self.inner.log_metrics(metrics, step)

    def log_artifacts(self, local_dir: Path, artifact_path: str) -> None:
        self.inner.log_artifacts(local_dir, artifact_path)


@dataclass(frozen=True)
class ProgressLogger(ForwardingLogger):
    """Forwards to ``inner`` and prints each epoch as a :mod:`mlops.progress` event (a live bar in
    ``mlops run``). Picklable like the logger it wraps, so a spawned rank 0 reports too."""

    epochs: int
    """The most epochs the run may take (early stopping can end it sooner)."""

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        from mlops.progress import Progress, emit

        super().log_metrics(metrics, step)
        if "val_auc" in metrics:  # an epoch's entry (the run's closing summary has best_* figures only)
            emit(
                Progress(
                    unit="epoch", total=self.epochs, completed=step, text=f"val AUC {metrics['val_auc']:.4f}"
                )
            )
