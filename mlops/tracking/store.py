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

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Concatenate, Generic, ParamSpec, TypeVar, overload

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

_Half = TypeVar("_Half")
_P = ParamSpec("_P")
_R = TypeVar("_R")


class _Delegated(Generic[_Half, _P, _R]):
    """A store method that is one of its halves' methods: ``store.name(...)`` calls ``store.<half>.name(...)``.

    Written once here rather than as a forwarding method per name, so the store cannot drift from its halves
    (a signature, a default); the half's own method is what the class shows (its signature, its docstring)
    and what type checkers see, bound.
    """

    def __init__(self, half: str, method: Callable[Concatenate[_Half, _P], _R]) -> None:
        self.half = half
        self.method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, store: None, owner: type) -> Callable[Concatenate[_Half, _P], _R]: ...
    @overload
    def __get__(self, store: object, owner: type) -> Callable[_P, _R]: ...
    def __get__(self, store: object | None, owner: type) -> Callable[..., _R]:
        if store is None:
            return self.method
        return getattr(getattr(store, self.half), self.method.__name__)


def _of_runs(method: Callable[Concatenate[RunTracker, _P], _R]) -> _Delegated[RunTracker, _P, _R]:
    """A method of the runs half (:class:`~mlops.tracking.run_tracker.RunTracker`)."""
    return _Delegated("_runs", method)


def _of_registry(
    method: Callable[Concatenate[ModelRegistryStore, _P], _R],
) -> _Delegated[ModelRegistryStore, _P, _R]:
    """A method of the registry half (:class:`~mlops.tracking.model_registry_store.ModelRegistryStore`)."""
    return _Delegated("_registry", method)


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

    ensure_experiment = _of_runs(RunTracker.ensure_experiment)
    check_location = _of_runs(RunTracker.check_location)
    check_experiment = _of_runs(RunTracker.check_experiment)
    fluent = _of_runs(RunTracker.fluent)
    task_run = _of_runs(RunTracker.task_run)
    resume_run = _of_runs(RunTracker.resume_run)
    recording_run = _of_runs(RunTracker.recording_run)
    search_runs = _of_runs(RunTracker.search_runs)
    experiment_by_name = _of_runs(RunTracker.experiment_by_name)
    get_run = _of_runs(RunTracker.get_run)
    find_runs = _of_runs(RunTracker.find_runs)
    metric_history = _of_runs(RunTracker.metric_history)
    log_batch = _of_runs(RunTracker.log_batch)
    log_run_artifacts = _of_runs(RunTracker.log_run_artifacts)

    # --- versions, tags, aliases, downloads, profiles: ModelRegistryStore ------------------------------

    registered_model_names = _of_registry(ModelRegistryStore.registered_model_names)
    registered_model = _of_registry(ModelRegistryStore.registered_model)
    model_version = _of_registry(ModelRegistryStore.model_version)
    version_tags = _of_registry(ModelRegistryStore.version_tags)
    version_aliases_and_tags = _of_registry(ModelRegistryStore.version_aliases_and_tags)
    version_by_alias = _of_registry(ModelRegistryStore.version_by_alias)
    search_versions = _of_registry(ModelRegistryStore.search_versions)
    version_download_uri = _of_registry(ModelRegistryStore.version_download_uri)
    create_version = _of_registry(ModelRegistryStore.create_version)
    create_signed_version = _of_registry(ModelRegistryStore.create_signed_version)
    delete_version = _of_registry(ModelRegistryStore.delete_version)
    tag_version = _of_registry(ModelRegistryStore.tag_version)
    tag_model = _of_registry(ModelRegistryStore.tag_model)
    record_gate = _of_registry(ModelRegistryStore.record_gate)
    alias_version = _of_registry(ModelRegistryStore.alias_version)
    point_alias = _of_registry(ModelRegistryStore.point_alias)
    delete_alias = _of_registry(ModelRegistryStore.delete_alias)
    move_alias = _of_registry(ModelRegistryStore.move_alias)
    download = _of_registry(ModelRegistryStore.download)
    download_version = _of_registry(ModelRegistryStore.download_version)
    sign_version = _of_registry(ModelRegistryStore.sign_version)
    sign_files = _of_registry(ModelRegistryStore.sign_files)
    verify_version = _of_registry(ModelRegistryStore.verify_version)
    log_reference_profile = _of_registry(ModelRegistryStore.log_reference_profile)
    write_reference_profile = _of_registry(ModelRegistryStore.write_reference_profile)
    reference_profile = _of_registry(ModelRegistryStore.reference_profile)
