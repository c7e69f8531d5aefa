"""Online feature lookups for serving: Feast's own feature server (``feast serve``) and a client for it.

``FeatureServer`` starts ``feast serve`` from the Feast venv on a free local port over a repository's online
store (SQLite after ``materialize``) and stops it; ``OnlineClient.lookup`` posts one batched
``/get-online-features`` request for a list of entity ids and returns one mapping of feature values per id,
in order. An id with no value in the store is an error naming it: a model must never score a silent default.
Feast 0.67's feature server does not apply a view's TTL to online reads (it answers PRESENT for a value of
any age), so the client does, when given ``max_age``: a value older than that is an error naming the id and
the features.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from mlops.features.config import FeastSettings
from mlops.features.environment import FeastEnvironment, FeastError, feast_env
from mlops.features.feast_cli import check_repo

NOT_FOUND = "NOT_FOUND"
STALE = "OUTSIDE_MAX_AGE"
LOG_TAIL = 2000


class MissingEntityError(FeastError):
    """An entity id has no (or only stale) online values; its message names the id and the features."""

    def __init__(self, message: str, entity_id: Any = None) -> None:
        super().__init__(message)
        self.entity_id = entity_id


class StaleEntityError(MissingEntityError):
    """An entity id's online values are older than the feature view's TTL (``max_age``)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class FeatureServer:
    """``feast serve`` over ``repo`` on 127.0.0.1, for as long as the ``with`` block (or until ``stop``)."""

    def __init__(self, env: FeastEnvironment, repo: Path, settings: FeastSettings, log: Path) -> None:
        self.env, self.repo, self.settings, self.log = env, check_repo(repo), settings, log
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> FeatureServer:
        self.port = free_port()
        args = [
            str(self.env.feast),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--no-access-log",
        ]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                args,
                cwd=self.repo,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=feast_env(),
                start_new_session=True,
            )
        deadline = time.monotonic() + self.settings.server_start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise FeastError(
                    f"feast serve in {self.repo} exited ({self.process.returncode}): {self.log_tail()}"
                )
            if self._healthy():
                return self
            time.sleep(0.2)
        self.stop()
        raise FeastError(
            f"feast serve in {self.repo} did not answer /health within {self.settings.server_start_timeout_s:.0f} s "
            f"(raise features.server_start_timeout_s): {self.log_tail()}"
        )

    def _healthy(self) -> bool:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
            connection.request("GET", "/health")
            return connection.getresponse().status == 200
        except OSError:
            return False

    def log_tail(self) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text[-LOG_TAIL:].strip() or "no output"

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()  # gunicorn/uvicorn shut their workers down on SIGTERM
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> FeatureServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class OnlineClient:
    """Looks features up from a running feature server, one HTTP request per batch of ids (one kept-alive
    connection; reopened once if the server closed it)."""

    def __init__(self, address: str, settings: FeastSettings) -> None:
        host, port = address.rsplit(":", 1)
        self.host, self.port, self.timeout = host, int(port), settings.request_timeout_s
        self.connection: http.client.HTTPConnection | None = None

    def lookup(
        self, service: str, entity: str, ids: Sequence[Any], max_age: timedelta | None = None
    ) -> list[dict[str, Any]]:
        """One ``{feature: value}`` per id, in the order given; raises MissingEntityError naming the first
        id without a value (or, with ``max_age``, with one older than that)."""
        body = json.dumps({"feature_service": service, "entities": {entity: list(ids)}}).encode()
        answer = self._post("/get-online-features", body, service)
        names: list[str] = answer["metadata"]["feature_names"]
        results: list[dict[str, Any]] = answer["results"]
        columns = {name: result for name, result in zip(names, results, strict=True) if name != entity}
        rows: list[dict[str, Any]] = []
        for position, entity_id in enumerate(ids):
            statuses = {name: column["statuses"][position] for name, column in columns.items()}
            if all(status == NOT_FOUND for status in statuses.values()):
                raise MissingEntityError(
                    f"{entity}={entity_id!r} has no features in the online store of service {service!r} "
                    "(not in the feature table, or not materialized yet: `mlops features materialize`)",
                    entity_id,
                )
            stale = sorted(name for name, status in statuses.items() if status == STALE)
            if max_age is not None:
                oldest = datetime.now(UTC) - max_age
                stale += sorted(
                    name
                    for name, column in columns.items()
                    if statuses[name] == "PRESENT" and _moment(column["event_timestamps"][position]) < oldest
                )
            if stale:
                raise StaleEntityError(
                    f"{entity}={entity_id!r}: the online values of {', '.join(stale)} are older than their feature "
                    "view's TTL; load newer values (`mlops features materialize`) or lengthen the view's ttl",
                    entity_id,
                )
            rows.append({name: column["values"][position] for name, column in columns.items()})
        return rows

    def _post(self, path: str, body: bytes, service: str) -> dict[str, Any]:
        for attempt in (1, 2):
            if self.connection is None:
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.connection.request("POST", path, body, {"Content-Type": "application/json"})
                response = self.connection.getresponse()
                payload = response.read()
            except (http.client.HTTPException, OSError) as exc:  # refused, reset, timed out
                self.close()
                if attempt == 2:
                    raise FeastError(f"feature server {self.host}:{self.port} did not answer: {exc}") from exc
                continue
            if response.status != 200:
                raise FeastError(
                    f"feature server refused the lookup of service {service!r} (HTTP {response.status}): "
                    f"{payload.decode(errors='replace')[:500]}"
                )
            result: dict[str, Any] = json.loads(payload)
            return result
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None
