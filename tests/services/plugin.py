"""Real PostgreSQL, Ceph RGW (S3), ``mlflow server`` and Prometheus, each started at most once per test session.

Registered from ``tests/conftest.py``. A test asks for ``rgw``, ``postgres``,
``mlflow_server`` or ``prometheus`` and gets a running service; tests that use one are marked
``remote_tracking`` automatically (so ``-m "not remote_tracking"`` is a local
shortcut, never CI's default). When a service cannot start the test fails with the
reason and the install command: skipping would turn CI green without testing.
The start/stop logic is in ``infra/testing/*.sh`` so a person can run the same
services by hand.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "infra" / "testing"
MARKER = "remote_tracking"
SERVICE_FIXTURES = {"rgw", "postgres", "mlflow_server", "prometheus"}
ACCESS_KEY, SECRET_KEY = "mlops-test", "mlops-test-secret"
BUCKET = "mlflow"
KMS_KEY_ID = "mlops-test-key"
"""The one key of RGW's built-in testing KMS (start_rgw.sh); every write through mlops.storage uses it."""
TIMINGS: dict[str, float] = {}
BIND = "0.0.0.0"
"""S3 and MLflow listen beyond loopback: pods (tests/services/node.py) reach them at their bridge's gateway."""


@dataclass(frozen=True)
class S3Service:
    endpoint: str
    bucket: str
    env: dict[str, str] = field(default_factory=dict)
    """What a client process needs: endpoint and credentials (the only place test keys live)."""

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
        )

    def keys(self, prefix: str = "") -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]


@dataclass(frozen=True)
class MlflowService:
    tracking_uri: str
    postgres: PostgresService
    s3: S3Service
    log: Path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(MARKER)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMINGS:
        started = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in TIMINGS.items())
        terminalreporter.write_line(f"test services started: {started}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _free_ports(count: int) -> list[int]:
    """Distinct free ports: each socket stays bound until all are chosen, so no two answers are the same port."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


LEDGER_ENV = "MLOPS_TEST_SERVICE_LEDGER"
"""A file ``./test.sh`` names: every service started is recorded there (its stop script and environment) before
it starts, so an interrupted run (Ctrl-C, a killed worker that never ran its teardown) can stop them all."""


def _record_for_stop(script: str, env: dict[str, str]) -> None:
    """Append the stop command of the service ``script`` starts to the ledger, when ``./test.sh`` keeps one."""
    ledger = os.environ.get(LEDGER_ENV)
    stop = SCRIPTS / script.replace("start_", "stop_", 1)
    if not ledger or not script.startswith("start_") or not stop.is_file():
        return
    line = json.dumps({"stop": str(stop), "env": env}) + "\n"
    with open(
        ledger, "a", encoding="utf-8"
    ) as out:  # one short append per line: whole lines, even from two workers
        out.write(line)


def _start(
    name: str,
    script: str,
    env: dict[str, str],
    timeout_s: float = 180,
    setup: str = "bash infra/testing/install.sh",
) -> str:
    """Run a start script; its last stdout line is the service's address. Fails the test loudly."""
    if not (SCRIPTS / script).is_file():
        pytest.fail(f"{SCRIPTS / script} is missing: the test services need the repository's infra/testing/")
    _record_for_stop(script, env)
    started = time.monotonic()
    try:
        result = subprocess.run(
            ["bash", str(SCRIPTS / script)],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name} did not start within {timeout_s:.0f} s ({script})")
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-12:])
        pytest.fail(
            f"cannot start {name} with infra/testing/{script} (exit {result.returncode}):\n{tail}\n"
            f"Set up once with `{setup}` (CI's .ci/run does)."
        )
    TIMINGS[name] = time.monotonic() - started
    return result.stdout.strip().splitlines()[-1]


def _stop(script: str, env: dict[str, str]) -> None:
    subprocess.run(["bash", str(SCRIPTS / script)], env={**os.environ, **env}, timeout=60, check=False)


