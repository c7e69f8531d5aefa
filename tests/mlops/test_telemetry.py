"""MLflow's telemetry is off in every process the platform starts, and a pipeline passes offline with it on.

MLflow 3.17's telemetry thread deletes ``_MLFLOW_TELEMETRY_SESSION_ID`` from ``os.environ`` when it cannot
fetch its configuration; a step iterating the environment then (``requests`` does, on every request to the
tracking server) failed with ``MlflowException … log-parameter failed with exception
'_MLFLOW_TELEMETRY_SESSION_ID'``. MLflow turns telemetry off itself under pytest and CI, so the regression
test starts ``mlops`` with those markers removed, no network (HTTPS goes to a proxy that never answers, as
a fetch on an offline machine times out) and a large environment (which widens the window in which a
request iterates it).
"""

import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from kfp import dsl

from cli.docker_runner import forwarded_environment
from cli.local_run import run_locally
from mlops.tracking.served import serve_store
from mlops.tracking.telemetry import ORT_TELEMETRY_ENV, TELEMETRY_ENV, telemetry_off
from mlops.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
MLFLOW_OFF_SWITCHES = (
    # What makes MLflow 3.17 decide on its own that telemetry is off (mlflow/telemetry/utils.py:
    # _is_ci_env_or_testing and is_telemetry_disabled); the regression test's processes carry none of them.
    "PYTEST_CURRENT_TEST", "GITHUB_ACTIONS", "CI", "CIRCLECI", "GITLAB_CI", "JENKINS_URL", "TRAVIS", "TF_BUILD",
    "BITBUCKET_BUILD_NUMBER", "CODEBUILD_BUILD_ARN", "BUILDKITE", "TEAMCITY_VERSION", "CLOUD_RUN_EXECUTION",
    "RUNBOT_HOST_URL", "RUNBOT_BUILD_NAME", "RUNBOT_WORKER_ID", "DO_NOT_TRACK", TELEMETRY_ENV,
)  # fmt: skip
PADDING = 20_000
"""Extra environment variables in the regression run: each request then spends milliseconds iterating the
environment, so a deletion by the telemetry thread meets one (2 of 3 processes failed so, without the fix)."""


def test_telemetry_off_replaces_a_false_and_keeps_the_rest() -> None:
    environ = {TELEMETRY_ENV: "false", "OTHER": "x"}
    telemetry_off(environ)
    assert environ == {TELEMETRY_ENV: "true", ORT_TELEMETRY_ENV: "1", "OTHER": "x"}


def test_the_mlops_command_turns_it_off_for_itself_and_every_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.main import main

    monkeypatch.setenv(TELEMETRY_ENV, "false")  # restored after the test
    assert main(["--workspace", str(tmp_path / "ws"), "runs"]) == 0
    assert os.environ[TELEMETRY_ENV] == "true"


def test_the_standalone_serve_command_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from cli.commands.serve import main

    monkeypatch.setenv(TELEMETRY_ENV, "false")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert os.environ[TELEMETRY_ENV] == "true"


def test_the_run_tracking_server_gets_it_whatever_the_run_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TELEMETRY_ENV, "false")
    with serve_store(f"sqlite:///{tmp_path}/mlflow.db", "", tmp_path / "server.log", environ={}) as server:
        raw = Path(f"/proc/{server.process.pid}/environ").read_bytes()
    environ = dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    assert environ[TELEMETRY_ENV.encode()] == b"true"


def test_docker_steps_get_it(tmp_path: Path) -> None:
    forwarded = forwarded_environment({TELEMETRY_ENV: "false", "MLOPS_X": "1"}, Workspace(tmp_path))
    assert forwarded[TELEMETRY_ENV] == "true" and forwarded["MLOPS_X"] == "1"
    assert forwarded_environment({}, Workspace(tmp_path))[TELEMETRY_ENV] == "true"


def test_the_platform_image_sets_it_for_every_pod() -> None:
    dockerfile = (ROOT / "infra" / "docker" / "Dockerfile").read_text()
    final_stage = dockerfile.rsplit("\nFROM ", 1)[-1]
    assert re.search(rf"^ENV .*\b{TELEMETRY_ENV}=true\b", final_stage, re.MULTILINE), final_stage[-400:]
    assert re.search(rf"^ENV .*\b{ORT_TELEMETRY_ENV}=1\b", final_stage, re.MULTILINE), final_stage[-400:]


@dsl.component(base_image="python:3.11")
def telemetry_setting() -> str:
    import os

    return os.environ.get("MLFLOW_DISABLE_TELEMETRY", "<unset>")


@dsl.pipeline(name="telemetry-setting")
def telemetry_pipeline() -> str:
    return telemetry_setting().output


