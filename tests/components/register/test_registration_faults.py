"""Faults during registration, with real services: the MLflow server killed, S3 stopped, request by request.

A private ``mlflow server`` (the session's PostgreSQL, artifacts proxied to the session's RGW) is
SIGKILLed, or S3 is stopped for every client (the server's artifact proxy and the audit trail both
reach the RGW through a relay that is cut), just before the Nth request the registration makes to
the tracking server, for the N each test names (why those: ``first_of_each_kind``,
``s3_fault_points``; ``FAULT_POINTS=all`` takes every N of an undisturbed registration). After each
fault the service is brought back and the registry is checked: the step failed naming the service;
every version of the model has its files (verified against its signature and digest), its reference
profile and its two audit records; the audit chain is intact; and a re-run registers a whole version.
Each fault point writes a trail of its own (the faulted step's records and the re-run's): a check
then reads that point's few records, not every earlier point's again.

The private server (:class:`~tests.components.register.private_mlflow.PrivateMlflow`) is in
private_mlflow.py; this module holds its fixtures, the fault harness and the two faults.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

import pandas as pd
import pytest

from components.register.version_registration import RegisteredVersion, register_onnx_model
from mlops.data.sample_data import SampleDataConfig, generate
from mlops.governance import audit
from mlops.origin_facts import file_sha256
from mlops.tracking.registration_faults import RegistrationError
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import (
    DIGEST_TAG,
    ONNX_FILE,
    PROFILE_TAG,
    SIGNATURE_URI_TAG,
    SIGNING_KEY_ID_TAG,
    Lineage,
)
from tests.components.register.private_mlflow import PrivateMlflow
from tests.services.plugin import PostgresService, S3Service, _free_port
from tests.support.serving import train_onnx
from tests.support.tcp_relay import TcpRelay

LINEAGE = Lineage("faults", "abc123", "d" * 64, "1.0.0", "0.1.0", "train-run")
FAST_FAILURE = {
    # One retry, short back-off: a dead server fails the step in seconds, not MLflow's default minutes.
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
    "AWS_MAX_ATTEMPTS": "2",
    # Read-back through the server, not from presigned S3 URLs: those retry 5 times with a back-off of 2 s
    # per file (MLflow's cloud_storage_http_request), about 2 minutes before a download fails for S3 down.
    "MLFLOW_ENABLE_PROXY_MULTIPART_DOWNLOAD": "false",
    "AWS_RETRY_MODE": "standard",
}


@pytest.fixture(scope="module")
def s3_relay(rgw: S3Service) -> Iterator[TcpRelay]:
    parts = urlsplit(rgw.endpoint)
    relay = TcpRelay((parts.hostname or "127.0.0.1", parts.port or 80)).start()
    yield relay
    relay.close()


@pytest.fixture(scope="module")
def server(postgres: PostgresService, rgw: S3Service, s3_relay: TcpRelay) -> Iterator[PrivateMlflow]:
    state = Path(tempfile.mkdtemp(prefix="mlops-test-faults-mlflow-"))
    env = {
        **rgw.env,
        "MLFLOW_S3_ENDPOINT_URL": s3_relay.endpoint,
        "DIR": str(state),
        "MLFLOW_PORT": str(_free_port()),
        "BACKEND_URI": postgres.database("registration_faults"),
        "ARTIFACTS_DESTINATION": f"s3://{rgw.bucket}/registration-faults/",
        "MLFLOW_S3_UPLOAD_EXTRA_ARGS": f'{{"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "{rgw.env["MLOPS_S3_SSE_KMS_KEY_ID"]}"}}',
        "MLFLOW": str(Path(sys.executable).with_name("mlflow")),
    }
    service = PrivateMlflow(env, state)
    service.start()
    yield service
    service.stop()
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def model_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    frame = generate(SampleDataConfig(rows=600, seed=5))
    return train_onnx(tmp_path_factory.mktemp("onnx"), frame, seed=0), frame.tail(80)


@pytest.fixture
def client_env(rgw: S3Service, s3_relay: TcpRelay, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the register task's pod has: S3 (through the relay) for the audit trail, the signing keys."""
    for key, value in {**rgw.env, **FAST_FAILURE, "MLFLOW_S3_ENDPOINT_URL": s3_relay.endpoint}.items():
        monkeypatch.setenv(key, value)


