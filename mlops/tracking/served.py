"""One MLflow tracking server on the workspace's store for the length of a local run, and how tasks find it.

Why: every task of a local run is a fresh process; opening the SQLite store directly costs each
one MLflow's import and the store's start-up (~3 s) for a gate's milliseconds of work. The run
process serves the store once (:func:`serve_store`) and tells its tasks where, through one
environment variable (:data:`SERVED_AT_ENV`, inherited by kfp.local's subprocess tasks): a
JSON object from the store's URI to the server's address. The task *arguments* keep the
store's URI, so a ``--cache`` key does not change from run to run with the server's port.

:meth:`mlops.tracking.store.TrackingStore.for_task` reads the variable: a store whose URI is
served records its light writes over REST (:mod:`mlops.tracking.rest_client`), and everything
else opens the store directly. The server is started with a random path prefix
(``--static-prefix /mlops-<random>``): only the server this run started answers that address,
so a task never writes to another process that took the port.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mlops.tracking.mlflow_app import server_command
from mlops.tracking.telemetry import TELEMETRY_OFF
from mlops.tracking.uris import TrackingError, normalise_location

SERVED_AT_ENV = "MLOPS_TRACKING_SERVED_AT"
"""JSON object ``{"<store URI>": {"url": "http://127.0.0.1:PORT/<prefix>", "log": "<server log>"}}``."""
SERVE_ENV = "MLOPS_SERVE_TRACKING"
"""``0``: a local run does not serve its store (each task opens it directly, the way it did before)."""
START_WAIT_S = 180.0
"""How long a task waits for the run's server to accept connections (it starts beside the first steps)."""
SERVER_ENVIRONMENT = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **TELEMETRY_OFF}
"""Set for the server: MLflow 3's job execution starts a job runner and seven Huey consumers, each a
Python process importing MLflow (GenAI evaluation jobs, trace roll-ups); a local run's tracking uses none,
and they would take the CPU from the pipeline's own steps. Telemetry off (:mod:`mlops.tracking.telemetry`),
whoever started the run."""
STOP_WAIT_S = 10.0
"""How long the server gets to stop on SIGTERM before it is killed."""


@dataclass(frozen=True)
class ServedAt:
    """Where a store is served: the server's address (prefix included) and its log file."""

    url: str
    log: str = ""


def served_at(tracking_uri: str, environ: Mapping[str, str] = os.environ) -> ServedAt | None:
    """Where ``tracking_uri`` is served according to :data:`SERVED_AT_ENV`; None when it is not.

    A malformed variable is an error naming it (a task would otherwise silently open the store
    directly and pay the start-up the variable was meant to save)."""
    raw = environ.get(SERVED_AT_ENV, "").strip()
    if not raw:
        return None
    try:
        mapping = json.loads(raw)
        if not isinstance(mapping, dict):
            raise ValueError("not a JSON object")
        entries = {_store_key(uri): ServedAt(**value) for uri, value in mapping.items()}
    except (ValueError, TypeError) as exc:
        raise TrackingError(
            f"{SERVED_AT_ENV}={raw[:200]!r} is not a JSON object of store URI -> "
            f'{{"url": "http://…", "log": "…"}} ({exc}); unset it to open the store directly'
        ) from exc
    return entries.get(_store_key(tracking_uri))


def _store_key(uri: str) -> str:
    if uri.startswith("sqlite:///"):
        return "sqlite:///" + normalise_location(uri.removeprefix("sqlite:///")).removeprefix("file://")
    return uri.strip().rstrip("/")


