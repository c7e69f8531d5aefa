"""The workspace's store served once per local run, and the light REST client trivial tasks record with.

Against MLflow's real server app on a SQLite store (the one :func:`serve_store` starts for ``mlops run``):
what the gate, combine and promote code records over REST reads back through ``MlflowClient`` the same as
what it records with the store opened directly; a task doing it never imports MLflow; a server that is
gone is named in the error.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.promotion_gate.combine import combine, record_overall
from components.promotion_gate.promotion import Decision, promote, record
from mlops.governance.audit import read_events
from mlops.tracking.rest_client import MlflowRestClient, TrackingServerError
from mlops.tracking.served import (
    HEALTH_POLL_S,
    SERVED_AT_ENV,
    ServedAt,
    ServedStore,
    mlflow_schema_head,
    schema_ready,
    serve_store,
    served_at,
    wait_until_answering,
)
from mlops.tracking.store import TrackingError, TrackingStore

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("direct-model", "served-model")
"""One registered model per path: the same records on each, compared name for name."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TrackingStore, ServedStore]]:
    """A workspace-like store with version 1 of each model, served for the module; its direct store."""
    tmp = tmp_path_factory.mktemp("served")
    direct = TrackingStore(
        f"sqlite:///{tmp}/mlflow.db", "training", "direct-run", (tmp / "artifacts").as_uri()
    )
    direct.ensure_experiment()
    for name in MODELS:
        _register(direct, name)
    environ: dict[str, str] = {}
    with serve_store(
        direct.tracking_uri, direct.artifact_root, tmp / "server.log", environ=environ
    ) as server:
        server.wait_until_healthy()
        yield direct, server
    assert server.process.poll() is not None, "the server outlived its block"
    assert SERVED_AT_ENV not in environ, "the variable outlived its block"


def _register(store: TrackingStore, name: str) -> None:
    store._client.create_registered_model(name)
    store._client.create_model_version(name, "file:///dev/null")


def _served_store(direct: TrackingStore, server: ServedStore) -> TrackingStore:
    environ = {SERVED_AT_ENV: json.dumps({direct.tracking_uri: {"url": server.url, "log": str(server.log)}})}
    return TrackingStore.for_task(direct.settings(), "served-run", environ=environ)


def _runs(direct: TrackingStore, model: str) -> dict[str, dict[str, Any]]:
    """The model's task runs by name: tags (model and run ids normalised), status, artifacts."""
    client = direct._client
    experiment = direct.ensure_experiment().experiment_id
    runs = {}
    for run in client.search_runs([experiment], "tags.`mlops.model_version` = '1'"):
        tags = dict(run.data.tags)
        if tags.get("mlops.pipeline_run_id") != ("direct-run" if model == MODELS[0] else "served-run"):
            continue
        tags.pop("mlops.pipeline_run_id")
        tags.pop("mlflow.source.name")  # the running program: pytest here, kfp's executor in a task
        runs[tags["mlflow.runName"]] = {
            "tags": tags,
            "status": run.info.status,
            "ended": run.info.end_time is not None and run.info.end_time >= run.info.start_time,
            "artifacts": [a.path for a in client.list_artifacts(run.info.run_id, "gate")],
        }
    return runs


def _record_everything(store: TrackingStore, model: str, tmp: Path) -> None:
    metrics = Decision(
        "metrics", "promote", "test_auc 0.9 >= floor", {"test_auc": 0.9, "champion_auc": float("nan")}
    )
    record(metrics, model, "1", store, tmp / model / "report.json")
    record_overall(combine([metrics]), model, "1", store)
    assert promote(model, "1", store) is None