@contextmanager
def fault_before(server_uri: str, n: int, fault: Callable[[], None]) -> Iterator[list[str]]:
    """Run ``fault`` just before the ``n``th request this process sends to the tracking server (0: never);
    yields the requests sent, as ``METHOD /path``."""
    import requests

    original = requests.Session.send
    sent: list[str] = []

    def send(session: requests.Session, request: Any, **kwargs: Any) -> Any:
        if str(request.url).startswith(server_uri):
            path = re.sub(r"m-[0-9a-f]{32}|[0-9a-f]{32}", "<id>", urlsplit(str(request.url)).path)
            if request.method == "GET" and "/mlflow-artifacts/artifacts/" in path:
                path = path.rsplit("/", 1)[0] + "/<file>"  # the read-back runs in threads, in any order
            sent.append(f"{request.method} {path}")
            if len(sent) == n:
                fault()
        return original(session, request, **kwargs)

    with mock.patch.object(requests.Session, "send", send):
        yield sent


def register(server: PrivateMlflow, files: tuple[Path, pd.DataFrame], model: str) -> RegisteredVersion:
    onnx_dir, frame = files
    store = TrackingStore(server.uri, "registration-faults", "faults-run")
    return register_onnx_model(onnx_dir, frame, model, LINEAGE, store, label="default")


def assert_registry_whole(server: PrivateMlflow, model: str) -> list[str]:
    """Every version of ``model``: files verified against signature and digest, a profile, both audit
    records; the audit chain intact. Returns the version numbers."""
    store = TrackingStore(server.uri, "registration-faults")
    versions = store.search_versions(f"name = '{model}'")
    events = audit.read_events(tracking_uri=server.uri)
    recorded = {(e.subject, e.action) for e in events}
    withdrawn = {e.subject for e in events if e.action == "model.registration_withdrawn"}
    numbers = sorted(str(v.version) for v in versions)
    for version in versions:
        number, tags = str(version.version), version.tags
        missing = [
            t for t in (DIGEST_TAG, SIGNATURE_URI_TAG, SIGNING_KEY_ID_TAG, PROFILE_TAG) if not tags.get(t)
        ]
        assert not missing, f"{model} v{number} lacks {missing}"
        with tempfile.TemporaryDirectory() as tmp:
            local = store.download_version(model, number, tmp)
            store.verify_version(model, number, local)
            assert file_sha256(local / ONNX_FILE) == tags[DIGEST_TAG], f"{model} v{number}: digest differs"
        store.reference_profile(model, number)
        for action in ("model.registered", "model.signed"):
            assert (f"{model}/{number}", action) in recorded, (
                f"{model} v{number} has no {action} audit record"
            )
    for subject, action in recorded:
        if action == "model.registered" and subject.startswith(f"{model}/"):
            number = subject.rsplit("/", 1)[1]
            assert number in numbers or subject in withdrawn, (
                f"audit names {subject}, which is not registered"
            )
    verification = audit.verify(tracking_uri=server.uri)
    assert verification.intact, verification.problems
    return numbers


@contextmanager
def audit_trail(uri: str) -> Iterator[None]:
    """The audit trail the registrations in this block write (``MLOPS_AUDIT_URI``)."""
    with mock.patch.dict(os.environ, {audit.AUDIT_URI_ENV: uri}):
        yield


def baseline_requests(
    server: PrivateMlflow, files: tuple[Path, pd.DataFrame], kind: str, audit_uri: str
) -> list[str]:
    """The requests of an undisturbed registration (the fault points). The warm-up creates the experiment,
    so every later registration sends the same; each test has its own models, as it has its own trails."""
    with audit_trail(f"{audit_uri}/baseline"):
        register(server, files, f"faults-{kind}-warm-up")
        with fault_before(server.uri, 0, lambda: None) as sent:
            registered = register(server, files, f"faults-{kind}-baseline")
        assert assert_registry_whole(server, f"faults-{kind}-baseline") == [registered.version]
        with fault_before(server.uri, 0, lambda: None) as again:
            register(server, files, f"faults-{kind}-baseline")
    assert again == sent, (
        "two undisturbed registrations sent different requests: the fault points would drift"
    )
    print(f"an undisturbed registration sends {len(sent)} requests to the tracking server ({audit_uri}):")
    print("\n".join(f"  {i:2d} {line}" for i, line in enumerate(sent, 1)))
    return sent


