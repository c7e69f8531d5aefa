"""Where a command tracks: the tracking store, the artifact root and the S3 endpoint, decided once.

:func:`resolve_tracking` is what every command that reads or writes runs (``run``, ``serve``,
``score``, ``rollout``, ``card``, ``lineage``, …) asks: an explicit value, else
``MLFLOW_TRACKING_URI``, else the workspace's SQLite file. The artifact root follows
the same order (explicit, ``MLOPS_ARTIFACT_ROOT``, the workspace's ``artifacts/``
only for the workspace store, else the server's own default), because a local
artifact root under a remote server silently keeps models on one laptop.

The answer, :class:`ResolvedTracking`, holds the :class:`~mlops.tracking.store.TrackingStore`
tasks receive and where each value came from, for the run's header (:meth:`~ResolvedTracking.describe`,
passwords masked). :meth:`~ResolvedTracking.check` and :func:`check_reachable` fail a command in
seconds when the server does not answer, where MLflow's own client would retry for minutes.
How a task opens its MLflow run lives with the store (:meth:`~mlops.tracking.store.TrackingStore.task_run`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mlops.tracking.sqlite_catalog import experiment_location, sqlite_path
from mlops.tracking.store import TRACKING_URI_ENV, TrackingError, TrackingSettings, TrackingStore, redact_uri
from mlops.workspace import Workspace

__all__ = [
    "ARTIFACT_ROOT_ENV",
    "TRACKING_URI_ENV",
    "ResolvedTracking",
    "TrackingError",
    "TrackingSettings",
    "check_reachable",
    "redact_uri",
    "resolve_tracking",
]

ARTIFACT_ROOT_ENV = "MLOPS_ARTIFACT_ROOT"
"""Artifact root for new experiments when no ``artifact_root`` is passed (e.g. ``s3://bucket/mlflow``)."""
S3_ENDPOINT_ENVS = ("MLFLOW_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL")
"""Where an S3-compatible store (Ceph RGW, MinIO) answers; MLflow reads the first, boto3 the second."""


@dataclass(frozen=True)
class ResolvedTracking:
    """The tracking settings one command uses, and where each value came from (for the run header)."""

    store: TrackingStore
    """What tasks receive (``store.settings()``) and what the summary and the check read from."""
    tracking_source: str
    """``"explicit"``, ``"MLFLOW_TRACKING_URI"`` or ``"workspace"``."""
    artifact_source: str
    """``"explicit"``, ``"MLOPS_ARTIFACT_ROOT"``, ``"workspace"`` or ``"server default"``."""
    s3_endpoint: str = ""
    """The S3 endpoint the environment names (``MLFLOW_S3_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL``), if any."""
    workspace_store: bool = False
    """True when runs go to the workspace's own SQLite file (the only case that writes ``mlflow.db``)."""

    @property
    def tracking_uri(self) -> str:
        return self.store.tracking_uri

    @property
    def artifact_root(self) -> str:
        return self.store.artifact_root

    def describe(self) -> list[str]:
        """A few lines for the start of a run; passwords in URIs are masked, keys never printed."""
        artifacts = self.artifact_root or "the tracking server's default"
        lines = [
            f"  {'tracking URI':<17} {redact_uri(self.tracking_uri)} ({_SOURCES[self.tracking_source]})",
            f"  {'artifact root':<17} {redact_uri(artifacts)} ({_SOURCES[self.artifact_source]})",
            f"  {'experiment':<17} {self.store.experiment}",
        ]
        if self.s3_endpoint:
            lines.append(f"  {'S3 endpoint':<17} {redact_uri(self.s3_endpoint)}")
        return lines

    def check(self, timeout_s: float = 5.0) -> None:
        """Fail fast, before any step runs: the server answers and the experiment stores where asked.

        Raises :class:`TrackingError` naming the URI and the fix. Reads only; creates nothing.
        """
        check_reachable(self.tracking_uri, timeout_s)
        db = sqlite_path(self.tracking_uri)
        if db is not None and db.is_file():  # read with sqlite3: opening it through MLflow costs seconds
            if (location := experiment_location(db, self.store.experiment)) is not None:
                self.store.check_location(location)
        elif db is None or not self.workspace_store:
            self.store.check_experiment()
        # else a fresh workspace: the first task creates the store and the experiment


_SOURCES = {
    "explicit": "set explicitly",
    "MLFLOW_TRACKING_URI": "from MLFLOW_TRACKING_URI",
    ARTIFACT_ROOT_ENV: f"from {ARTIFACT_ROOT_ENV}",
    "workspace": "the workspace's",
    "server default": f"no artifact_root or {ARTIFACT_ROOT_ENV} given",
}


def resolve_tracking(
    workspace: Workspace,
    tracking_uri: str = "",
    artifact_root: str = "",
    experiment: str = "training",
    pipeline_run_id: str = "",
    environ: Mapping[str, str] = os.environ,
) -> ResolvedTracking:
    """Decide where a command tracks: explicit value > ``MLFLOW_TRACKING_URI`` > the workspace's SQLite.

    The artifact root: explicit > ``MLOPS_ARTIFACT_ROOT`` > the workspace's ``artifacts/``
    when (and only when) the store is the workspace's SQLite > empty, which lets a
    tracking server use its own default (``mlflow server --artifacts-destination s3://…``).
    S3 endpoint and credentials stay in the environment (boto3 and MLflow read them there);
    nothing here copies a secret into a pipeline parameter.
    """
    tracking_uri, artifact_root = tracking_uri.strip(), artifact_root.strip()
    if tracking_uri:
        tracking_source = "explicit"
    elif environ.get(TRACKING_URI_ENV, "").strip():
        tracking_uri, tracking_source = environ[TRACKING_URI_ENV].strip(), TRACKING_URI_ENV
    else:
        tracking_uri, tracking_source = workspace.tracking_uri, "workspace"
    _check_uri(tracking_uri, tracking_source)
    workspace_store = _same_store(tracking_uri, workspace)

    if artifact_root:
        artifact_source = "explicit"
    elif environ.get(ARTIFACT_ROOT_ENV, "").strip():
        artifact_root, artifact_source = environ[ARTIFACT_ROOT_ENV].strip(), ARTIFACT_ROOT_ENV
    elif workspace_store:
        artifact_root, artifact_source = workspace.artifact_root, "workspace"
    else:
        artifact_source = "server default"

    endpoint = next((environ[name] for name in S3_ENDPOINT_ENVS if environ.get(name, "").strip()), "")
    return ResolvedTracking(
        store=TrackingStore(tracking_uri, experiment, pipeline_run_id, artifact_root),
        tracking_source=tracking_source,
        artifact_source=artifact_source,
        s3_endpoint=endpoint.strip(),
        workspace_store=workspace_store,
    )


def _check_uri(uri: str, source: str) -> None:
    origin = "MLFLOW_TRACKING_URI" if source == TRACKING_URI_ENV else "tracking_uri"
    if "://" not in uri and not uri.startswith(("sqlite:", "file:", "databricks")):
        raise TrackingError(
            f"{origin} {uri!r} is not a tracking URI; use e.g. http://mlflow:5000, "
            "postgresql+psycopg2://user@host/db or sqlite:////abs/path/mlflow.db"
        )


def _same_store(uri: str, workspace: Workspace) -> bool:
    if not uri.startswith("sqlite:///"):
        return False
    return Path(uri.removeprefix("sqlite:///")).expanduser().resolve() == workspace.tracking_db


def check_reachable(tracking_uri: str, timeout_s: float = 5.0) -> None:
    """For an HTTP(S) tracking server, ask ``/health`` once; raise :class:`TrackingError` if it won't answer.

    MLflow's own client retries an unreachable server for minutes with backoff; a
    command should say so in seconds instead. Other stores (SQLite, PostgreSQL) are
    opened by MLflow directly and report their own errors.
    """
    if not tracking_uri.startswith(("http://", "https://")):
        return
    import urllib.error
    import urllib.request

    url = f"{tracking_uri.rstrip('/')}/health"
    fix = "start the server, or fix --tracking-uri / MLFLOW_TRACKING_URI"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TrackingError(
            f"MLflow tracking server {redact_uri(tracking_uri)} is unreachable ({reason}); {fix}"
        ) from exc
    if status != 200:
        raise TrackingError(
            f"{redact_uri(tracking_uri)}/health answered HTTP {status}: not a healthy MLflow server; {fix}"
        )