def test_a_local_run_task_gets_it_even_without_the_mlops_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notebook calling run_locally directly: its kfp.local task processes have telemetry off too."""
    monkeypatch.setenv(TELEMETRY_ENV, "false")
    assert run_locally(telemetry_pipeline, {}, Workspace(tmp_path / "ws")).output == "true"


# --- the regression: a whole pipeline offline, telemetry on where MLflow would turn it on ---------------


class Unanswering:
    """A proxy that accepts connections and never answers (a fetch through it times out, as offline);
    counts who connected: every connection is a process that tried to reach MLflow's telemetry service."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.connections: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.socket.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.connections.append(connection)

    def targets(self) -> list[str]:
        """Where each connection asked to go: the ``host:port`` of its ``CONNECT`` line (``?`` when unread)."""
        out = []
        for connection in list(self.connections):
            connection.settimeout(2)
            try:
                first = connection.recv(4096).decode("latin-1").split()
            except OSError:
                first = []
            out.append(first[1] if len(first) > 1 and first[0] == "CONNECT" else "?")
        return out

    def close(self) -> None:
        self.socket.close()
        for connection in self.connections:
            connection.close()


@pytest.fixture
def no_network() -> Iterator[Unanswering]:
    proxy = Unanswering()
    yield proxy
    proxy.close()


def user_environment(proxy: Unanswering) -> dict[str, str]:
    """The environment of a user's shell on an offline machine: no CI or pytest markers, no telemetry
    switch, HTTPS through a proxy that never answers (plain HTTP to the run's own server stays direct)."""
    environ = {
        name: value
        for name, value in os.environ.items()
        if name not in MLFLOW_OFF_SWITCHES
        and not name.lower().endswith("_proxy")
        and name != "MLFLOW_TRACKING_URI"
    }
    environ.update({f"MLOPS_TEST_PADDING_{i}": "x" for i in range(PADDING)})
    environ.update(HTTPS_PROXY=proxy.url, https_proxy=proxy.url, PYTHONPATH=str(ROOT))
    return environ


def test_mlflow_would_have_telemetry_on_in_that_environment(tmp_path: Path, no_network: Unanswering) -> None:
    """The regression test's environment does defeat MLflow's own detection: without the platform's
    switch, ``import mlflow`` enables telemetry there and tries to fetch its configuration."""
    probe = (
        "import mlflow, time\n"
        "from mlflow.telemetry.utils import is_telemetry_disabled\n"
        "assert not is_telemetry_disabled(), 'MLflow turned telemetry off by itself'\n"
        "client = mlflow.MlflowClient('sqlite:///' + __import__('sys').argv[1])\n"
        "client.create_experiment('probe')\n"  # a recorded call starts the configuration fetch
        "time.sleep(2)\n"
    )
    environ = user_environment(no_network)
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "probe.db")],
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert no_network.connections, "MLflow never tried to fetch its telemetry configuration"
    from mlflow.telemetry.constant import CONFIG_URL

    assert any(t.startswith(urlsplit(CONFIG_URL).hostname or "?") for t in no_network.targets())


@pytest.mark.slow
def test_a_pipeline_run_passes_offline_with_telemetry_enabled_in_the_users_environment(
    tmp_path: Path, no_network: Unanswering
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "--workspace", str(tmp_path / "ws"), "run", "training",
         "--set", "data.sample.rows=1500", "--set", "train.epochs=1", "--set", "train.model.hidden_units=8"],
        cwd=tmp_path, env=user_environment(no_network), capture_output=True, text=True, timeout=1500, check=False,
    )  # fmt: skip
    said = done.stdout[-4000:] + done.stderr[-3000:]
    logs = "".join(path.read_text(errors="replace") for path in (tmp_path / "ws").rglob("logs/*.log"))
    assert "_MLFLOW_TELEMETRY_SESSION_ID" not in said + logs, said
    assert done.returncode == 0, said
    from mlflow.telemetry.constant import CONFIG_URL

    telemetry_host = urlsplit(CONFIG_URL).hostname or ""
    targets = no_network.targets()
    print(f"HTTPS connections the run tried (CONNECT targets): {targets}")
    to_telemetry = [t for t in targets if t.split(":")[0].endswith(telemetry_host.split(".", 1)[1])]
    assert to_telemetry == [], (
        f"{len(to_telemetry)} process(es) of the run tried to reach MLflow's telemetry service "
        f"(every HTTPS connection made: {targets})"
    )
    # Nothing else phones home either (ONNX Runtime's usage events did, to Microsoft, before its switch was set).
    assert targets == [], f"the offline run tried HTTPS connections: {targets}"
