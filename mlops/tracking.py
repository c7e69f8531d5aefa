"""One MLflow run per pipeline task, grouped by the pipeline run id.

Components receive the tracking settings as plain pipeline parameters and turn
them into a :class:`TrackingContext`; :func:`task_run` opens the run with the
tags that tie it to its pipeline run, so the MLflow UI can filter a whole
pipeline run with ``tags.mlops.pipeline_run_id = '…'``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from mlops.registry import PIPELINE_RUN_ID_TAG, TASK_TAG

if TYPE_CHECKING:
    import mlflow


@dataclass(frozen=True)
class TrackingContext:
    """Where a task logs, and which pipeline run it belongs to."""

    tracking_uri: str = ""
    """MLflow tracking URI; empty keeps MLflow's own default (``MLFLOW_TRACKING_URI`` on a cluster pod)."""
    experiment: str = "mlops"
    """MLflow experiment name shared by all tasks of a pipeline."""
    pipeline_run_id: str = ""
    """KFP run id (or any id) stored as a tag on every task's run."""
    artifact_root: str = ""
    """Artifact location for a newly created experiment; empty lets the tracking server choose."""

    def __post_init__(self) -> None:
        if not self.experiment.strip():
            raise ValueError("experiment name must not be empty; pass e.g. experiment='training'")

    def as_dict(self) -> dict[str, str]:
        """The one value a pipeline passes to every task (``tracking: dict``)."""
        return {
            "tracking_uri": self.tracking_uri,
            "experiment": self.experiment,
            "pipeline_run_id": self.pipeline_run_id,
            "artifact_root": self.artifact_root,
        }

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> TrackingContext:
        """Rebuild a context from :meth:`as_dict` output; unknown keys are an error, missing ones default."""
        unknown = sorted(set(values) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(
                f"tracking has unknown key(s) {unknown}; expected tracking_uri, experiment, "
                "pipeline_run_id, artifact_root"
            )
        return cls(**{key: str(value) for key, value in values.items()})

    def apply(self) -> None:
        """Point the MLflow client at this context's store and experiment."""
        import mlflow

        if self.tracking_uri:
            mlflow.set_tracking_uri(self.tracking_uri)
            mlflow.set_registry_uri(self.tracking_uri)
        client = mlflow.MlflowClient()
        if client.get_experiment_by_name(self.experiment) is None:
            location = f"{self.artifact_root.rstrip('/')}/{self.experiment}" if self.artifact_root else None
            try:
                client.create_experiment(self.experiment, artifact_location=location)
            except mlflow.exceptions.MlflowException:
                # Another task created it between our check and create: fine.
                if client.get_experiment_by_name(self.experiment) is None:
                    raise
        mlflow.set_experiment(self.experiment)


@contextmanager
def task_run(context: TrackingContext, task: str) -> Iterator[mlflow.ActiveRun]:
    """Open an MLflow run for one pipeline task; it ends FAILED if the body raises."""
    import mlflow

    context.apply()
    tags = {TASK_TAG: task}
    if context.pipeline_run_id:
        tags[PIPELINE_RUN_ID_TAG] = context.pipeline_run_id
    with mlflow.start_run(run_name=task, tags=tags) as run:
        yield run


class TrackingSettings(BaseModel):
    """Where every task of a pipeline logs: the pipeline parameters behind :class:`TrackingContext`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tracking_uri: str = Field(
        default="", description="MLflow tracking URI. Empty: the task environment's MLFLOW_TRACKING_URI."
    )
    experiment: str = Field(
        default="training", min_length=1, description="MLflow experiment for this pipeline's runs."
    )
    artifact_root: str = Field(
        default="",
        description="Artifact location for a newly created MLflow experiment. Empty: the tracking server's default.",
    )


@dataclass(frozen=True)
class ResolvedTracking:
    """The tracking configuration a command uses, resolved once (placeholder until the resolver lands)."""

    tracking_uri: str
    artifact_root: str


def resolve_tracking(workspace: Any, tracking_uri: str = "", artifact_root: str = "") -> ResolvedTracking:
    """Explicit value > ``MLFLOW_TRACKING_URI`` > the workspace's SQLite store."""
    import os

    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI", "") or workspace.tracking_uri
    root = artifact_root or (workspace.artifact_root if uri == workspace.tracking_uri else "")
    return ResolvedTracking(uri, root)