def run_faults(
    server: PrivateMlflow,
    files: tuple[Path, pd.DataFrame],
    kind: str,
    fault: Callable[[], None],
    restore: Callable[[], None],
    says: str,
    sent: list[str],
    last_needing_it: int,
    points: list[int],
    audit_uri: str,
) -> None:
    """A fault before each of ``points`` in turn. Up to request ``last_needing_it`` the step must fail naming
    the service; after it the step needs the service no more and may finish, with a whole version. The
    faulted step and its re-run write the trail ``<audit_uri>/fault-<n>``: the checks read what they wrote."""
    outcomes: list[str] = []
    chosen = os.environ.get("FAULT_POINTS", "")  # by hand: FAULT_POINTS=all, or e.g. FAULT_POINTS=30,31
    if chosen:
        points = list(range(1, len(sent) + 1)) if chosen == "all" else [int(n) for n in chosen.split(",")]
    for n in points:
        model = f"faults-{kind}-{n}"
        with audit_trail(f"{audit_uri}/fault-{n}"):
            started = time.monotonic()
            error: RegistrationError | None = None
            try:
                with fault_before(server.uri, n, fault) as sent_now:
                    register(server, files, model)
            except RegistrationError as exc:
                error = exc
            finally:
                seconds = time.monotonic() - started  # from the step's start to its failure (or end)
                restore()
                restored = time.monotonic() - started - seconds
            assert sent_now[: n - 1] == sent[: n - 1], (
                f"the registration before fault {n} sent other requests"
            )
            if n <= last_needing_it:
                assert error is not None, f"{kind} before request {n} ({sent[n - 1]}): the step did not fail"
            if error is not None:
                assert says in str(error), f"{kind} before request {n} ({sent[n - 1]}): {error}"
            left = assert_registry_whole(server, model)
            whole = error is None or "is registered whole" in str(error)  # else: none created, or taken back
            assert len(left) == (1 if whole else 0), f"fault {n}: left {left} after {error}"
            again = register(server, files, model)
            assert assert_registry_whole(server, model) == [*left, again.version]
        said = "finished" if error is None else str(error).split("failed: ", 1)[1][:170]
        outcomes.append(
            f"  {n:2d} {sent[n - 1]:<58} {seconds:4.1f} s (back in {restored:4.1f} s), "
            f"{len(left)} whole version(s) left: {said}"
        )
    print(f"{kind}: {len(points)} fault points; after each every version whole and the re-run registered")
    print("\n".join(outcomes))


def first_of_each_kind(sent: list[str]) -> list[int]:
    """The first request of each kind (method and path), and the last request: a restart of the server
    costs seconds, so CI kills it once per kind (FAULT_POINTS=all kills it before every request)."""
    seen: set[str] = set()
    points = []
    for n, request in enumerate(sent, 1):
        kind = re.sub(r"/artifacts/[^/]+$", "/artifacts/<file>", request)
        if kind not in seen:
            seen.add(kind)
            points.append(n)
    return sorted({*points, len(sent)})


def s3_fault_points(sent: list[str], last_needing_it: int) -> list[int]:
    """Where S3 is cut: before the first request of each kind, and before every request from two before the
    version's creation (``last_needing_it``) to two after it. ``FAULT_POINTS=all`` cuts it before every one.

    A cut fails nothing until the next use of S3: a request the server's artifact proxy serves (the
    model's files, the profile and the signature written, listed and read back) or the client's audit
    records, which follow the version's creation with no request between them. A cut before a request
    that needs no S3 fails at the next one that does, and one before the second file written or read
    fails as one before the first did; so the first of each kind fail the step at every use of S3 it
    makes through the server. Around the creation the outcome changes from one request to the next:
    before it nothing is created; before the creation itself the version is created, its audit record
    cannot be written and it is taken back; after the records the step finishes with a whole version."""
    around = range(max(1, last_needing_it - 2), min(len(sent), last_needing_it + 2) + 1)
    return sorted({*first_of_each_kind(sent), *around})


def test_the_mlflow_server_killed_before_each_kind_of_request_leaves_no_partial_version(
    server: PrivateMlflow,
    model_files: tuple[Path, pd.DataFrame],
    client_env: None,
) -> None:
    server.restart_fast()  # it imports the server's app while the baseline registers
    audit_uri = "s3://mlflow/audit-faults-mlflow"
    sent = baseline_requests(server, model_files, "mlflow-killed", audit_uri)
    run_faults(
        server,
        model_files,
        "mlflow-killed",
        server.kill,
        server.start,
        f"the MLflow tracking server at {server.uri} did not answer",
        sent,
        last_needing_it=len(sent),  # the run's own end (runs/update) needs the server too
        points=first_of_each_kind(sent),
        audit_uri=audit_uri,
    )


def test_s3_stopped_before_each_kind_of_request_leaves_no_partial_version(
    server: PrivateMlflow,
    model_files: tuple[Path, pd.DataFrame],
    client_env: None,
    s3_relay: TcpRelay,
) -> None:
    audit_uri = "s3://mlflow/audit-faults-s3"
    sent = baseline_requests(server, model_files, "s3-stopped", audit_uri)
    # the audit records follow the version's creation; nothing after them touches S3
    last_needing_it = sent.index("POST /api/2.0/mlflow/model-versions/create") + 1
    run_faults(
        server,
        model_files,
        "s3-stopped",
        s3_relay.cut,
        s3_relay.restore,
        "S3",
        sent,
        last_needing_it=last_needing_it,
        points=s3_fault_points(sent, last_needing_it),
        audit_uri=audit_uri,
    )
