"""The one MLflow seam: every read and write of runs, tags, aliases and profiles goes through a store.

A :class:`TrackingStore` is built once from the tracking settings, with explicit URIs:
:meth:`TrackingStore.for_task` in a pipeline task (the ``tracking`` section plus the KFP
run id), :meth:`TrackingStore.from_uri` in the command line, the server and the delivery
control plane. It owns the one :class:`mlflow.MlflowClient` (built on first use, with the
tracking and the registry URI named, never MLflow's process-wide defaults), the
experiment (created at ``<artifact_root>/<experiment>``, or refused when it already
stores elsewhere), the task runs and their pipeline-run tags, version tags and gate
tags, alias moves with their audit record, artifact downloads and the reference
profile a version is registered with.

MLflow's fluent API (``mlflow.start_run``, ``mlflow.log_*``, ``mlflow.onnx.log_model``)
only works on process-wide state: the tracking URI, the registry URI and the active
experiment. Only :meth:`TrackingStore.fluent` sets them, and it restores what was there
before on the way out, even when the body raises, so nothing leaks from one task, call or
test into the next. This module is the only place that constructs a client or sets a
URI (``git grep -nE "set_tracking_uri|set_registry_uri|MlflowClient\\("`` finds them here).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field

from mlops.settings import SETTINGS_CONFIG
from mlops.tracking.uris import TrackingError, normalise_location, redact_uri
from mlops.vocabulary import (
    PIPELINE_RUN_ID_TAG,
    PROFILE_TAG,
    PROMOTED_AT_TAG,
    REPLACED_BY_TAG,
    TASK_TAG,
    clip,
    gate_tag,
)

__all__ = ["TrackingError", "TrackingSettings", "TrackingStore", "normalise_location", "redact_uri"]

if TYPE_CHECKING:
    import pandas as pd
    from mlflow import ActiveRun, MlflowClient
    from mlflow.entities import Experiment, Metric, Param, Run
    from mlflow.entities.model_registry import ModelVersion, RegisteredModel
    from mlflow.models.model import ModelInfo

    from mlops.governance.audit import AuditEvent
    from mlops.governance.signing import Signed
    from mlops.model.reference_profile import ReferenceProfile
    from mlops.tracking.rest_client import MlflowRestClient

TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
"""MLflow's own variable: the tracking server a task's environment names when the settings leave it empty."""
REGISTRY_URI_ENV = "MLFLOW_REGISTRY_URI"
"""MLflow's variable for the registry; the seam saves and restores it with the process-wide URI."""
EXPERIMENT_ID_ENV = "MLFLOW_EXPERIMENT_ID"
"""MLflow's variable for the active experiment; saved and restored like the URIs."""


class TrackingSettings(BaseModel):
    """Where every task of a pipeline logs: the settings a task builds its :class:`TrackingStore` from."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "tracking"

    tracking_uri: str = Field(default="")
    """MLflow tracking URI. Empty: the task environment's MLFLOW_TRACKING_URI."""
    experiment: str = Field(default="training", min_length=1)
    """MLflow experiment for this pipeline's runs."""
    artifact_root: str = Field(default="")
    """Artifact location for a newly created MLflow experiment. Empty: the tracking server's default."""


DEFAULT_EXPERIMENT: str = TrackingSettings.model_fields["experiment"].default
"""The experiment when the settings name none (the tracking section's own default)."""
SECTION_KEYS = tuple(TrackingSettings.model_fields)
"""The keys of the ``tracking`` settings section a task receives (the pipeline run id travels beside it)."""

_FLUENT = threading.RLock()
"""MLflow's fluent state is one per process: two threads in two scopes would log into each other's store."""


@dataclass
class RegistrationProgress:
    """How far a registration got: the version it created, and whether that version is recorded (what
    :mod:`mlops.tracking.registration_faults` reads to say what is left)."""

    model_name: str
    created: str = ""
    recorded: bool = False


