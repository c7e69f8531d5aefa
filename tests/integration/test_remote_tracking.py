"""The platform against a real remote MLflow: ``mlflow server`` on PostgreSQL, artifacts in Ceph RGW (S3).

Every command runs as a subprocess with the environment a user's shell would have
(``MLFLOW_TRACKING_URI`` or ``--set tracking.tracking_uri=…``, S3 endpoint and keys), and the
results are checked where they must land: the server's registry, objects in the
bucket, and no ``mlflow.db`` in the workspace (the old failure: everything silently
went to local SQLite).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from mlops.data.sample_data import SampleDataConfig, generate
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import ONNX_FILE
from tests.services.plugin import MlflowService
from tests.support.serving import direct, free_port, stop, train_onnx, v2_body

pytestmark = pytest.mark.slow


def user_env(server: MlflowService, **extra: str) -> dict[str, str]:
    """A shell with S3 endpoint and keys but no stray MLflow/AWS settings from this test process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "AWS_", "MLOPS_"))}
    bin_dir = str(Path(sys.executable).parent)  # kfp.local tasks run `python3`: the venv must be first
    return {
        **env,
        **server.s3.env,
        "PATH": f"{bin_dir}:{env.get('PATH', '')}",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def mlops(
    args: list[str], cwd: Path, env: dict[str, str], timeout_s: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def registry_client(server: MlflowService) -> Any:
    return TrackingStore.from_uri(server.tracking_uri)._client


def assert_version_in_bucket(server: MlflowService, model: str, version: str) -> list[str]:
    """The version is in the server's registry and its ONNX file is an object in the RGW bucket."""
    found = registry_client(server).get_model_version(model, version)
    keys = server.s3.keys()
    onnx = [key for key in keys if key.endswith(f"/{ONNX_FILE}")]
    assert onnx, f"no {ONNX_FILE} object in bucket {server.s3.bucket}: {keys[:20]}"
    assert found.source, "the registered version has no source"
    return onnx


def assert_no_local_store(workspace: Path) -> None:
    local = sorted(str(p) for p in workspace.rglob("*.db")) if workspace.exists() else []
    assert not local, f"a remote run wrote local tracking/study databases: {local}"


# --- serve -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    frame = generate(SampleDataConfig(rows=800, seed=5))
    return train_onnx(tmp_path_factory.mktemp("onnx"), frame, seed=0)


def register_remote(
    server: MlflowService, onnx: Path, model: str, experiment: str, artifact_root: str = ""
) -> str:
    """Register ``onnx`` on the server the way components.register does; alias champion."""
    from components.register.version_registration import register_onnx_model
    from mlops.vocabulary import Lineage

    saved = {k: os.environ.get(k) for k in server.s3.env}
    os.environ.update(server.s3.env)  # an s3:// artifact_root is written by this process directly
    try:
        store = TrackingStore(server.tracking_uri, experiment, "remote-tests", artifact_root)
        frame = generate(SampleDataConfig(rows=50, seed=9))
        version = register_onnx_model(
            onnx, frame, model, Lineage("remote", "", "d", "1", "0", "r"), store
        ).version
        store.point_alias(model, "champion", version)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return version


@contextmanager
def serving(
    workspace: Path, flags: list[str], cwd: Path, env: dict[str, str], timeout_s: float = 120
) -> Iterator[tuple[str, Path]]:
    """``mlops --workspace W serve FLAGS`` until /v2/health/ready answers; SIGTERM (clean exit) afterwards."""
    port = free_port()
    log_path = cwd / f"serve-{port}.log"
    cwd.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cli.main",
                "--workspace",
                str(workspace),
                "serve",
                "--port",
                str(port),
                *flags,
            ],
            cwd=cwd,
            env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                pytest.fail(f"mlops serve exited with {process.returncode}:\n{log_path.read_text()}")
            try:
                if httpx.get(f"{url}/v2/health/ready", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"mlops serve not ready after {timeout_s} s:\n{log_path.read_text()}")
            time.sleep(0.2)
        yield url, log_path
    finally:
        # uvicorn re-raises SIGTERM after a graceful shutdown, so -15 is a clean exit too.
        assert stop(process) in (0, -15), log_path.read_text()


def test_serve_follows_mlflow_tracking_uri_and_logs_requests_to_s3(
    mlflow_server: MlflowService, onnx_dir: Path, tmp_path: Path
) -> None:
    model = "remote-serve"
    version = register_remote(mlflow_server, onnx_dir, model, "remote-serve")
    assert_version_in_bucket(mlflow_server, model, version)
    workspace = tmp_path / "ws"
    env = user_env(mlflow_server, MLFLOW_TRACKING_URI=mlflow_server.tracking_uri)
    log_uri = f"s3://{mlflow_server.s3.bucket}/request-logs"
    flags = ["--model-name", model, "--request-log-uri", log_uri, "--request-log-flush-s", "0.5"]
    from mlops.model.onnx_model import OnnxScorer

    encoded = OnnxScorer.load(onnx_dir / ONNX_FILE).spec.encode(generate(SampleDataConfig(rows=3, seed=2)))
    with serving(workspace, flags, tmp_path, env) as (url, log_path):
        response = httpx.post(f"{url}/v2/models/{model}/infer", json=v2_body(encoded), timeout=10)
        assert response.status_code == 200, response.text
        scores = np.array(response.json()["outputs"][0]["data"], dtype=np.float32)
        np.testing.assert_allclose(scores, direct(onnx_dir, encoded), rtol=1e-5, atol=1e-6)
        assert f"{mlflow_server.tracking_uri} (from MLFLOW_TRACKING_URI)" in log_path.read_text()
    logged = mlflow_server.s3.keys(f"request-logs/{model}/")  # flushed on SIGTERM at the latest
    assert logged and all(key.endswith(".parquet") for key in logged), logged
    assert not (workspace / "mlflow.db").exists()
    assert_no_local_store(workspace)


def no_credentials_env(server: MlflowService, tmp_path: Path) -> dict[str, str]:
    """The S3 endpoint but no keys anywhere boto3 looks (env, files, instance metadata)."""
    env = {
        k: v for k, v in user_env(server).items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    }
    missing = str(tmp_path / "no-such-file")
    return {
        **env,
        "AWS_SHARED_CREDENTIALS_FILE": missing,
        "AWS_CONFIG_FILE": missing,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def assert_clean_config_error(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    """Exit code 2, at most two lines on stderr, no traceback, and the expected words."""
    lines = [line for line in result.stderr.splitlines() if line.strip() and "Warning" not in line]
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert 1 <= len(lines) <= 2, lines
    for text in expected:
        assert text in result.stderr, result.stderr


def test_serve_without_s3_credentials_says_which_variables(
    mlflow_server: MlflowService, onnx_dir: Path, tmp_path: Path
) -> None:
    # Artifacts written straight to S3 (a cluster's artifact_root), so the server process needs keys.
    model = "remote-direct-s3"
    register_remote(mlflow_server, onnx_dir, model, "remote-direct", f"s3://{mlflow_server.s3.bucket}/direct")
    assert any(key.startswith("direct/remote-direct/") for key in mlflow_server.s3.keys("direct/"))
    env = no_credentials_env(mlflow_server, tmp_path)
    args = ["--workspace", str(tmp_path / "ws"), "serve", "--tracking-uri", mlflow_server.tracking_uri]
    result = mlops([*args, "--model-name", model, "--no-request-log"], tmp_path, env, timeout_s=120)
    assert_clean_config_error(result, "no S3 credentials", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    assert not (tmp_path / "ws" / "mlflow.db").exists()


def test_serve_with_wrong_s3_keys_for_the_request_log_fails_before_serving(
    mlflow_server: MlflowService, tmp_path: Path
) -> None:
    env = {**user_env(mlflow_server), "AWS_SECRET_ACCESS_KEY": "wrong"}
    args = ["--workspace", str(tmp_path / "ws"), "serve", "--tracking-uri", mlflow_server.tracking_uri]
    args += ["--model-name", "credit-default"]  # the session's server holds several models
    log_uri = f"s3://{mlflow_server.s3.bucket}/request-logs"
    result = mlops([*args, "--request-log-uri", log_uri], tmp_path, env, timeout_s=120)
    assert_clean_config_error(result, f"cannot access {log_uri}", "S3 refused the credentials")


@pytest.mark.parametrize("named", [[], ["--model-name", "credit-default"]], ids=["chosen", "named"])
def test_serve_against_an_unreachable_server_exits_2_fast(tmp_path: Path, named: list[str]) -> None:
    """Checked once either way: by the model choice without a name, by the serve command with one."""
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}}
    env["MLFLOW_TRACKING_URI"] = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    result = mlops(["--workspace", str(tmp_path / "ws"), "serve", *named], tmp_path, env, timeout_s=120)
    assert_clean_config_error(result, f"127.0.0.1:{port} is unreachable", "MLFLOW_TRACKING_URI")
    assert time.monotonic() - started < 30  # not MLflow's minutes of retries
    assert not (tmp_path / "ws").exists()


# --- run and tune (wired by `mlops run` / `mlops tune` through mlops.tracking.context.resolve_tracking) -----

TRAINING = ["--set", "data.sample.rows=1500", "--set", "train.epochs=2"]
SOURCES = {"MLFLOW_TRACKING_URI": "from MLFLOW_TRACKING_URI", "--set tracking.tracking_uri": "set explicitly"}
"""How a test gives the command the server's URI, and how the run's header names that source."""


def check_remote_run(
    server: MlflowService, result: subprocess.CompletedProcess[str], workspace: Path, how: str
) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert f"tracking URI      {server.tracking_uri} ({SOURCES[how]})" in result.stdout, result.stdout[-2000:]
    assert_no_local_store(workspace)


def test_run_training_against_the_remote_server(mlflow_server: MlflowService, tmp_path: Path) -> None:
    """The whole training pipeline, with the URI given only by ``--set``: no step has an
    ``MLFLOW_TRACKING_URI`` to fall back on, so every run, the version and its files reach the server
    through the pipeline's own parameters. ``MLFLOW_TRACKING_URI`` resolves to the same parameters (one
    ``resolve_tracking`` for ``run`` and ``tune``, its order tested in tests/mlops/test_tracking.py);
    the tune test below runs it end to end, so a second training run would prove nothing more."""
    model = "remote-training"
    workspace = tmp_path / "ws"
    args = ["--workspace", str(workspace), "run", "training", *TRAINING]
    args += ["--set", f"registration.model_name={model}"]
    args += ["--set", f"tracking.tracking_uri={mlflow_server.tracking_uri}"]
    result = mlops(args, tmp_path, user_env(mlflow_server))
    check_remote_run(mlflow_server, result, workspace, "--set tracking.tracking_uri")
    versions = registry_client(mlflow_server).search_model_versions(f"name = '{model}'")
    assert [v.version for v in versions] == ["1"]
    assert f"{model} version 1" in result.stdout
    assert_version_in_bucket(mlflow_server, model, "1")


@pytest.mark.parametrize("how", list(SOURCES))
def test_tune_against_the_remote_server_with_a_postgres_study(
    mlflow_server: MlflowService, tmp_path: Path, how: str
) -> None:
    """Both sources, end to end: ``MLFLOW_TRACKING_URI`` alone reaches the server through ``mlops run``
    (``tune`` is ``run tuning``); with ``--set`` the tuning workers have no environment to fall back on."""
    study = f"remote-{'env' if how.startswith('MLFLOW') else 'set'}"
    storage = mlflow_server.postgres.database("optuna")
    workspace = tmp_path / "ws"
    args = ["--workspace", str(workspace), "tune", "--tune.trials", "2", "--tune.workers", "1"]
    args += ["--tune.study_name", study, "--tune.study_storage", storage, "--set", "data.sample.rows=1500"]
    args += ["--set", "train.epochs=2"]
    if how == "MLFLOW_TRACKING_URI":
        env = user_env(mlflow_server, MLFLOW_TRACKING_URI=mlflow_server.tracking_uri)
    else:
        env = user_env(mlflow_server)
        args += ["--set", f"tracking.tracking_uri={mlflow_server.tracking_uri}"]
    result = mlops(args, tmp_path, env)
    check_remote_run(mlflow_server, result, workspace, how)
    import optuna

    trials = optuna.load_study(study_name=study, storage=storage).trials
    assert len(trials) == 2
    experiment = registry_client(mlflow_server).get_experiment_by_name("tuning")
    assert experiment is not None, "the tuning runs are not on the remote server"
