"""The runs half of the MLflow seam: the experiment, MLflow's fluent state scoped to a store, task runs.

:class:`RunTracker` is what :class:`mlops.tracking.store.TrackingStore` delegates its run work to: the
experiment (created at ``<artifact_root>/<experiment>``, or refused when it already stores elsewhere),
:meth:`RunTracker.fluent` (the only place MLflow's process-wide URIs and experiment are set, and restored on
the way out even when the body raises), the task runs with their pipeline-run tags, the recording runs a
served store writes over REST, and the reads of runs. It reaches MLflow through the store's private client,
so a store has one client whichever half asks.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlops.tracking.store_connection import EXPERIMENT_ID_ENV, REGISTRY_URI_ENV, TRACKING_URI_ENV
from mlops.tracking.uris import TrackingError, normalise_location, redact_uri
from mlops.vocabulary import PIPELINE_RUN_ID_TAG, TASK_TAG

if TYPE_CHECKING:
    import pandas as pd
    from mlflow import ActiveRun
    from mlflow.entities import Experiment, Metric, Param, Run

    from mlops.governance.audit import AuditEvent
    from mlops.tracking.rest_client import MlflowRestClient
    from mlops.tracking.store_connection import StoreConnection

_FLUENT = threading.RLock()
"""MLflow's fluent state is one per process: two threads in two scopes would log into each other's store."""


class RunTracker:
    """The experiment and the runs of one :class:`~mlops.tracking.store.TrackingStore` (its settings, its client)."""

    def __init__(self, store: StoreConnection) -> None:
        self.store = store
        self._experiment: Experiment | None = None
        """The experiment once :meth:`ensure_experiment` found or created it (asked once per store)."""

    def ensure_experiment(self) -> Experiment:
        """The experiment, created at :attr:`experiment_location` when missing (once per store).

        An experiment's artifact location is fixed when it is created; an existing one that
        stores elsewhere than ``artifact_root`` asks is a :class:`TrackingError`, not a silent
        fallback (models would land somewhere nobody configured).
        """
        cached = self._experiment
        if cached is not None:
            return cached
        from mlflow.exceptions import MlflowException

        client = self.store._client
        existing = client.get_experiment_by_name(self.store.experiment)
        if existing is None:
            try:
                experiment_id = client.create_experiment(
                    self.store.experiment, artifact_location=self.store.experiment_location or None
                )
            except MlflowException:
                # Another task created it between our check and create: fine, if it stores where we want.
                existing = client.get_experiment_by_name(self.store.experiment)
                if existing is None:
                    raise
            else:
                existing = client.get_experiment(experiment_id)
        self.check_location(existing.artifact_location)
        self._experiment = existing
        return existing

    def check_location(self, actual: str) -> None:
        """Raise :class:`TrackingError` when an existing experiment stores artifacts elsewhere than asked."""
        wanted = self.store.experiment_location
        if wanted and normalise_location(actual) != normalise_location(wanted):
            raise TrackingError(
                f"MLflow experiment {self.store.experiment!r} already stores its artifacts at {actual}, "
                f"but artifact_root {self.store.artifact_root!r} asks for {wanted}; an experiment's location "
                f"is fixed when it is created. Use another experiment name (--set tracking.experiment=…) or "
                f"the matching tracking.artifact_root ({_root_of(actual, self.store.experiment)})"
            )

    def check_experiment(self) -> None:
        """Read-only check before anything runs: the store answers and an existing experiment stores where
        asked (creates nothing; :class:`TrackingError` naming the URI and the fix)."""
        from mlflow.exceptions import MlflowException

        try:
            existing = self.store._client.get_experiment_by_name(self.store.experiment)
        except MlflowException as exc:
            raise TrackingError(
                f"cannot read experiment {self.store.experiment!r} from {redact_uri(self.store.tracking_uri)}: {exc.message}"
            ) from exc
        if existing is not None:
            self.check_location(existing.artifact_location)

    # --- MLflow's process-wide state, scoped ------------------------------------------------------

    @contextmanager
    def fluent(self, *, experiment: bool = True) -> Iterator[None]:
        """Point MLflow's fluent API at this store (and its experiment) for the body; restore after.

        Saves the process-wide tracking URI, registry URI and active experiment (MLflow's module
        state and the ``MLFLOW_*`` variables it mirrors them into), sets this store's, and puts the
        saved values back on the way out even when the body raises. A run the body started and
        left open is ended first (FAILED when the body raised), so it cannot outlive its store.
        ``experiment=False`` leaves the active experiment alone (reads, e.g. :meth:`search_runs`).
        """
        import mlflow

        experiment_id = self.ensure_experiment().experiment_id if experiment else None
        with _FLUENT:
            saved = _FluentState.capture()
            open_before = _active_run_id()
            failed = False
            try:
                tracking_uri, registry_uri = self.store.mlflow_uris
                mlflow.set_tracking_uri(tracking_uri)
                mlflow.set_registry_uri(registry_uri)
                if experiment_id is not None:
                    mlflow.set_experiment(experiment_id=experiment_id)
                yield
            except BaseException:
                failed = True
                raise
            finally:
                try:
                    while (open_now := _active_run_id()) is not None and open_now != open_before:
                        mlflow.end_run("FAILED" if failed else "FINISHED")
                finally:
                    saved.restore()

    @contextmanager
    def task_run(
        self,
        task: str,
        *,
        run_name: str | None = None,
        parent_run_id: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> Iterator[ActiveRun]:
        """One MLflow run for a pipeline task (``mlops.task`` and ``mlops.pipeline_run_id`` tags), with the
        fluent API pointed at this store while it is open; it ends FAILED if the body raises.

        ``parent_run_id`` nests it (a tuning trial under the tuning run). Artifacts on S3 get the storage
        policy (region check, encryption) before anything is logged.
        """
        import mlflow

        from mlops.storage.governed_put import govern_mlflow_artifacts

        experiment = self.ensure_experiment()
        govern_mlflow_artifacts(experiment.artifact_location)
        run_tags = {TASK_TAG: task}
        if self.store.pipeline_run_id:
            run_tags[PIPELINE_RUN_ID_TAG] = self.store.pipeline_run_id
        run_tags.update(tags or {})
        with (
            self.fluent(),
            mlflow.start_run(
                run_name=run_name or task,
                experiment_id=experiment.experiment_id,
                parent_run_id=parent_run_id,
                tags=run_tags,
            ) as run,
        ):
            yield run

    @contextmanager
    def resume_run(self, run_id: str) -> Iterator[ActiveRun]:
        """Reopen an existing run of this store (the tuning fan-in logs onto the tuning run)."""
        import mlflow

        from mlops.storage.governed_put import govern_mlflow_artifacts

        govern_mlflow_artifacts(self.ensure_experiment().artifact_location)
        with self.fluent(), mlflow.start_run(run_id=run_id) as run:
            yield run

    @contextmanager
    def recording_run(self, task: str, *, run_name: str | None = None) -> Iterator[RecordingRun]:
        """A task run for a task that only records (a gate, the combined verdict, a promotion): the same run,
        tags and ending as :meth:`task_run`, through a :class:`RecordingRun` handle instead of MLflow's
        fluent API, so that on a served store (:attr:`rest`) the task never imports MLflow."""
        rest = self.store.rest
        if rest is None:
            with self.task_run(task, run_name=run_name) as active:
                yield _FluentRecordingRun(str(active.info.run_id), self.store)
            return
        experiment_id = self._served_experiment_id
        name = run_name or task
        tags = {**_run_context_tags(), TASK_TAG: task}
        if self.store.pipeline_run_id:
            tags[PIPELINE_RUN_ID_TAG] = self.store.pipeline_run_id
        created = rest.create_run(experiment_id, name, tags)
        try:
            yield _RestRecordingRun(created.run_id, self.store, rest, created.artifact_uri)
        except BaseException:
            with suppress(TrackingError):  # the body's error is the one to report, not a failed ending
                rest.end_run(created.run_id, "FAILED")
            raise
        rest.end_run(created.run_id, "FINISHED")

    @cached_property
    def _served_experiment_id(self) -> str:
        """:meth:`ensure_experiment` over REST (:attr:`rest`): the experiment's id, created at
        :attr:`experiment_location` when missing, refused when it stores elsewhere; asked once per store."""
        from mlops.tracking.rest_client import TrackingServerError

        rest = self.store.rest
        assert rest is not None, "only a served store records over REST"
        existing = rest.experiment_by_name(self.store.experiment)
        if existing is None:
            try:
                experiment_id = rest.create_experiment(self.store.experiment, self.store.experiment_location)
            except TrackingServerError:
                existing = rest.experiment_by_name(self.store.experiment)  # another task created it meanwhile
                if existing is None:
                    raise
            else:
                existing = rest.experiment(experiment_id)
        self.check_location(str(existing["artifact_location"]))
        return str(existing["experiment_id"])

    def search_runs(self, **query: Any) -> pd.DataFrame:
        """``mlflow.search_runs`` against this store (notebooks, summaries): reads only, creates nothing."""
        import mlflow

        with self.fluent(experiment=False):
            return mlflow.search_runs(**query)

    def experiment_by_name(self, name: str) -> Experiment | None:
        """The experiment called ``name`` in this store, or None; reads only (:meth:`ensure_experiment`
        creates its own)."""
        return self.store._client.get_experiment_by_name(name)

    def get_run(self, run_id: str) -> Run:
        """One run of this store (MLflow's error when there is none)."""
        return self.store._client.get_run(run_id)

    def find_runs(
        self,
        experiment_ids: Sequence[str],
        filter_string: str = "",
        *,
        max_results: int | None = None,
        order_by: Sequence[str] | None = None,
    ) -> list[Run]:
        """The runs of ``experiment_ids`` matching ``filter_string`` as run objects (one page; ``max_results``
        None: MLflow's default page); :meth:`search_runs` answers a data frame instead."""
        page: dict[str, Any] = {} if max_results is None else {"max_results": max_results}
        if order_by:
            page["order_by"] = list(order_by)
        return list(self.store._client.search_runs(list(experiment_ids), filter_string, **page))

    def metric_history(self, run_id: str, key: str) -> list[Metric]:
        """Every value logged for metric ``key`` in run ``run_id`` (a curve, step by step)."""
        return list(self.store._client.get_metric_history(run_id, key))

    def log_batch(self, run_id: str, *, metrics: Sequence[Metric] = (), params: Sequence[Param] = ()) -> None:
        """Log ``metrics`` (each with its own step and timestamp) and ``params`` into run ``run_id`` at once,
        from any process, without MLflow's process-wide active run."""
        self.store._client.log_batch(run_id, metrics=list(metrics), params=list(params))

    def log_run_artifacts(self, run_id: str, local_dir: str | Path, artifact_path: str | None = None) -> None:
        """Store every file under ``local_dir`` in run ``run_id`` at ``artifact_path``."""
        self.store._client.log_artifacts(run_id, str(local_dir), artifact_path)


class RecordingRun:
    """An open task run of :meth:`TrackingStore.recording_run`: what a recording task writes into it."""

    def __init__(self, run_id: str, store: StoreConnection) -> None:
        self.run_id = run_id
        self.store = store

    def set_tags(self, tags: Mapping[str, str]) -> None:
        raise NotImplementedError

    def log_artifact(self, local_path: Path, artifact_path: str = "") -> None:
        """Store ``local_path`` in the run at ``<artifact_path>/<file name>`` (as ``mlflow.log_artifact``)."""
        raise NotImplementedError

    def audit(
        self, action: str, subject: str, details: Mapping[str, Any] | None = None, **links: str
    ) -> AuditEvent:
        """An audit record linking this run and the store's pipeline run
        (:func:`mlops.governance.audit.record_in_run`), in the trail of the store's workspace."""
        from mlops.governance.audit import record_in_run

        return record_in_run(
            action,
            subject,
            details,
            pipeline_run_id=self.store.pipeline_run_id,
            run_id=self.run_id,
            tracking_uri=self.store.tracking_uri,
            **links,
        )


class _FluentRecordingRun(RecordingRun):
    """The store opened directly: MLflow's fluent API inside :meth:`TrackingStore.task_run`."""

    def set_tags(self, tags: Mapping[str, str]) -> None:
        import mlflow

        mlflow.set_tags(dict(tags))

    def log_artifact(self, local_path: Path, artifact_path: str = "") -> None:
        import mlflow

        mlflow.log_artifact(str(local_path), artifact_path=artifact_path or None)


class _RestRecordingRun(RecordingRun):
    """The store served: the same writes over MLflow's REST API (:mod:`mlops.tracking.rest_client`)."""

    def __init__(
        self, run_id: str, store: StoreConnection, rest: MlflowRestClient, artifact_uri: str
    ) -> None:
        super().__init__(run_id, store)
        self.rest = rest
        self.artifact_uri = artifact_uri

    def set_tags(self, tags: Mapping[str, str]) -> None:
        self.rest.set_run_tags(self.run_id, {key: str(value) for key, value in tags.items()})

    def log_artifact(self, local_path: Path, artifact_path: str = "") -> None:
        self.rest.log_artifact(self.artifact_uri, Path(local_path), artifact_path)


def _run_context_tags() -> dict[str, str]:
    """The tags ``mlflow.start_run`` adds from its default run context (user, source name and type), so a
    run created over REST carries what one created by the fluent API does."""
    import getpass
    import sys

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # MLflow's own fallback when the OS knows no name for the uid
        user = "unknown"
    return {
        "mlflow.user": os.environ.get("MLFLOW_TRACKING_USERNAME") or user,
        "mlflow.source.name": sys.argv[0] if sys.argv and sys.argv[0] else "<console>",
        "mlflow.source.type": "LOCAL",
    }


@dataclass(frozen=True)
class _FluentState:
    """MLflow's process-wide tracking state at one moment (module values and the variables mirroring them)."""

    tracking_uri: str | None
    registry_uri: str | None
    experiment_id: str | None
    environ: dict[str, str | None]

    @classmethod
    def capture(cls) -> _FluentState:
        from mlflow.tracking import fluent
        from mlflow.tracking._model_registry import utils as registry_utils
        from mlflow.tracking._tracking_service import utils as tracking_utils

        names = (TRACKING_URI_ENV, REGISTRY_URI_ENV, EXPERIMENT_ID_ENV)
        return cls(
            tracking_uri=tracking_utils._tracking_uri,
            registry_uri=registry_utils._registry_uri,
            experiment_id=fluent._active_experiment_id,
            environ={name: os.environ.get(name) for name in names},
        )

    def restore(self) -> None:
        # MLflow offers setters but no way back to "unset"; the module values are written directly.
        from mlflow.tracking import fluent
        from mlflow.tracking._model_registry import utils as registry_utils
        from mlflow.tracking._tracking_service import utils as tracking_utils

        if tracking_utils._tracking_uri != self.tracking_uri:
            tracking_utils.set_tracking_uri(self.tracking_uri)  # None unsets it
        registry_utils._registry_uri = self.registry_uri  # type: ignore[assignment]
        fluent._active_experiment_id = self.experiment_id  # type: ignore[assignment]
        for name, value in self.environ.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def fluent_state() -> dict[str, str | None]:
    """MLflow's process-wide tracking state now (read only): the URIs and experiment its fluent API would
    use, and the variables mirroring them. What a test suite compares to prove nothing leaked."""
    state = _FluentState.capture()
    return {
        "tracking_uri": state.tracking_uri,
        "registry_uri": state.registry_uri,
        "experiment_id": state.experiment_id,
        **state.environ,
    }


def _active_run_id() -> str | None:
    import mlflow

    run = mlflow.active_run()
    return None if run is None else str(run.info.run_id)


def _root_of(location: str, experiment: str) -> str:
    suffix = f"/{experiment}"
    trimmed = location.rstrip("/")
    return trimmed[: -len(suffix)] if trimmed.endswith(suffix) else trimmed