def test_what_the_light_client_records_reads_back_as_what_mlflow_records(
    served: tuple[TrackingStore, ServedStore], tmp_path: Path
) -> None:
    direct, server = served
    light = _served_store(direct, server)
    assert light.rest is not None and direct.rest is None
    _record_everything(direct, MODELS[0], tmp_path)
    _record_everything(light, MODELS[1], tmp_path)

    assert _runs(direct, MODELS[0]) == _runs(direct, MODELS[1])
    assert set(_runs(direct, MODELS[1])) == {"gate_metrics", "gate_overall"}
    assert _runs(direct, MODELS[1])["gate_metrics"]["artifacts"] == ["gate/report.json"]
    tags = [dict(direct.model_version(model, "1").tags) for model in MODELS]
    stamps = [t.pop("mlops.promoted_at") for t in tags]
    assert tags[0] == tags[1] and all(stamps)
    assert [direct.registered_model(model).aliases for model in MODELS] == [
        {"challenger": 1, "champion": 1}
    ] * 2
    events = {
        model: [e for e in read_events(tracking_uri=direct.tracking_uri) if e.subject == f"{model}/1"]
        for model in MODELS
    }

    def comparable(model: str) -> list[tuple[str, str, list[str]]]:
        return [(e.action, json.dumps(e.details, sort_keys=True), sorted(e.links)) for e in events[model]]

    assert comparable(MODELS[0]) == comparable(MODELS[1])
    assert [e.action for e in events[MODELS[1]]] == [
        "gate.decided",
        "gate.decided",
        "alias.moved",
        "alias.moved",
    ]
    runs_by_id = {
        r.info.run_id for r in direct._client.search_runs([direct.ensure_experiment().experiment_id])
    }
    assert all(e.links["mlflow_run_id"] in runs_by_id for e in events[MODELS[1]][:3])
    assert all(e.links["pipeline_run_id"] == "served-run" for e in events[MODELS[1]])


def test_a_gate_task_records_over_rest_without_importing_mlflow(
    served: tuple[TrackingStore, ServedStore],
) -> None:
    direct, server = served
    _register(direct, "task-model")
    code = """
import json, sys, tempfile
from pathlib import Path
import kfp.dsl.executor_main
from components.promotion_gate.combine import combine, record_overall
from components.promotion_gate.promotion import Decision, promote, record
from mlops.tracking.store import TrackingStore
store = TrackingStore.for_task(json.loads(sys.argv[1]), "task-run")
decision = Decision("metrics", "promote", "fine", {"test_auc": 0.9})
record(decision, "task-model", "1", store, Path(tempfile.mkdtemp()) / "report.json")
record_overall(combine([decision]), "task-model", "1", store)
promote("task-model", "1", store)
heavy = [name for name in ("mlflow", "sqlalchemy", "alembic", "pandas") if name in sys.modules]
print(json.dumps(heavy))
"""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "_KFP_RUNTIME": "true",
        SERVED_AT_ENV: json.dumps({direct.tracking_uri: {"url": server.url, "log": str(server.log)}}),
    }
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(direct.settings())],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
    version = direct.model_version("task-model", "1")
    assert (
        version.tags["mlops.gate.metrics.decision"] == "promote"
        and version.tags["mlops.decision"] == "promote"
    )
    assert direct.registered_model("task-model").aliases == {"challenger": 1, "champion": 1}
    actions = [e.action for e in read_events(tracking_uri=direct.tracking_uri) if e.subject == "task-model/1"]
    assert actions == ["gate.decided", "gate.decided", "alias.moved", "alias.moved"]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_server_that_is_gone_is_named_with_its_log_and_the_fix() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/mlops-gone"
    client = MlflowRestClient(url, wait_s=0.3, log_hint="/ws/pipelines/.mlflow-server-1.log")
    with pytest.raises(TrackingServerError) as caught:
        client.create_run("0", "gate_metrics", {})
    message = str(caught.value)
    assert url in message and "after waiting 0 s" in message
    assert "/ws/pipelines/.mlflow-server-1.log" in message and SERVED_AT_ENV in message


def test_another_server_on_the_port_is_refused_not_written_to(
    served: tuple[TrackingStore, ServedStore],
) -> None:
    _, server = served
    elsewhere = server.url.rsplit("/", 1)[0] + "/mlops-not-this-run"
    with pytest.raises(TrackingServerError, match="not the MLflow server this store is served by"):
        MlflowRestClient(elsewhere).experiment_by_name("training")


def test_mlflow_errors_keep_their_code(served: tuple[TrackingStore, ServedStore]) -> None:
    _, server = served
    client = MlflowRestClient(server.url)
    assert client.experiment_by_name("no-such-experiment") is None
    assert client.alias_version("no-such-model", "champion") is None
    with pytest.raises(TrackingServerError) as caught:
        client.set_model_version_tag("no-such-model", "1", "k", "v")
    assert caught.value.error_code == "RESOURCE_DOES_NOT_EXIST" and server.url in str(caught.value)


