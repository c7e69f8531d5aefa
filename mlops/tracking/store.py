"""The one MLflow seam: every read and write of runs, tags, aliases and profiles goes through a store.

A :class:`TrackingStore` is built once from the tracking settings, with explicit URIs:
:meth:`TrackingStore.for_task` in a pipeline task (the ``tracking`` section plus the KFP
run id), :meth:`TrackingStore.from_uri` in the command line, the server and the delivery
control plane. It owns the one :class:`mlflow.MlflowClient` (private, built on first use, with
the tracking and the registry URI named, never MLflow's process-wide defaults) and, on a store the
local run serves, the REST client its light writes go through (both in
:class:`~mlops.tracking.store_connection.StoreConnection`, with the settings). Its work is done by
two halves it composes, so that neither grows into everything: :class:`~mlops.tracking.run_tracker.RunTracker`
(the experiment, created at ``<artifact_root>/<experiment>`` or refused when it already stores
elsewhere; MLflow's fluent state scoped; the task runs and their pipeline-run tags) and
:class:`~mlops.tracking.model_registry_store.ModelRegistryStore` (versions, version and gate tags,
alias moves with their audit record, artifact downloads, signatures and the reference profile a
version is registered with). Callers keep calling the store; the halves are the package's own.

MLflow's fluent API (``mlflow.start_run``, ``mlflow.log_*``, ``mlflow.onnx.log_model``)
only works on process-wide state: the tracking URI, the registry URI and the active
experiment. Only :meth:`TrackingStore.fluent` sets them, and it restores what was there
before on the way out, even when the body raises, so nothing leaks from one task, call or
test into the next. This package is the only place that constructs a client or sets a
URI (``git grep -nE "set_tracking_uri|set_registry_uri|MlflowClient\\("`` finds them here).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlops.tracking.model_registry_store import ModelRegistryStore, RegistrationProgress
from mlops.tracking.run_tracker import RecordingRun, RunTracker, fluent_state
from mlops.tracking.store_connection import (
    DEFAULT_EXPERIMENT,
    EXPERIMENT_ID_ENV,
    REGISTRY_URI_ENV,
    SECTION_KEYS,
    TRACKING_URI_ENV,
    StoreConnection,
    TrackingSettings,
)
from mlops.tracking.uris import TrackingError, normalise_location, redact_uri

__all__ = [
    "DEFAULT_EXPERIMENT",
    "EXPERIMENT_ID_ENV",
    "REGISTRY_URI_ENV",
    "SECTION_KEYS",
    "TRACKING_URI_ENV",
    "RecordingRun",
    "RegistrationProgress",
    "TrackingError",
    "TrackingSettings",
    "TrackingStore",
    "fluent_state",
    "normalise_location",
    "redact_uri",
]

if TYPE_CHECKING:
    import pandas as pd
    from mlflow import ActiveRun
    from mlflow.entities import Experiment, Metric, Param, Run
    from mlflow.entities.model_registry import ModelVersion, RegisteredModel
    from mlflow.models.model import ModelInfo

    from mlops.governance.signing import Signed
    from mlops.model.reference_profile import ReferenceProfile


@dataclass(frozen=True)
class TrackingStore(StoreConnection):
    """Where a task (or a command) logs and registers, and which pipeline run it belongs to: the settings and
    clients of :class:`~mlops.tracking.store_connection.StoreConnection`, and every read and write, done by its
    two halves (built on first use, one each per store; a pickled copy carries the settings only).
    """

    @cached_property
    def _runs(self) -> RunTracker:
        """The runs half (one per store, so the experiment is asked for once); a copy builds its own."""
        return RunTracker(self)

    @cached_property
    def _registry(self) -> ModelRegistryStore:
        """The registry half (one per store); a copy builds its own."""
        return ModelRegistryStore(self)

    # --- the experiment and the runs: RunTracker ---------------------------------------------------

    def ensure_experiment(self) -> Experiment:
        """:meth:`RunTracker.ensure_experiment`."""
        return self._runs.ensure_experiment()

    def check_location(self, actual: str) -> None:
        """:meth:`RunTracker.check_location`."""
        self._runs.check_location(actual)

    def check_experiment(self) -> None:
        """:meth:`RunTracker.check_experiment`."""
        self._runs.check_experiment()

    def fluent(self, *, experiment: bool = True) -> AbstractContextManager[None]:
        """:meth:`RunTracker.fluent`."""
        return self._runs.fluent(experiment=experiment)

    def task_run(
        self,
        task: str,
        *,
        run_name: str | None = None,
        parent_run_id: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> AbstractContextManager[ActiveRun]:
        """:meth:`RunTracker.task_run`."""
        return self._runs.task_run(task, run_name=run_name, parent_run_id=parent_run_id, tags=tags)

    def resume_run(self, run_id: str) -> AbstractContextManager[ActiveRun]:
        """:meth:`RunTracker.resume_run`."""
        return self._runs.resume_run(run_id)

    def recording_run(
        self, task: str, *, run_name: str | None = None
    ) -> AbstractContextManager[RecordingRun]:
        """:meth:`RunTracker.recording_run`."""
        return self._runs.recording_run(task, run_name=run_name)

    def search_runs(self, **query: Any) -> pd.DataFrame:
        """:meth:`RunTracker.search_runs`."""
        return self._runs.search_runs(**query)

    def experiment_by_name(self, name: str) -> Experiment | None:
        """:meth:`RunTracker.experiment_by_name`."""
        return self._runs.experiment_by_name(name)

    def get_run(self, run_id: str) -> Run:
        """:meth:`RunTracker.get_run`."""
        return self._runs.get_run(run_id)

    def find_runs(
        self,
        experiment_ids: Sequence[str],
        filter_string: str = "",
        *,
        max_results: int | None = None,
        order_by: Sequence[str] | None = None,
    ) -> list[Run]:
        """:meth:`RunTracker.find_runs`."""
        return self._runs.find_runs(experiment_ids, filter_string, max_results=max_results, order_by=order_by)

    def metric_history(self, run_id: str, key: str) -> list[Metric]:
        """:meth:`RunTracker.metric_history`."""
        return self._runs.metric_history(run_id, key)

    def log_batch(self, run_id: str, *, metrics: Sequence[Metric] = (), params: Sequence[Param] = ()) -> None:
        """:meth:`RunTracker.log_batch`."""
        self._runs.log_batch(run_id, metrics=metrics, params=params)

    def log_run_artifacts(self, run_id: str, local_dir: str | Path, artifact_path: str | None = None) -> None:
        """:meth:`RunTracker.log_run_artifacts`."""
        self._runs.log_run_artifacts(run_id, local_dir, artifact_path)

    # --- versions, tags, aliases, downloads, profiles: ModelRegistryStore ------------------------------

    def registered_model_names(self) -> list[str]:
        """:meth:`ModelRegistryStore.registered_model_names`."""
        return self._registry.registered_model_names()

    def registered_model(self, model_name: str) -> RegisteredModel:
        """:meth:`ModelRegistryStore.registered_model`."""
        return self._registry.registered_model(model_name)

    def model_version(self, model_name: str, version: str) -> ModelVersion:
        """:meth:`ModelRegistryStore.model_version`."""
        return self._registry.model_version(model_name, version)

    def version_tags(self, model_name: str, version: str) -> dict[str, str]:
        """:meth:`ModelRegistryStore.version_tags`."""
        return self._registry.version_tags(model_name, version)

    def version_by_alias(self, model_name: str, alias: str) -> ModelVersion:
        """:meth:`ModelRegistryStore.version_by_alias`."""
        return self._registry.version_by_alias(model_name, alias)

    def search_versions(self, filter_string: str) -> list[ModelVersion]:
        """:meth:`ModelRegistryStore.search_versions`."""
        return self._registry.search_versions(filter_string)

    def version_download_uri(self, model_name: str, version: str) -> str:
        """:meth:`ModelRegistryStore.version_download_uri`."""
        return self._registry.version_download_uri(model_name, version)

    def create_version(
        self,
        model_name: str,
        source: str,
        run_id: str | None,
        tags: Mapping[str, str],
        *,
        model_id: str | None = None,
    ) -> str:
        """:meth:`ModelRegistryStore.create_version`."""
        return self._registry.create_version(model_name, source, run_id, tags, model_id=model_id)

    def create_signed_version(
        self,
        model_name: str,
        logged: ModelInfo,
        run_id: str,
        tags: Mapping[str, str],
        progress: RegistrationProgress,
        record: Callable[[str, str], None] = lambda number, digest: None,
    ) -> tuple[str, str]:
        """:meth:`ModelRegistryStore.create_signed_version`."""
        return self._registry.create_signed_version(model_name, logged, run_id, tags, progress, record)

    def delete_version(self, model_name: str, version: str) -> None:
        """:meth:`ModelRegistryStore.delete_version`."""
        self._registry.delete_version(model_name, version)

    def tag_version(self, model_name: str, version: str, tags: Mapping[str, str]) -> None:
        """:meth:`ModelRegistryStore.tag_version`."""
        self._registry.tag_version(model_name, version, tags)

    def tag_model(self, model_name: str, tags: Mapping[str, str]) -> None:
        """:meth:`ModelRegistryStore.tag_model`."""
        self._registry.tag_model(model_name, tags)

    def record_gate(self, model_name: str, version: str, gate: str, decision: str, reason: str) -> None:
        """:meth:`ModelRegistryStore.record_gate`."""
        self._registry.record_gate(model_name, version, gate, decision, reason)

    def alias_version(self, model_name: str, alias: str) -> str | None:
        """:meth:`ModelRegistryStore.alias_version`."""
        return self._registry.alias_version(model_name, alias)

    def point_alias(self, model_name: str, alias: str, version: str) -> str | None:
        """:meth:`ModelRegistryStore.point_alias`."""
        return self._registry.point_alias(model_name, alias, version)

    def delete_alias(self, model_name: str, alias: str) -> None:
        """:meth:`ModelRegistryStore.delete_alias`."""
        self._registry.delete_alias(model_name, alias)

    def move_alias(
        self,
        model_name: str,
        alias: str,
        version: str,
        previous: str | None,
        *,
        reason: str = "",
        links: Mapping[str, str] | None = None,
    ) -> None:
        """:meth:`ModelRegistryStore.move_alias`."""
        self._registry.move_alias(model_name, alias, version, previous, reason=reason, links=links)

    def download(self, artifact_uri: str, dst_path: str | Path | None = None) -> Path:
        """:meth:`ModelRegistryStore.download`."""
        return self._registry.download(artifact_uri, dst_path)

    def download_version(self, model_name: str, version: str, dst_path: str | Path | None = None) -> Path:
        """:meth:`ModelRegistryStore.download_version`."""
        return self._registry.download_version(model_name, version, dst_path)

    def sign_version(self, model_name: str, version: str, local_dir: Path) -> Signed:
        """:meth:`ModelRegistryStore.sign_version`."""
        return self._registry.sign_version(model_name, version, local_dir)

    def sign_files(self, local_dir: Path) -> Signed:
        """:meth:`ModelRegistryStore.sign_files`."""
        return self._registry.sign_files(local_dir)

    def verify_version(self, model_name: str, version: str, local_dir: Path) -> None:
        """:meth:`ModelRegistryStore.verify_version`."""
        self._registry.verify_version(model_name, version, local_dir)

    def log_reference_profile(self, run_id: str, profile: ReferenceProfile) -> str:
        """:meth:`ModelRegistryStore.log_reference_profile`."""
        return self._registry.log_reference_profile(run_id, profile)

    def write_reference_profile(
        self, run_id: str, model_name: str, version: str, profile: ReferenceProfile
    ) -> str:
        """:meth:`ModelRegistryStore.write_reference_profile`."""
        return self._registry.write_reference_profile(run_id, model_name, version, profile)

    def reference_profile(self, model_name: str, version: str) -> ReferenceProfile:
        """:meth:`ModelRegistryStore.reference_profile`."""
        return self._registry.reference_profile(model_name, version)
