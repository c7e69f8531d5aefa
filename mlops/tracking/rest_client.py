"""A small client for the part of MLflow's REST API a trivial task records with, without importing MLflow.

Why: ``import mlflow`` costs ~2.4 s and opening a SQLite store ~1 s more in every task
process, while a gate's own work takes milliseconds. When the local run serves the
workspace's store (:mod:`mlops.tracking.served`), the gate, combine and promote tasks record
through this client instead (stdlib ``urllib`` and ``json``): a task run with its tags and
status, version tags, alias moves and reads, and a logged artifact. Everything heavier
(registering, downloading, searching) stays on :class:`mlflow.MlflowClient` in
:class:`mlops.tracking.store.TrackingStore`; this module is part of that one seam.

The endpoints and their fields are MLflow's public REST API (``/api/2.0/mlflow/…``, see
``mlflow/protos/service.proto`` and ``model_registry.proto``); an error answer is raised as
:class:`TrackingServerError` with MLflow's ``error_code`` and message, the server named.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlops.tracking import uris
from mlops.tracking.uris import TrackingError, redact_uri

API = "/api/2.0/mlflow"
"""MLflow's REST API root, under the server's address (and its ``--static-prefix``)."""
ARTIFACTS_API = "/api/2.0/mlflow-artifacts/artifacts"
"""Where a server that proxies artifacts (``mlflow-artifacts:/…`` run URIs) takes uploads."""
NOT_FOUND = "RESOURCE_DOES_NOT_EXIST"
"""MLflow's error code for a missing experiment, run, model, version or alias."""
RETRIED_STATUS = (429, 502, 503, 504)
"""Answers worth asking again (MLflow's own client retries these); a 500 is not, it may have written."""
MAX_TAGS_PER_BATCH = 100
"""``runs/log-batch`` accepts at most 100 tags per request."""


class TrackingServerError(TrackingError):
    """The tracking server refused a request or did not answer; the message names the server and the fix."""

    def __init__(self, message: str, error_code: str = "") -> None:
        super().__init__(message)
        self.error_code = error_code
        """MLflow's error code (``RESOURCE_DOES_NOT_EXIST``, …); empty when the server did not answer."""


@dataclass(frozen=True)
class RunInfo:
    """What a created run's answer says that a task needs: its id and where its artifacts go."""

    run_id: str
    artifact_uri: str


