"""What a failed registration says and does, at each branch (the real services are killed and stopped in
tests/components/register/test_registration_faults.py; here the registry is a recorder of deletions)."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
import requests
from botocore.exceptions import EndpointConnectionError

from mlops.tracking.registration_faults import RegistrationProgress, registration_failure


@dataclass
class Registry:
    tracking_uri: str
    pipeline_run_id: str = ""
    deleted: list[tuple[str, str]] = field(default_factory=list)
    refuse_delete: bool = False

    def delete_version(self, name: str, version: str) -> None:
        if self.refuse_delete:
            raise ConnectionError("registry gone too")
        self.deleted.append((name, version))


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def healthy_server() -> Any:
    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def failure(exc: BaseException, store: Registry, created: str = "", recorded: bool = False) -> str | None:
    result = registration_failure(exc, store, RegistrationProgress("credit", created, recorded))  # type: ignore[arg-type]
    return None if result is None else str(result)


def test_bad_input_with_nothing_created_is_raised_as_it_is(tmp_path: Any) -> None:
    assert failure(ValueError("label column missing"), Registry(f"sqlite:///{tmp_path}/m.db")) is None
    assert failure(ValueError("x"), Registry(f"http://127.0.0.1:{closed_port()}")) is not None  # server down


def test_s3_is_named_when_boto_failed_and_nothing_was_registered(tmp_path: Any) -> None:
    exc = RuntimeError("cannot write the audit record")
    exc.__cause__ = EndpointConnectionError(endpoint_url="http://s3:9000/audit/x")
    said = failure(exc, Registry(f"sqlite:///{tmp_path}/m.db"))
    assert said is not None
    assert said.startswith(
        "registering 'credit' failed: the S3 store (audit trail or artifacts) did not answer: "
    )
    assert (
        "No version of 'credit' was registered. Bring the service back and re-run this step; nothing needs"
        in said
    )


def test_a_tracking_server_that_does_not_answer_is_named() -> None:
    uri = f"http://127.0.0.1:{closed_port()}"
    said = failure(requests.ConnectionError("refused"), Registry(uri))
    assert said is not None and f"the MLflow tracking server at {uri} did not answer: refused" in said


def test_a_server_that_answers_but_lost_its_artifact_store(healthy_server: str) -> None:
    exc = RuntimeError(
        f"API request to {healthy_server}/api/2.0/mlflow-artifacts/artifacts/1/x failed with error code 500"
    )
    said = failure(exc, Registry(healthy_server))
    assert said is not None and "answers but could not use its artifact store (S3 behind it)" in said
    assert (
        failure(RuntimeError("some other 500"), Registry(healthy_server)) is None
    )  # answers: not a service fault


def test_a_version_created_but_not_recorded_is_deleted_again(tmp_path: Any) -> None:
    store = Registry(f"sqlite:///{tmp_path}/m.db")
    said = failure(EndpointConnectionError(endpoint_url="http://s3"), store, created="7")
    assert store.deleted == [("credit", "7")]
    assert (
        said is not None
        and "credit version 7 was created, could not be recorded in the audit trail, and was deleted again."
        in said
    )
    assert said.endswith("nothing needs cleaning up by hand.")
    from mlops.governance import audit

    (event,) = audit.read_events(tracking_uri=store.tracking_uri)
    assert event.action == "model.registration_withdrawn" and event.links == {}  # no pipeline run: no link


def test_when_the_delete_fails_too_the_user_is_told_which_version_to_delete(tmp_path: Any) -> None:
    store = Registry(f"sqlite:///{tmp_path}/m.db", refuse_delete=True)
    said = failure(EndpointConnectionError(endpoint_url="http://s3"), store, created="7")
    assert store.deleted == []
    assert said is not None and "deleting it failed too (registry gone too)" in said
    assert "MlflowClient().delete_model_version('credit', '7')" in said and said.endswith(
        "delete that version first."
    )


def test_a_recorded_version_stays_whatever_fails_after(tmp_path: Any) -> None:
    store = Registry(f"sqlite:///{tmp_path}/m.db")
    said = failure(ValueError("log_params broke"), store, created="7", recorded=True)
    assert store.deleted == []
    assert said is not None and "credit version 7 is registered whole" in said
    assert said.endswith("Fix the cause; nothing needs cleaning up by hand.")


def test_a_version_taken_back_is_recorded_as_withdrawn_in_the_audit_trail(tmp_path: Any) -> None:
    from mlops.governance import audit

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    store = Registry(uri, pipeline_run_id="run-9")
    failure(RuntimeError("the audit head could not be written\nsecond line"), store, created="7")
    (event,) = [e for e in audit.read_events(tracking_uri=uri) if e.action == "model.registration_withdrawn"]
    assert event.subject == "credit/7"
    assert event.details == {"reason": "the audit head could not be written"}
    assert event.links == {"pipeline_run_id": "run-9"}
    assert audit.verify(tracking_uri=uri).intact


def test_the_whole_messages(tmp_path: Any) -> None:
    store = Registry(f"sqlite:///{tmp_path}/m.db")
    assert failure(ValueError(""), store, created="3", recorded=True) == (
        "registering 'credit' failed: ValueError: ValueError. credit version 3 is registered whole (files, digest, "
        "signature, audit record); only the run's own bookkeeping failed, and no gate has judged the version, so no "
        "alias will reach it. Fix the cause; nothing needs cleaning up by hand."
    )
    said = failure(RuntimeError("x" * 400), store, created="4", recorded=True)
    assert said is not None and "x" * 300 + ". credit version 4" in said and "x" * 301 not in said


@pytest.mark.parametrize("module", ["boto3.exceptions", "s3transfer.exceptions", "botocore.exceptions"])
def test_each_s3_library_counts_as_s3(tmp_path: Any, module: str) -> None:
    error = type("Failure", (Exception,), {"__module__": module})("gone")
    said = failure(error, Registry(f"sqlite:///{tmp_path}/m.db"))
    assert said is not None and "the S3 store (audit trail or artifacts) did not answer: gone" in said


def test_an_https_server_that_does_not_answer_is_named() -> None:
    uri = f"https://127.0.0.1:{closed_port()}/"
    said = failure(requests.ConnectionError("refused"), Registry(uri))
    assert said is not None and "the MLflow tracking server at https://127.0.0.1:" in said


def test_a_server_with_a_trailing_slash_is_asked_at_its_health_path(healthy_server: str) -> None:
    exc = RuntimeError("API request to …/api/2.0/mlflow-artifacts/artifacts/x failed with error code 500")
    said = failure(exc, Registry(healthy_server + "/"))
    assert said is not None and "answers but could not use its artifact store" in said