@dataclass
class ServedStore:
    """A running MLflow tracking server on one store (what :func:`serve_store` yields)."""

    tracking_uri: str
    url: str
    log: Path
    process: subprocess.Popen[bytes]
    watchdog: subprocess.Popen[bytes] | None = None
    """A ``sh`` that stops the server's group when the run process dies without stopping it (SIGTERM,
    SIGKILL, the OOM killer): it reads a pipe only the run process holds open, and the kernel closes it."""

    def wait_until_healthy(self, timeout_s: float = START_WAIT_S) -> None:
        """Block until ``/health`` answers OK; :class:`TrackingError` naming the log if it dies or never does."""

        def exited() -> str:
            if self.process.poll() is None:
                return ""
            return f"the MLflow server for {self.tracking_uri} exited with code {self.process.returncode} before answering"

        wait_until_answering(self.url, str(self.log), timeout_s, exited)

    def wait_until_schema_ready(self, timeout_s: float = START_WAIT_S) -> None:
        """Block until the server has created (or upgraded) the store's tables: its SQLite file's schema
        version is the installed MLflow's newest (:func:`schema_ready`). Sooner than ``/health`` (the web
        app starts after), and enough for a task that opens the file itself not to race the server for it."""
        db = Path(self.tracking_uri.removeprefix("sqlite:///"))
        head = mlflow_schema_head()
        deadline = time.monotonic() + timeout_s
        while not schema_ready(db, head):
            if self.process.poll() is not None:
                raise TrackingError(
                    f"the MLflow server for {self.tracking_uri} exited with code {self.process.returncode} "
                    f"before creating its tables; see {self.log}"
                )
            if time.monotonic() > deadline:
                raise TrackingError(
                    f"the MLflow server for {self.tracking_uri} did not create its tables (schema {head}) within "
                    f"{timeout_s:.0f} s; see {self.log}"
                )
            time.sleep(0.1)

    def stop(self) -> None:
        """SIGTERM to the server's process group, then SIGKILL if it lingers."""
        if self.watchdog is not None:  # stopped here: the watchdog must not signal a group id reused later
            self.watchdog.kill()
            self.watchdog.wait()
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(STOP_WAIT_S)
        except ProcessLookupError:
            pass


HEALTH_POLL_S = 0.2
"""How often a waiting task asks ``/health`` again: the step starts within this of the server answering."""


def wait_until_answering(
    url: str, log: str = "", timeout_s: float = START_WAIT_S, gone: Callable[[], str] | None = None
) -> None:
    """Block until the server at ``url`` (prefix included) answers ``/health`` with 200, asking every
    :data:`HEALTH_POLL_S`; :class:`TrackingError` naming ``url`` and the server's ``log`` when it does not
    within ``timeout_s`` (or when ``gone`` says why it never will).

    Why: a local run's first tasks start beside its server. MLflow's client meets a server that does not
    listen yet with its retry back-off (sleeps of 4, 8, 16 s …), so a task kept waiting up to 16 s after
    the server was up; a task that asks first starts within :data:`HEALTH_POLL_S` of it."""
    import urllib.error
    import urllib.request

    where = f"; see {log}" if log else ""
    deadline = time.monotonic() + timeout_s
    while True:
        if gone is not None and (why := gone()):
            raise TrackingError(f"{why}{where}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise TrackingError(
                f"the MLflow server at {url} did not answer {url}/health within {timeout_s:.0f} s{where}"
            )
        time.sleep(HEALTH_POLL_S)


def mlflow_server_command(backend_store_uri: str, host: str, port: int, *options: str) -> list[str]:
    """``mlflow server`` on ``backend_store_uri`` at ``host:port`` with one worker (``mlops ui`` starts it
    so), then ``options``."""
    return [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        backend_store_uri,
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        "1",
        *options,
    ]