@dataclass(frozen=True)
class MlflowRestClient:
    """MLflow's REST API at ``base_url`` (``http://127.0.0.1:PORT/<prefix>``), the requests a gate makes.

    ``wait_s``: how long a request waits for a server that does not accept connections yet (the local
    run starts its server beside the first steps, so a fast task may ask before it listens).
    """

    base_url: str
    timeout_s: float = 30.0
    """Per request: a server that accepted the connection but does not answer."""
    wait_s: float = 0.0
    """Total: how long to keep trying a server that refuses connections (still starting)."""
    log_hint: str = ""
    """Where the server's own log is, named in an error (the local run's server writes one)."""

    # --- experiments --------------------------------------------------------------------------

    def experiment_by_name(self, name: str) -> dict[str, Any] | None:
        """The experiment named ``name`` (MLflow's JSON: ``experiment_id``, ``artifact_location``, …) or None."""
        try:
            answer = self.call("GET", "/experiments/get-by-name", query={"experiment_name": name})
        except TrackingServerError as exc:
            if exc.error_code == NOT_FOUND:
                return None
            raise
        return dict(answer["experiment"])

    def create_experiment(self, name: str, artifact_location: str = "") -> str:
        """Create an experiment (at ``artifact_location``; empty: the server's default); return its id."""
        body: dict[str, Any] = {"name": name}
        if artifact_location:
            body["artifact_location"] = artifact_location
        return str(self.call("POST", "/experiments/create", body)["experiment_id"])

    def experiment(self, experiment_id: str) -> dict[str, Any]:
        return dict(
            self.call("GET", "/experiments/get", query={"experiment_id": experiment_id})["experiment"]
        )

    # --- runs ---------------------------------------------------------------------------------

    def create_run(self, experiment_id: str, run_name: str, tags: dict[str, str]) -> RunInfo:
        """Start a run (status RUNNING, now) with ``tags``; the server adds ``mlflow.runName``."""
        answer = self.call(
            "POST",
            "/runs/create",
            {
                "experiment_id": experiment_id,
                "run_name": run_name,
                "start_time": _now_ms(),
                "tags": _key_values(tags),
            },
        )
        info = answer["run"]["info"]
        return RunInfo(run_id=str(info["run_id"]), artifact_uri=str(info["artifact_uri"]))

    def set_run_tags(self, run_id: str, tags: dict[str, str]) -> None:
        items = _key_values(tags)
        for start in range(0, len(items), MAX_TAGS_PER_BATCH):
            self.call(
                "POST",
                "/runs/log-batch",
                {"run_id": run_id, "tags": items[start : start + MAX_TAGS_PER_BATCH]},
            )

    def end_run(self, run_id: str, status: str) -> None:
        """``FINISHED``, ``FAILED`` or ``KILLED``, ended now."""
        self.call("POST", "/runs/update", {"run_id": run_id, "status": status, "end_time": _now_ms()})

    def run(self, run_id: str) -> dict[str, Any]:
        return dict(self.call("GET", "/runs/get", query={"run_id": run_id})["run"])

    def log_artifact(self, artifact_uri: str, local_path: Path, artifact_path: str = "") -> None:
        """Store ``local_path`` under the run's ``artifact_uri``/``artifact_path`` (as ``mlflow.log_artifact``):
        a copy when the run's artifacts are a local directory, an upload when the server proxies them."""
        parts = urllib.parse.urlsplit(artifact_uri)
        relative = "/".join(p for p in (artifact_path.strip("/"), local_path.name) if p)
        if (directory := uris.local_path(artifact_uri)) is not None:
            target = directory / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(local_path, target)
            return
        if parts.scheme == "mlflow-artifacts":
            path = f"{parts.path.strip('/')}/{relative}"
            self._request("PUT", ARTIFACTS_API + "/" + urllib.parse.quote(path), local_path.read_bytes())
            return
        raise TrackingServerError(
            f"cannot log {local_path.name} to {artifact_uri} without MLflow's artifact clients (scheme "
            f"{parts.scheme!r}); the light client stores local paths and mlflow-artifacts:/ only: record this "
            "task through TrackingStore's MlflowClient path (unset MLOPS_TRACKING_SERVED_AT)"
        )

    # --- the registry -------------------------------------------------------------------------

    def set_model_version_tag(self, name: str, version: str, key: str, value: str) -> None:
        self.call(
            "POST",
            "/model-versions/set-tag",
            {"name": name, "version": str(version), "key": key, "value": str(value)},
        )

    def set_registered_model_alias(self, name: str, alias: str, version: str) -> None:
        self.call("POST", "/registered-models/alias", {"name": name, "alias": alias, "version": str(version)})

    def set_registered_model_tag(self, name: str, key: str, value: str) -> None:
        self.call("POST", "/registered-models/set-tag", {"name": name, "key": key, "value": str(value)})

    def delete_registered_model_alias(self, name: str, alias: str) -> None:
        self.call("DELETE", "/registered-models/alias", {"name": name, "alias": alias})

    def alias_version(self, name: str, alias: str) -> str | None:
        """The version ``alias`` points at; None when the model or the alias does not exist."""
        try:
            answer = self.call("GET", "/registered-models/alias", query={"name": name, "alias": alias})
        except TrackingServerError as exc:
            if exc.error_code in (NOT_FOUND, "INVALID_PARAMETER_VALUE"):
                return None  # MLflow answers either for a model or an alias that is not there
            raise
        return str(answer["model_version"]["version"])

    def model_version_tags(self, name: str, version: str) -> dict[str, str]:
        """The tags of one registered version (the check before a promotion reads them)."""
        return self.model_version(name, version)[1]

    def model_version(self, name: str, version: str) -> tuple[list[str], dict[str, str]]:
        """One registered version's aliases and tags."""
        answer = self.call("GET", "/model-versions/get", query={"name": name, "version": str(version)})
        found = answer["model_version"]
        tags = {tag["key"]: tag.get("value", "") for tag in found.get("tags", [])}
        return [str(alias) for alias in found.get("aliases", [])], tags

    # --- the wire -----------------------------------------------------------------------------

    def call(
        self,
        method: str,
        endpoint: str,
        body: dict[str, Any] | None = None,
        query: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """One request to ``/api/2.0/mlflow<endpoint>``; the answer's JSON, or :class:`TrackingServerError`."""
        path = API + endpoint + (f"?{urllib.parse.urlencode(query)}" if query else "")
        data = json.dumps(body).encode() if body is not None else None
        raw = self._request(method, path, data)
        return json.loads(raw) if raw.strip() else {}

    def _request(self, method: str, path: str, data: bytes | None) -> bytes:
        url = self.base_url.rstrip("/") + path
        deadline = time.monotonic() + self.wait_s
        attempt = 0
        while True:
            attempt += 1
            request = urllib.request.Request(url, data=data, method=method)
            if data is not None:
                request.add_header("Content-Type", "application/json")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                    return bytes(answer.read())
            except urllib.error.HTTPError as exc:
                text = exc.read().decode("utf-8", "replace")
                if exc.code in RETRIED_STATUS and attempt < 4:
                    time.sleep(0.2 * attempt)
                    continue
                raise self._refused(method, path, exc.code, text) from None
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, ConnectionRefusedError) and time.monotonic() < deadline:
                    time.sleep(0.1)
                    continue
                raise TrackingServerError(
                    f"MLflow tracking server {redact_uri(self.base_url)} does not answer {method} {path} "
                    f"({reason}){self._waited()}; {self._fix()}"
                ) from exc

    def _refused(self, method: str, path: str, status: int, text: str) -> TrackingServerError:
        try:
            answer = json.loads(text)
        except json.JSONDecodeError:
            answer = {}
        code = str(answer.get("error_code", "")) if isinstance(answer, dict) else ""
        message = str(answer.get("message", "")) if isinstance(answer, dict) else ""
        if status == 404 and not code:
            return TrackingServerError(
                f"{redact_uri(self.base_url)} answered HTTP 404 to {method} {path}: not the MLflow server this "
                f"store is served by (another process on that port, or a wrong address); {self._fix()}"
            )
        return TrackingServerError(
            f"MLflow tracking server {redact_uri(self.base_url)} refused {method} {path}: HTTP {status} "
            f"{code or ''} {message or text[:300]}".rstrip(),
            code,
        )

    def _waited(self) -> str:
        return f" after waiting {self.wait_s:.0f} s for it to start" if self.wait_s else ""

    def _fix(self) -> str:
        log = f" (its log: {self.log_hint})" if self.log_hint else ""
        return (
            f"the server the local run started{log} has stopped or never started: re-run, or unset "
            "MLOPS_TRACKING_SERVED_AT so tasks open the store directly"
        )


def _key_values(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"key": key, "value": str(value)} for key, value in tags.items()]


def _now_ms() -> int:
    return int(time.time() * 1000)