@pytest.fixture(scope="session")
def rgw() -> Iterator[S3Service]:
    """A real Ceph RGW with one user and the bucket ``mlflow``."""
    state = Path(tempfile.mkdtemp(prefix="mlops-test-rgw-"))
    env: dict[str, str] = {}
    try:
        for attempt in (1, 2):  # free ports are picked here and bound later: one retry covers a lost race
            base = random.randrange(20000, 30000, 100)  # messenger range, below Linux's ephemeral ports
            env = {
                "DIR": str(state),
                "MON_PORT": str(_free_port()),
                "RGW_PORT": str(_free_port()),
                "MSGR_MIN": str(base),
                "MSGR_MAX": str(base + 99),
                "RGW_AK": ACCESS_KEY,
                "RGW_SK": SECRET_KEY,
                "BIND": BIND,
                "RGW_KMS_KEY_ID": KMS_KEY_ID,
            }
            try:
                endpoint = _start("RGW", "start_rgw.sh", env)
                break
            except pytest.fail.Exception as exc:
                _stop("stop_rgw.sh", env)
                if attempt == 2:
                    raise
                print(f"RGW start failed, retrying once with other ports: {exc}", file=sys.stderr)
        from mlops.governance.signing import generate_key_pair

        private_key, public_key = generate_key_pair(state / "signing-secret")  # as a mounted Secret would be
        service = S3Service(
            endpoint,
            BUCKET,
            {
                "MLFLOW_S3_ENDPOINT_URL": endpoint,
                "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_DEFAULT_REGION": "us-east-1",
                # RGW applies SSE-KMS (its testing KMS) but silently ignores SSE-S3 (AES256).
                "MLOPS_S3_SSE": "aws:kms",
                "MLOPS_S3_SSE_KMS_KEY_ID": KMS_KEY_ID,
                # A cluster keeps its audit trail in S3, one object per record.
                "MLOPS_AUDIT_URI": f"s3://{BUCKET}/audit",
                # ... and its signing key pair in files a Secret mounts (no workspace to default to).
                "MLOPS_SIGNING_KEY": str(private_key),
                "MLOPS_SIGNING_PUBLIC_KEY": str(public_key),
            },
        )
        service.client().create_bucket(Bucket=BUCKET)
        yield service
    finally:
        _stop("stop_rgw.sh", env)
        shutil.rmtree(state, ignore_errors=True)


@dataclass(frozen=True)
class PostgresService:
    url: str
    """SQLAlchemy URL of the database ``mlflow`` (psycopg2 driver)."""

    def database(self, name: str) -> str:
        """Create database ``name`` if needed; return its URL (MLflow and Optuna each need their own)."""
        import psycopg2

        base = self.url.rsplit("/", 1)[0]
        connection = psycopg2.connect(base.replace("postgresql+psycopg2://", "postgresql://") + "/postgres")
        connection.autocommit = True
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
                if cursor.fetchone() is None:
                    cursor.execute(f'CREATE DATABASE "{name}"')
        finally:
            connection.close()
        return f"{base}/{name}"


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresService]:
    """A throwaway PostgreSQL cluster (trust auth on 127.0.0.1) with the database ``mlflow``."""
    state = Path(tempfile.mkdtemp(prefix="mlops-test-postgres-"))
    env = {"DIR": str(state), "PG_PORT": str(_free_port())}  # recreated world-readable for the postgres user
    try:
        yield PostgresService(_start("PostgreSQL", "start_postgres.sh", env))
    finally:
        _stop("stop_postgres.sh", env)
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session")
def mlflow_server(rgw: S3Service, postgres: PostgresService) -> Iterator[MlflowService]:
    """``mlflow server`` on PostgreSQL with ``--artifacts-destination s3://mlflow/`` on the RGW."""
    state = Path(tempfile.mkdtemp(prefix="mlops-test-mlflow-"))
    env = {
        **rgw.env,
        "DIR": str(state),
        "MLFLOW_PORT": str(_free_port()),
        "BACKEND_URI": postgres.url,
        "ARTIFACTS_DESTINATION": f"s3://{rgw.bucket}/",
        # The server writes proxied artifacts with its own S3 client: same encryption as mlops.storage.
        "MLFLOW_S3_UPLOAD_EXTRA_ARGS": f'{{"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "{KMS_KEY_ID}"}}',
        "MLFLOW": str(Path(sys.executable).with_name("mlflow")),
        "BIND": BIND,
    }
    try:
        uri = _start("mlflow server", "start_mlflow.sh", env)
        yield MlflowService(uri, postgres, rgw, state / "mlflow.log")
    finally:
        _stop("stop_mlflow.sh", env)
        shutil.rmtree(state, ignore_errors=True)


@dataclass(frozen=True)
class PrometheusService:
    """A real Prometheus scraping every second the targets a test names (file service discovery)."""

    url: str
    state: Path

    def scrape(self, name: str, targets: list[str], labels: dict[str, str]) -> None:
        """Scrape ``targets`` (host:port) with ``labels`` on every series, as job ``name``'s file of targets."""
        entry = [{"targets": targets, "labels": labels}]
        staged = self.state / "targets" / f".{name}.tmp"
        staged.write_text(json.dumps(entry))
        staged.replace(self.state / "targets" / f"{name}.json")  # atomic: never a half-written file

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector ``expr`` evaluates to now (the HTTP API's ``result``)."""
        import httpx

        answer = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=10)
        body = answer.json()
        assert answer.status_code == 200 and body["status"] == "success", f"{expr}: {body}"
        return list(body["data"]["result"])


@pytest.fixture(scope="session")
def prometheus() -> Iterator[PrometheusService]:
    """Debian's Prometheus (2.42), started once per session (infra/testing/start_prometheus.sh)."""
    state = Path(tempfile.mkdtemp(prefix="mlops-test-prometheus-"))
    env = {"DIR": str(state), "PROM_PORT": str(_free_port())}
    try:
        yield PrometheusService(_start("prometheus", "start_prometheus.sh", env, timeout_s=90), state)
    finally:
        _stop("stop_prometheus.sh", env)
        shutil.rmtree(state, ignore_errors=True)
