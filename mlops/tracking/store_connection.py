"""The settings a tracking store is built from, and the clients it reaches MLflow with.

:class:`StoreConnection` is the part of :class:`mlops.tracking.store.TrackingStore` that both of its halves
(:mod:`mlops.tracking.run_tracker`, :mod:`mlops.tracking.model_registry_store`) work through: the URIs, the
experiment and the pipeline run, how a pipeline task builds them (:meth:`StoreConnection.for_task`), and the
two clients: MLflow's own (private to :mod:`mlops.tracking`, built on first use with both URIs named) and, on a
store the local run serves, the light REST client (:attr:`StoreConnection.rest`). Kept apart from the store so
that the halves depend on it and the store on the halves, without a cycle.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Self

from pydantic import BaseModel, Field

from mlops.settings import SETTINGS_CONFIG
from mlops.tracking.uris import TrackingError

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from mlops.tracking.rest_client import MlflowRestClient
    from mlops.tracking.sqlite_registry import SqliteRegistryReader

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


@dataclass(frozen=True)
class StoreConnection:
    """Where a task (or a command) logs and registers, and which pipeline run it belongs to: the settings of a
    :class:`~mlops.tracking.store.TrackingStore` and its clients, what its two halves work through.

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
    ) -> Self:
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
    def from_uri(cls, tracking_uri: str, **settings: str) -> Self:
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

    @cached_property
    def sqlite_reads(self) -> SqliteRegistryReader | None:
        """The light reader of a SQLite store this process opens itself (not served, its own registry): the
        registry reads it finds answer without importing MLflow; None for any other store."""
        if self.served_url:
            return None
        from mlops.tracking.sqlite_registry import reader_for

        return reader_for(self.tracking_uri, self.registry_uri)

    @property
    def experiment_location(self) -> str:
        """Artifact location a new experiment gets: ``<artifact_root>/<experiment>``; empty = server default."""
        return f"{self.artifact_root.rstrip('/')}/{self.experiment}" if self.artifact_root else ""