@dataclass(frozen=True)
class TrackingStore:
    """Where a task (or a command) logs and registers, and which pipeline run it belongs to.

    Picklable: a copy carries the settings, never the client, and builds its own client on
    first use (the training pods receive the store this way, inside the staged job).
    """

    tracking_uri: str
    """MLflow tracking URI, explicit (``sqlite:///…``, ``http://mlflow:5000``, ``postgresql://…``)."""
    experiment: str = DEFAULT_EXPERIMENT
    """MLflow experiment the task runs go to."""
    pipeline_run_id: str = ""
    """KFP run id (or any id) stored as a tag on every task run, and linked from every audit record."""
    artifact_root: str = ""
    """Artifact location for a newly created experiment (``<root>/<experiment>``); empty: the server's default."""
    registry_uri: str = ""
    """Model registry URI; empty: the tracking store's own registry (the platform keeps them together)."""
    served_url: str = ""
    """Address of an ``mlflow server`` the local run started on this very store (:mod:`mlops.tracking.served`);
    set, the light writes of a task (:meth:`recording_run`, version tags, aliases) go there over REST
    without importing MLflow, and MLflow itself is pointed there too (:attr:`mlflow_uris`), so no task
    opens the SQLite file. Never part of :meth:`settings`: a task's arguments do not change with it.
    The run that serves a store also names its audit trail and signing keys in the environment
    (:func:`mlops.governance.signing.workspace_defaults`): MLflow's URI then names the server, from
    which no workspace can be read (without them the audit write fails loudly, never elsewhere)."""
    served_log: str = ""
    """That server's log file, named in its errors."""

    def __post_init__(self) -> None:
        uri = str(self.tracking_uri).strip()
        if not uri:
            raise TrackingError(
                "the tracking URI is empty; pass one (e.g. sqlite:////abs/path/mlflow.db or "
                f"http://mlflow:5000), or set {TRACKING_URI_ENV} in the task's environment"
            )
        if not str(self.experiment).strip():
            raise TrackingError("the experiment name is empty; pass e.g. experiment='training'")
        object.__setattr__(self, "tracking_uri", uri)
        object.__setattr__(self, "registry_uri", str(self.registry_uri).strip() or uri)

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def for_task(
        cls, tracking: Mapping[str, Any], pipeline_run_id: str, environ: Mapping[str, str] = os.environ
    ) -> TrackingStore:
        """The store of one pipeline task: the ``tracking`` section as the task receives it, and the run id.

        An empty ``tracking_uri`` means the task environment's ``MLFLOW_TRACKING_URI`` (read once,
        here); an unknown key is an error naming it, missing keys take their defaults.
        """
        unknown = sorted(set(tracking) - set(SECTION_KEYS))
        if unknown:
            raise TrackingError(
                f"tracking has unknown key(s) {unknown}; the tracking section holds {list(SECTION_KEYS)} "
                "(the pipeline run id is a task argument of its own)"
            )
        values = {key: str(value).strip() for key, value in tracking.items()}
        uri = values.get("tracking_uri", "") or environ.get(TRACKING_URI_ENV, "").strip()
        from mlops.tracking.served import served_at

        served = served_at(uri, environ) if uri else None
        return cls(
            tracking_uri=uri,
            experiment=values.get("experiment") or DEFAULT_EXPERIMENT,
            pipeline_run_id=str(pipeline_run_id or ""),
            artifact_root=values.get("artifact_root", ""),
            served_url=served.url if served else "",
            served_log=served.log if served else "",
        )

    @classmethod
    def from_uri(cls, tracking_uri: str, **settings: str) -> TrackingStore:
        """A store from a URI the command line, the server or a deployment target already resolved
        (:func:`mlops.tracking.context.resolve_tracking`); ``settings`` are the other fields, by name."""
        return cls(tracking_uri=tracking_uri, **settings)

    def settings(self) -> dict[str, str]:
        """The ``tracking`` section a pipeline hands each task (``for_task(store.settings(), run_id)``
        rebuilds this store)."""
        return {
            "tracking_uri": self.tracking_uri,
            "experiment": self.experiment,
            "artifact_root": self.artifact_root,
        }

    def __getstate__(self) -> dict[str, Any]:
        # The settings only: a client holds connections and a copy builds its own on first use.
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @cached_property
    def _client(self) -> MlflowClient:
        """The one MLflow client of this store, built on first use (opening a SQLite store runs MLflow's
        schema check, ~1 s) with both URIs named: it never reads MLflow's process-wide defaults. A store the
        local run serves is waited for first (:func:`mlops.tracking.served.wait_until_answering`), not met
        with MLflow's retry back-off while its server starts.

        Private to :mod:`mlops.tracking`: everything outside reads and writes through the store's methods,
        so a served store can send the writes over REST (:attr:`rest`) and no caller bypasses them."""
        from mlflow import MlflowClient

        if self.served_url:
            from mlops.tracking.served import wait_until_answering

            wait_until_answering(self.served_url, self.served_log)
        tracking_uri, registry_uri = self.mlflow_uris
        return MlflowClient(tracking_uri=tracking_uri, registry_uri=registry_uri)

    @property
    def mlflow_uris(self) -> tuple[str, str]:
        """The tracking and registry URIs MLflow is given: the server this very store is served by when a
        local run serves it (:attr:`served_url`; the server pays SQLAlchemy's and alembic's set-up once,
        not every task), else the store's own. Artifacts are unaffected: the served store keeps them where
        its experiments say (``--no-serve-artifacts``), which the task still writes directly."""
        if not self.served_url:
            return self.tracking_uri, self.registry_uri
        registry = self.served_url if self.registry_uri == self.tracking_uri else self.registry_uri
        return self.served_url, registry

    @cached_property
    def rest(self) -> MlflowRestClient | None:
        """The light REST client of the server this store is served by (:attr:`served_url`); None when it
        is not served, and every write goes through :attr:`_client`."""
        if not self.served_url:
            return None
        from mlops.tracking.rest_client import MlflowRestClient
        from mlops.tracking.served import START_WAIT_S

        return MlflowRestClient(self.served_url, wait_s=START_WAIT_S, log_hint=self.served_log)

    # --- the experiment -----------------------------------------------------------------------

    @property
    def experiment_location(self) -> str:
        """Artifact location a new experiment gets: ``<artifact_root>/<experiment>``; empty = server default."""
        return f"{self.artifact_root.rstrip('/')}/{self.experiment}" if self.artifact_root else ""

    def ensure_experiment(self) -> Experiment:
        """The experiment, created at :attr:`experiment_location` when missing (once per store).

        An experiment's artifact location is fixed when it is created; an existing one that
        stores elsewhere than ``artifact_root`` asks is a :class:`TrackingError`, not a silent
        fallback (models would land somewhere nobody configured).
        """
        cached = self.__dict__.get("_experiment")
        if cached is not None:
            return cached
        from mlflow.exceptions import MlflowException

        client = self._client
        existing = client.get_experiment_by_name(self.experiment)
        if existing is None:
            try:
                experiment_id = client.create_experiment(
                    self.experiment, artifact_location=self.experiment_location or None
                )
            except MlflowException:
                # Another task created it between our check and create: fine, if it stores where we want.
                existing = client.get_experiment_by_name(self.experiment)
                if existing is None:
                    raise
            else:
                existing = client.get_experiment(experiment_id)
        self.check_location(existing.artifact_location)
        self.__dict__["_experiment"] = existing
        return existing

    def check_location(self, actual: str) -> None:
        """Raise :class:`TrackingError` when an existing experiment stores artifacts elsewhere than asked."""
        wanted = self.experiment_location
        if wanted and normalise_location(actual) != normalise_location(wanted):
            raise TrackingError(
                f"MLflow experiment {self.experiment!r} already stores its artifacts at {actual}, "
                f"but artifact_root {self.artifact_root!r} asks for {wanted}; an experiment's location "
                f"is fixed when it is created. Use another experiment name (--set tracking.experiment=…) or "
                f"the matching tracking.artifact_root ({_root_of(actual, self.experiment)})"
            )

    def check_experiment(self) -> None:
        """Read-only check before anything runs: the store answers and an existing experiment stores where
        asked (creates nothing; :class:`TrackingError` naming the URI and the fix)."""
        from mlflow.exceptions import MlflowException

        try:
            existing = self._client.get_experiment_by_name(self.experiment)
        except MlflowException as exc:
            raise TrackingError(
                f"cannot read experiment {self.experiment!r} from {redact_uri(self.tracking_uri)}: {exc.message}"
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
                tracking_uri, registry_uri = self.mlflow_uris
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

        from mlops.storage import govern_mlflow_artifacts

        experiment = self.ensure_experiment()
        govern_mlflow_artifacts(experiment.artifact_location)
        run_tags = {TASK_TAG: task}
        if self.pipeline_run_id:
            run_tags[PIPELINE_RUN_ID_TAG] = self.pipeline_run_id
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

        from mlops.storage import govern_mlflow_artifacts

        govern_mlflow_artifacts(self.ensure_experiment().artifact_location)
        with self.fluent(), mlflow.start_run(run_id=run_id) as run:
            yield run

    @contextmanager
    def recording_run(self, task: str, *, run_name: str | None = None) -> Iterator[RecordingRun]:
        """A task run for a task that only records (a gate, the combined verdict, a promotion): the same run,
        tags and ending as :meth:`task_run`, through a :class:`RecordingRun` handle instead of MLflow's
        fluent API, so that on a served store (:attr:`rest`) the task never imports MLflow."""
        rest = self.rest
        if rest is None:
            with self.task_run(task, run_name=run_name) as active:
                yield _FluentRecordingRun(str(active.info.run_id), self)
            return
        experiment_id = self._served_experiment_id
        name = run_name or task
        tags = {**_run_context_tags(), TASK_TAG: task}
        if self.pipeline_run_id:
            tags[PIPELINE_RUN_ID_TAG] = self.pipeline_run_id
        created = rest.create_run(experiment_id, name, tags)
        try:
            yield _RestRecordingRun(created.run_id, self, rest, created.artifact_uri)
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

        rest = self.rest
        assert rest is not None, "only a served store records over REST"
        existing = rest.experiment_by_name(self.experiment)
        if existing is None:
            try:
                experiment_id = rest.create_experiment(self.experiment, self.experiment_location)
            except TrackingServerError:
                existing = rest.experiment_by_name(self.experiment)  # another task created it meanwhile
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

    def registered_model_names(self) -> list[str]:
        """Every registered model's name in this store's registry, sorted (one per dataset in a workspace)."""
        from mlflow.store.model_registry import SEARCH_REGISTERED_MODEL_MAX_RESULTS_DEFAULT

        names: list[str] = []
        token = None
        while True:
            page = self._client.search_registered_models(
                max_results=SEARCH_REGISTERED_MODEL_MAX_RESULTS_DEFAULT, page_token=token
            )
            names += [model.name for model in page]
            token = page.token
            if not token:
                return sorted(names)

    def experiment_by_name(self, name: str) -> Experiment | None:
        """The experiment called ``name`` in this store, or None; reads only (:meth:`ensure_experiment`
        creates its own)."""
        return self._client.get_experiment_by_name(name)

    def get_run(self, run_id: str) -> Run:
        """One run of this store (MLflow's error when there is none)."""
        return self._client.get_run(run_id)

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
        return list(self._client.search_runs(list(experiment_ids), filter_string, **page))

    def metric_history(self, run_id: str, key: str) -> list[Metric]:
        """Every value logged for metric ``key`` in run ``run_id`` (a curve, step by step)."""
        return list(self._client.get_metric_history(run_id, key))

    def log_batch(self, run_id: str, *, metrics: Sequence[Metric] = (), params: Sequence[Param] = ()) -> None:
        """Log ``metrics`` (each with its own step and timestamp) and ``params`` into run ``run_id`` at once,
        from any process, without MLflow's process-wide active run."""
        self._client.log_batch(run_id, metrics=list(metrics), params=list(params))

    def log_run_artifacts(self, run_id: str, local_dir: str | Path, artifact_path: str | None = None) -> None:
        """Store every file under ``local_dir`` in run ``run_id`` at ``artifact_path``."""
        self._client.log_artifacts(run_id, str(local_dir), artifact_path)

    # --- registered models and versions (reads) ------------------------------------------------

    def registered_model(self, model_name: str) -> RegisteredModel:
        """The registered model (its aliases and model tags); MLflow's error when there is none."""
        return self._client.get_registered_model(model_name)

    def model_version(self, model_name: str, version: str) -> ModelVersion:
        """One registered version; MLflow's error (naming it) when there is none."""
        return self._client.get_model_version(model_name, version)

    def version_tags(self, model_name: str, version: str) -> dict[str, str]:
        """The tags of one registered version (over REST on a served store); an error when there is none."""
        if self.rest is not None:
            return self.rest.model_version_tags(model_name, version)
        return dict(self.model_version(model_name, version).tags)

    def version_by_alias(self, model_name: str, alias: str) -> ModelVersion:
        """The version ``alias`` points at, whole; MLflow's error when the model or the alias does not exist
        (:meth:`alias_version` answers None instead)."""
        return self._client.get_model_version_by_alias(model_name, alias)

    def search_versions(self, filter_string: str) -> list[ModelVersion]:
        """The registered versions matching ``filter_string`` (e.g. ``name = 'credit-default'``)."""
        return list(self._client.search_model_versions(filter_string))

    def version_download_uri(self, model_name: str, version: str) -> str:
        """Where a version's files are stored, resolved in this store's registry (never the process-wide
        one, which MLflow's ``models:/`` download would ask)."""
        return str(self._client.get_model_version_download_uri(model_name, version))

    # --- tags, gates, aliases -----------------------------------------------------------------

    def create_version(
        self,
        model_name: str,
        source: str,
        run_id: str,
        tags: Mapping[str, str],
        *,
        model_id: str | None = None,
    ) -> str:
        """Create a version of ``model_name`` (the registered model too, on first use) with every tag in the
        one request that creates it; return its number. The version never exists without its tags."""
        from mlflow.exceptions import MlflowException
        from mlflow.protos.databricks_pb2 import RESOURCE_ALREADY_EXISTS, ErrorCode

        client = self._client
        try:
            client.create_registered_model(model_name)
        except MlflowException as exc:
            if exc.error_code != ErrorCode.Name(RESOURCE_ALREADY_EXISTS):
                raise
        created = client.create_model_version(
            model_name, source, run_id=run_id, tags=dict(tags), model_id=model_id
        )
        return str(created.version)

    def create_signed_version(
        self,
        model_name: str,
        logged: ModelInfo,
        run_id: str,
        tags: Mapping[str, str],
        progress: RegistrationProgress,
        record: Callable[[str, str], None] = lambda number, digest: None,
    ) -> tuple[str, str]:
        """Register a model logged in the open run ``run_id`` as a whole version; return its number and digest.

        The stored files are read back (the digest covers what the server will load) and signed; one request
        creates the version with ``tags``, the digest and the signature; then ``record(number, digest)`` and
        ``model.signed`` go to the audit trail. ``progress`` says how far it got, for
        :func:`mlops.tracking.registration_faults.registration_failure`.
        """
        from mlops.governance.signing import record_signed
        from mlops.vocabulary import DIGEST_TAG, ONNX_FILE, file_sha256

        with tempfile.TemporaryDirectory(prefix="mlops-register-") as tmp:
            stored = self.download(logged.model_uri, tmp)  # what the artifact store holds, not our copy
            digest = file_sha256(stored / ONNX_FILE)
            signed = self.sign_files(stored)
        number = self.create_version(
            model_name,
            logged.model_uri,
            run_id,
            {**tags, DIGEST_TAG: digest, **signed.version_tags()},
            model_id=logged.model_id,
        )
        progress.created = number
        record(number, digest)
        record_signed(model_name, number, signed, self.pipeline_run_id)
        progress.recorded = True  # whatever fails from here on leaves a whole version behind
        return number, digest

    def delete_version(self, model_name: str, version: str) -> None:
        """Delete one version (a registration that could not be completed takes its version back)."""
        self._client.delete_model_version(model_name, version)

    def tag_version(self, model_name: str, version: str, tags: Mapping[str, str]) -> None:
        """Set ``tags`` on one registered version."""
        writer = self.rest or self._client
        for key, value in tags.items():
            writer.set_model_version_tag(model_name, version, key, str(value))

    def tag_model(self, model_name: str, tags: Mapping[str, str]) -> None:
        """Set ``tags`` on the registered model itself (not one version)."""
        writer = self.rest or self._client
        for key, value in tags.items():
            writer.set_registered_model_tag(model_name, key, str(value))

    def record_gate(self, model_name: str, version: str, gate: str, decision: str, reason: str) -> None:
        """A gate's verdict on the version: ``mlops.gate.<gate>.decision`` and ``.reason`` (clipped to
        MLflow's limit), so the registry alone tells why a version is or is not live."""
        self.tag_version(
            model_name,
            version,
            {gate_tag(gate, "decision"): decision, gate_tag(gate, "reason"): clip(reason)},
        )

    def alias_version(self, model_name: str, alias: str) -> str | None:
        """The version ``alias`` points at, or None when the model or the alias does not exist."""
        if self.rest is not None:
            return self.rest.alias_version(model_name, alias)
        from mlflow.exceptions import MlflowException

        try:
            return str(self._client.get_model_version_by_alias(model_name, alias).version)
        except MlflowException:
            return None

    def point_alias(self, model_name: str, alias: str, version: str) -> str | None:
        """Point a working alias (``challenger``) at ``version``; return the version it left.

        No history tags: ``mlops.promoted_at``/``mlops.replaced_by`` are the live alias's history,
        which a rollback follows (:meth:`move_alias`). The caller records the move in its run.
        """
        previous = self.alias_version(model_name, alias)
        (self.rest or self._client).set_registered_model_alias(model_name, alias, version)
        return previous

    def delete_alias(self, model_name: str, alias: str) -> None:
        """Remove a working alias (``challenger``) from the model; the versions and their tags stay."""
        (self.rest or self._client).delete_registered_model_alias(model_name, alias)

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
        """Point the live ``alias`` at ``version`` and record the move on both versions and in the audit trail.

        The one place a live alias moves (a gate's promotion, a deployment target's deploy or
        rollback): ``mlops.promoted_at`` on the new version, ``mlops.replaced_by`` on the one it
        replaced (``previous``, read by the caller before the move), so the registry alone holds
        the history a rollback follows; an ``alias.moved`` audit record says why (``reason``) and
        links it (``links``: deployment; this store's pipeline run), which ``mlops history`` reads.
        """
        from datetime import UTC, datetime

        from mlops.governance.audit import record

        client = self.rest or self._client
        client.set_registered_model_alias(model_name, alias, version)
        client.set_model_version_tag(model_name, version, PROMOTED_AT_TAG, datetime.now(UTC).isoformat())
        if previous is not None and previous != version:
            client.set_model_version_tag(model_name, previous, REPLACED_BY_TAG, version)
        run_link = {"pipeline_run_id": self.pipeline_run_id} if self.pipeline_run_id else {}
        record(
            "alias.moved",
            f"{model_name}/{version}",
            {"alias": alias, "from": previous or "", "to": version, "reason": reason},
            links={**run_link, **(links or {}), "model_version": f"{model_name}/{version}"},
            tracking_uri=self.tracking_uri,
        )

    # --- artifacts, signatures, profiles ------------------------------------------------------

    def download(self, artifact_uri: str, dst_path: str | Path | None = None) -> Path:
        """Download an artifact (``runs:/…``, ``s3://…``, ``mlflow-artifacts:/…``) of this store."""
        import mlflow

        return Path(
            mlflow.artifacts.download_artifacts(
                artifact_uri=artifact_uri,
                dst_path=None if dst_path is None else str(dst_path),
                tracking_uri=self.mlflow_uris[0],
                registry_uri=self.mlflow_uris[1],
            )
        )

    def download_version(self, model_name: str, version: str, dst_path: str | Path | None = None) -> Path:
        """A registered version's files, found through this store's registry (MLflow's own ``models:/``
        download looks versions up in the process-wide registry, whatever registry it is given)."""
        return self.download(self._client.get_model_version_download_uri(model_name, version), dst_path)

    def sign_version(self, model_name: str, version: str, local_dir: Path) -> Signed:
        """Inside the registering task run: sign the version's files (``local_dir``), tag the version and
        record ``model.signed`` (:func:`mlops.governance.signing.sign_registered_version`)."""
        from mlops.governance.signing import sign_registered_version

        return sign_registered_version(self._client, model_name, version, local_dir, self.pipeline_run_id)

    def sign_files(self, local_dir: Path) -> Signed:
        """Inside the registering task run: sign a model's stored files and log the bundle, before any
        version names it (:func:`mlops.governance.signing.sign_run_files`)."""
        from mlops.governance.signing import sign_run_files

        return sign_run_files(self._client, local_dir)

    def verify_version(self, model_name: str, version: str, local_dir: Path) -> None:
        """Verify a downloaded version against its signature bundle before anything loads it."""
        from mlops.governance.signing import verify_registered

        verify_registered(self._client, model_name, version, local_dir)

    def log_reference_profile(self, run_id: str, profile: ReferenceProfile) -> str:
        """Log ``profile`` into run ``run_id``; return the URI a version names in its ``mlops.reference_profile``
        tag, which the drift monitor reads back through :meth:`reference_profile`."""
        from mlops.model.reference_profile import PROFILE_FILE

        client = self._client
        client.log_text(run_id, profile.to_json(), PROFILE_FILE)
        return f"{client.get_run(run_id).info.artifact_uri.rstrip('/')}/{PROFILE_FILE}"

    def write_reference_profile(
        self, run_id: str, model_name: str, version: str, profile: ReferenceProfile
    ) -> str:
        """:meth:`log_reference_profile`, then name it on an existing version; return its URI."""
        uri = self.log_reference_profile(run_id, profile)
        self._client.set_model_version_tag(model_name, version, PROFILE_TAG, uri)
        return uri

    def reference_profile(self, model_name: str, version: str) -> ReferenceProfile:
        """The profile a registered version was stored with; :class:`ProfileError` when it has none."""
        from mlops.model.reference_profile import ProfileError, ReferenceProfile

        uri = self._client.get_model_version(model_name, version).tags.get(PROFILE_TAG)
        if not uri:
            raise ProfileError(
                f"model {model_name!r} version {version} has no reference profile (no {PROFILE_TAG} tag): it was "
                "registered before profiles existed or outside the register step. Retrain it (mlops run training) "
                "so the new version carries one; nothing was triggered"
            )
        try:
            with tempfile.TemporaryDirectory(prefix="mlops-profile-") as tmp:
                text = self.download(uri, tmp).read_text(encoding="utf-8")
        except Exception as exc:  # MLflow raises several types for a missing artifact
            raise ProfileError(
                f"cannot read the reference profile of {model_name} v{version} at {uri}: {exc}"
            ) from exc
        return ReferenceProfile.from_json(text, f"profile of {model_name} v{version}")


class RecordingRun:
    """An open task run of :meth:`TrackingStore.recording_run`: what a recording task writes into it."""

    def __init__(self, run_id: str, store: TrackingStore) -> None:
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

    def __init__(self, run_id: str, store: TrackingStore, rest: MlflowRestClient, artifact_uri: str) -> None:
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
