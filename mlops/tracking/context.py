"""One MLflow run per pipeline task, grouped by the pipeline run id.

Components receive the tracking settings as plain pipeline parameters and turn
them into a :class:`TrackingContext`; :func:`task_run` opens the run with the
tags that tie it to its pipeline run, so the MLflow UI can filter a whole
pipeline run with ``tags.mlops.pipeline_run_id = '…'``.

Where runs go is decided once, by :func:`resolve_tracking`, for every command
(``run``, ``tune``, ``serve``, the summary): an explicit value, else
``MLFLOW_TRACKING_URI``, else the workspace's SQLite file. The artifact root follows
the same order (explicit, ``MLOPS_ARTIFACT_ROOT``, the workspace's ``artifacts/``
only for the workspace store, else the server's own default), because a local
artifact root under a remote server silently keeps models on one laptop.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, Field

from mlops.settings import SETTINGS_CONFIG
from mlops.vocabulary import PIPELINE_RUN_ID_TAG, TASK_TAG
from mlops.workspace import Workspace

if TYPE_CHECKING:
    import mlflow

TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
"""MLflow's own variable: the tracking server a pod or a shell points at."""
ARTIFACT_ROOT_ENV = "MLOPS_ARTIFACT_ROOT"
"""Artifact root for new experiments when no ``artifact_root`` is passed (e.g. ``s3://bucket/mlflow``)."""
S3_ENDPOINT_ENVS = ("MLFLOW_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL")
"""Where an S3-compatible store (Ceph RGW, MinIO) answers; MLflow reads the first, boto3 the second."""


class TrackingError(ValueError):
    """Tracking is misconfigured (unreachable server, clashing artifact location); the message says the fix."""


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
    def from_dict(cls, values: Mapping[str, Any], pipeline_run_id: str | None = None) -> TrackingContext:
        """Rebuild a context from :meth:`as_dict` output (or the ``tracking`` section a task receives, with the
        run id beside it); unknown keys are an error, missing ones default."""
        if pipeline_run_id is not None:
            values = {**values, "pipeline_run_id": pipeline_run_id}
        unknown = sorted(set(values) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(
                f"tracking has unknown key(s) {unknown}; expected tracking_uri, experiment, "
                "pipeline_run_id, artifact_root"
            )
        return cls(**{key: str(value) for key, value in values.items()})

    @property
    def experiment_location(self) -> str:
        """Artifact location a new experiment gets: ``<artifact_root>/<experiment>``; empty = server default."""
        return f"{self.artifact_root.rstrip('/')}/{self.experiment}" if self.artifact_root else ""

    def apply(self) -> None:
        """Point the MLflow client at this context's store and experiment.

        An experiment's artifact location is fixed when it is created; an existing one
        that stores elsewhere than ``artifact_root`` asks is an error, not a silent
        fallback (models would land somewhere nobody configured).
        """
        import mlflow

        if self.tracking_uri:
            mlflow.set_tracking_uri(self.tracking_uri)
            mlflow.set_registry_uri(self.tracking_uri)
        client = mlflow.MlflowClient()
        existing = client.get_experiment_by_name(self.experiment)
        if existing is None:
            try:
                client.create_experiment(self.experiment, artifact_location=self.experiment_location or None)
            except mlflow.exceptions.MlflowException:
                # Another task created it between our check and create: fine, if it stores where we want.
                existing = client.get_experiment_by_name(self.experiment)
                if existing is None:
                    raise
        if existing is not None:
            self.check_location(existing.artifact_location)
        experiment = mlflow.set_experiment(self.experiment)
        from mlops.storage import govern_mlflow_artifacts

        govern_mlflow_artifacts(experiment.artifact_location)

    def check_location(self, actual: str) -> None:
        """Raise :class:`TrackingError` when an existing experiment stores artifacts elsewhere than asked."""
        wanted = self.experiment_location
        if wanted and normalise_location(actual) != normalise_location(wanted):
            raise TrackingError(
                f"MLflow experiment {self.experiment!r} already stores its artifacts at {actual}, "
                f"but artifact_root {self.artifact_root!r} asks for {wanted}; an experiment's location "
                f"is fixed when it is created. Use another experiment name (--set experiment=…) or "
                f"the matching artifact_root ({_root_of(actual, self.experiment)})"
            )


def normalise_location(location: str) -> str:
    """One spelling per place: local paths and ``file:`` URIs become ``file:///abs``, no trailing slash."""
    location = location.strip()
    parts = urlsplit(location)
    if parts.scheme == "file":
        return Path(parts.path).expanduser().resolve().as_uri()
    if not parts.scheme:
        return Path(location).expanduser().resolve().as_uri()
    return location.rstrip("/")


def _root_of(location: str, experiment: str) -> str:
    suffix = f"/{experiment}"
    trimmed = location.rstrip("/")
    return trimmed[: -len(suffix)] if trimmed.endswith(suffix) else trimmed


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

    model_config = SETTINGS_CONFIG

    tracking_uri: str = Field(default="")
    """MLflow tracking URI. Empty: the task environment's MLFLOW_TRACKING_URI."""
    experiment: str = Field(default="training", min_length=1)
    """MLflow experiment for this pipeline's runs."""
    artifact_root: str = Field(default="")
    """Artifact location for a newly created MLflow experiment. Empty: the tracking server's default."""


@dataclass(frozen=True)
class ResolvedTracking:
    """The tracking settings one command uses, and where each value came from (for the run header)."""

    context: TrackingContext
    """What tasks receive (``context.as_dict()``) and what the summary reads from."""
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
        return self.context.tracking_uri

    @property
    def artifact_root(self) -> str:
        return self.context.artifact_root

    def describe(self) -> list[str]:
        """A few lines for the start of a run; passwords in URIs are masked, keys never printed."""
        artifacts = self.artifact_root or "the tracking server's default"
        lines = [
            f"  {'tracking URI':<17} {redact_uri(self.tracking_uri)} ({_SOURCES[self.tracking_source]})",
            f"  {'artifact root':<17} {redact_uri(artifacts)} ({_SOURCES[self.artifact_source]})",
            f"  {'experiment':<17} {self.context.experiment}",
        ]
        if self.s3_endpoint:
            lines.append(f"  {'S3 endpoint':<17} {redact_uri(self.s3_endpoint)}")
        return lines

    def check(self, timeout_s: float = 5.0) -> None:
        """Fail fast, before any step runs: the server answers and the experiment stores where asked.

        Raises :class:`TrackingError` naming the URI and the fix. Reads only; creates nothing.
        """
        check_reachable(self.tracking_uri, timeout_s)
        if self.workspace_store and not Path(self.tracking_uri.removeprefix("sqlite:///")).is_file():
            return  # a fresh workspace: the first task creates the store and the experiment
        import mlflow

        client = mlflow.MlflowClient(tracking_uri=self.tracking_uri, registry_uri=self.tracking_uri)
        try:
            existing = client.get_experiment_by_name(self.context.experiment)
        except mlflow.exceptions.MlflowException as exc:
            raise TrackingError(
                f"cannot read experiment {self.context.experiment!r} from {redact_uri(self.tracking_uri)}: "
                f"{exc.message}"
            ) from exc
        if existing is not None:
            self.context.check_location(existing.artifact_location)


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
        context=TrackingContext(tracking_uri, experiment, pipeline_run_id, artifact_root),
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


def redact_uri(uri: str) -> str:
    """``scheme://user:***@host/…``: a password in a URI never reaches a log or a summary."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    netloc = f"{parts.username}:***@{host}{port}"
    return urlunsplit(parts._replace(netloc=netloc))


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