@contextmanager
def serve_store(
    tracking_uri: str,
    artifact_root: str,
    log: Path,
    *,
    environ: MutableMapping[str, str] = os.environ,
) -> Iterator[ServedStore]:
    """Serve ``tracking_uri`` (a ``sqlite:///`` store) with MLflow's server app on 127.0.0.1 for the block
    (:mod:`mlops.tracking.mlflow_app`: what ``mlflow server --workers 1 --no-serve-artifacts`` serves, in one
    process).

    Does not wait for it to answer (tasks wait, :data:`START_WAIT_S`); call
    :meth:`ServedStore.wait_until_healthy` to. Sets :data:`SERVED_AT_ENV` in ``environ`` for the
    block and restores it after; the server is stopped on the way out, also when the body raises
    (Ctrl-C included). Artifacts stay where the experiments say (``--no-serve-artifacts``): the
    workspace's experiments store them under ``artifact_root``, which tasks write directly.
    """
    if not tracking_uri.startswith("sqlite:///"):
        raise TrackingError(f"serve_store serves a workspace's sqlite:/// store, not {tracking_uri}")
    port = _free_port()
    prefix = f"/mlops-{secrets.token_hex(8)}"
    url = f"http://127.0.0.1:{port}{prefix}"
    # MLflow's app in one process: `mlflow server` imports MLflow twice
    command = server_command(tracking_uri, "127.0.0.1", port, prefix, artifact_root)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as handle:
        process = subprocess.Popen(
            command,
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **SERVER_ENVIRONMENT},
        )
    served = ServedStore(tracking_uri, url, log, process, watch_group(process.pid))
    before = environ.get(SERVED_AT_ENV)
    try:
        mapping = json.loads(before) if before else {}
        mapping[tracking_uri] = {"url": url, "log": str(log)}
        environ[SERVED_AT_ENV] = json.dumps(mapping)
        yield served
    finally:
        try:
            served.stop()
        finally:
            if before is None:
                environ.pop(SERVED_AT_ENV, None)
            else:
                environ[SERVED_AT_ENV] = before


WATCHDOG_SCRIPT = 'read -r _ ; kill -TERM -"$1" 2>/dev/null ; sleep 5 ; kill -KILL -"$1" 2>/dev/null'
"""Waits for end of file on its stdin (the run process gone), then SIGTERM to the server's group, SIGKILL 5 s later."""


def watch_group(group: int) -> subprocess.Popen[bytes]:
    """Start the watchdog of process group ``group``: a ``finally`` never runs in a process that is killed,
    but the kernel closes its pipes. The pipe's write end stays only here (Python's pipes are not
    inherited by the steps' processes), so end of file means the run process itself is gone."""
    return subprocess.Popen(
        ["/bin/sh", "-c", WATCHDOG_SCRIPT, "mlops-tracking-watchdog", str(group)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def mlflow_schema_head() -> str:
    """The newest database schema revision of the installed MLflow: the one alembic revision in its
    ``store/db_migrations/versions`` that no other revision names as its ``down_revision`` (read from the
    files, so that the run process never imports MLflow for it)."""
    import importlib.util
    import re

    spec = importlib.util.find_spec("mlflow")
    if spec is None or not spec.submodule_search_locations:
        raise TrackingError(
            "MLflow is not installed in this environment: pip install the platform's requirements"
        )
    versions = Path(next(iter(spec.submodule_search_locations))) / "store" / "db_migrations" / "versions"
    revisions, parents = set(), set()
    for migration in versions.glob("*.py"):
        text = migration.read_text(encoding="utf-8")
        revisions.update(re.findall(r'^revision = "(\w+)"', text, re.MULTILINE))
        parents.update(re.findall(r'^down_revision = "(\w+)"', text, re.MULTILINE))
    heads = revisions - parents
    if len(heads) != 1:
        raise TrackingError(f"cannot tell the newest MLflow schema from {versions}: heads {sorted(heads)}")
    return heads.pop()


def schema_ready(db: Path, head: str) -> bool:
    """Whether the SQLite file ``db`` exists and its schema is at revision ``head`` (read-only, stdlib)."""
    import sqlite3

    if not db.is_file():
        return False
    try:
        connection = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=1)
        try:
            row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            connection.close()
    except sqlite3.Error:  # no table yet, or locked while the server writes it
        return False
    return row is not None and row[0] == head


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