def test_a_served_stores_model_tags_and_alias_removal_go_over_rest(
    served: tuple[TrackingStore, ServedStore],
) -> None:
    direct, server = served
    light = _served_store(direct, server)
    _register(direct, "rest-writes")
    assert light.point_alias("rest-writes", "challenger", "1") is None
    light.tag_model("rest-writes", {"mlops.last_retrain_at": "now"})
    light.delete_alias("rest-writes", "challenger")
    assert "_client" not in light.__dict__  # no MLflow client was built: every write went over REST
    model = direct.registered_model("rest-writes")
    assert model.tags == {"mlops.last_retrain_at": "now"} and model.aliases == {}


def test_for_task_finds_where_its_store_is_served_and_keeps_the_arguments() -> None:
    settings = {"tracking_uri": "sqlite:////ws/mlflow.db", "experiment": "training", "artifact_root": ""}
    environ = {
        SERVED_AT_ENV: json.dumps({"sqlite:////ws/./mlflow.db": {"url": "http://127.0.0.1:1/p", "log": "l"}})
    }
    store = TrackingStore.for_task(settings, "run", environ=environ)
    assert (store.served_url, store.served_log) == ("http://127.0.0.1:1/p", "l")
    assert store.settings() == settings  # the task arguments (and a --cache key) never carry the port
    other = TrackingStore.for_task(
        {**settings, "tracking_uri": "sqlite:////elsewhere/mlflow.db"}, "run", environ=environ
    )
    assert other.served_url == "" and other.rest is None
    with pytest.raises(TrackingError, match=SERVED_AT_ENV):
        served_at("sqlite:////ws/mlflow.db", {SERVED_AT_ENV: "http://127.0.0.1:1"})


def test_serve_store_refuses_what_it_cannot_serve(tmp_path: Path) -> None:
    with (
        pytest.raises(TrackingError, match="serves a workspace's sqlite"),
        serve_store("http://mlflow:5000", "", tmp_path / "log", environ={}),
    ):
        pass


def test_an_interrupted_run_stops_its_server_and_unsets_the_variable(tmp_path: Path) -> None:
    environ = {"OTHER": "kept"}
    with (
        pytest.raises(KeyboardInterrupt),
        serve_store(
            f"sqlite:///{tmp_path}/mlflow.db", "", tmp_path / "server.log", environ=environ
        ) as server,
    ):
        assert served_at(f"sqlite:///{tmp_path}/mlflow.db", environ) == ServedAt(
            server.url, str(tmp_path / "server.log")
        )
        raise KeyboardInterrupt  # Ctrl-C while the pipeline runs
    assert server.process.poll() is not None, "the server outlived an interrupted run"
    assert environ == {"OTHER": "kept"}


def test_a_fresh_store_is_ready_once_the_server_has_created_its_tables(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    with serve_store(uri, "", tmp_path / "server.log", environ={}) as server:
        assert not schema_ready(tmp_path / "mlflow.db", mlflow_schema_head())
        server.wait_until_schema_ready()
        assert schema_ready(tmp_path / "mlflow.db", mlflow_schema_head())
        # what a step that opens the file itself then finds: the tables, at MLflow's own schema
        assert [e.name for e in TrackingStore(uri)._client.search_experiments()] == ["Default"]


def test_a_recording_run_that_raises_ends_failed_over_rest(served: tuple[TrackingStore, ServedStore]) -> None:
    direct, server = served
    light = _served_store(direct, server)
    with pytest.raises(RuntimeError, match="gate crashed"), light.recording_run("gate_crashing") as run:
        raise RuntimeError("gate crashed")
    assert direct.get_run(run.run_id).info.status == "FAILED"


def test_the_server_is_mlflows_web_app_alone_in_one_process(
    served: tuple[TrackingStore, ServedStore],
) -> None:
    """No job runners, and no second process that imports MLflow again to serve what the first imported."""
    _, server = served
    group, children = [], []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
        if entry.name.isdigit() and int(fields[2]) == server.process.pid:  # its session: the server's group
            group.append(command)
        if entry.name.isdigit() and int(fields[1]) == server.process.pid:
            children.append(command)
    assert len(group) == 1 and "mlops.tracking.mlflow_app" in group[0], group
    assert not children, children


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL"])
def test_a_run_process_killed_takes_its_server_with_it(tmp_path: Path, signal_name: str) -> None:
    """No ``finally`` runs in a killed process: the watchdog stops the server when the run process dies."""
    import signal
    import time

    script = f"""
import sys, time
from pathlib import Path
from mlops.tracking.served import serve_store
with serve_store("sqlite:///{tmp_path}/mlflow.db", "", Path("{tmp_path}/server.log"), environ={{}}) as server:
    print(server.process.pid, flush=True)
    time.sleep(600)
"""
    run = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parents[2]
    )
    assert run.stdout is not None
    server_pid = int(run.stdout.readline())
    os.kill(server_pid, 0)  # the server is up
    os.kill(run.pid, getattr(signal, signal_name))
    run.wait(30)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.killpg(server_pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(server_pid, signal.SIGKILL)
    pytest.fail(f"the MLflow server (group {server_pid}) outlived its run process killed by {signal_name}")


def test_mlflow_is_pointed_at_the_served_store_and_only_at_its_own() -> None:
    """Heavy tasks keep MlflowClient, but talk to the run's server instead of opening the SQLite file."""
    db = "sqlite:////w/.mlops/mlflow.db"
    assert TrackingStore(db).mlflow_uris == (db, db)
    served = TrackingStore(db, served_url="http://127.0.0.1:5/mlops-x")
    assert served.mlflow_uris == ("http://127.0.0.1:5/mlops-x", "http://127.0.0.1:5/mlops-x")
    with HealthServer(delay_s=0.0) as server:
        answering = TrackingStore(db, served_url=server.url)
        assert answering._client.tracking_uri == server.url
    assert served.settings()["tracking_uri"] == db  # what tasks are handed never changes
    other_registry = TrackingStore(
        db, registry_uri="sqlite:////r.db", served_url="http://127.0.0.1:5/mlops-x"
    )
    assert other_registry.mlflow_uris == ("http://127.0.0.1:5/mlops-x", "sqlite:////r.db")


# --- a task waits for the run's server by asking /health, not with MLflow's retry back-off ---------------


class HealthServer:
    """A stand-in for a starting ``mlflow server``: listens only after ``delay_s`` and then answers ``/health``
    (under the prefix) with 200; records when each health request came."""

    def __init__(self, delay_s: float, prefix: str = "/mlops-test") -> None:
        self.delay_s = delay_s
        self.prefix = prefix
        self.port = _closed_port()
        self.asked: list[float] = []
        self.listening = float("inf")
        self._server: Any = None
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    def _serve(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        asked, health = self.asked, f"{self.prefix}/health"

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                asked.append(time.monotonic())
                self.send_response(200 if self.path == health else 404)
                self.end_headers()
                self.wfile.write(b"OK")

            def log_message(self, *args: Any) -> None:
                pass

        time.sleep(self.delay_s)
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.listening = time.monotonic()
        self._server.serve_forever(poll_interval=0.05)

    def __enter__(self) -> HealthServer:
        self.started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join(self.delay_s + 5)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def test_a_task_starts_within_a_poll_of_its_server_answering() -> None:
    """MLflow's client meets a server that is still starting with sleeps of 4, 8, 16 s; a task that asks
    /health itself goes on within HEALTH_POLL_S of the server answering."""
    with HealthServer(delay_s=1.5) as server:
        wait_until_answering(server.url, "server.log", timeout_s=30)
        waited = time.monotonic() - server.started
        first_answer = server.asked[0] - server.listening
    assert waited >= 1.5 and 0 <= first_answer < HEALTH_POLL_S + 0.5, (waited, first_answer)


def test_the_store_waits_for_its_server_before_mlflow_sees_it() -> None:
    with HealthServer(delay_s=1.0) as server:
        store = TrackingStore("sqlite:////w/.mlops/mlflow.db", served_url=server.url, served_log="s.log")
        assert store._client.tracking_uri == server.url
        waited = time.monotonic() - server.started
        assert server.asked and waited >= 1.0
    assert TrackingStore("sqlite:////w/.mlops/mlflow.db")._client  # a store not served asks nobody


def test_a_server_that_never_answers_is_named_with_its_log() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/mlops-never"
    started = time.monotonic()
    with pytest.raises(TrackingError) as caught:
        wait_until_answering(url, "/ws/.mlflow-server-1.log", timeout_s=0.5)
    assert time.monotonic() - started < 0.5 + HEALTH_POLL_S + 2.5  # one last request may take its 2 s
    assert f"{url}/health within 0 s" in str(caught.value) and "/ws/.mlflow-server-1.log" in str(caught.value)
    with pytest.raises(TrackingError, match="exited with code 1; see s.log"):
        wait_until_answering(url, "s.log", timeout_s=30, gone=lambda: "the server exited with code 1")
