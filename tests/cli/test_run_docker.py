"""``mlops run training --runner docker``: every step in the platform image through kfp.local's DockerRunner.

The end-to-end test uses a private Docker engine and the buildah-built image (tests/services/docker_engine.py)
and trains the same small model with both runners: the steps' logs name the image, the model is promoted,
the signature and audit trail verify, and the ONNX file is byte-identical to the subprocess runner's.
The unit tests pin what the runner is given (mounts, environment, the user) without an engine.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.commands.run import take_option
from cli.docker_runner import (
    DOCKER_HOME,
    DockerUnavailable,
    docker_client,
    forwarded_environment,
    local_store_paths,
    mounts_for,
    platform_image,
)
from mlops.images import PLATFORM_IMAGE
from mlops.tracking.store import TrackingStore
from mlops.workspace import Workspace

SMALL = [  # 2 epochs that still clear both gates (measured: test AUC 0.80, behavioural tests pass)
    *("--set", "data.sample.rows=3000", "--set", "train.epochs=2", "--set", "train.learning_rate=0.01"),
    *("--set", "train.batch_size=64", "--set", "model_validation.fairness.gate_on_intervals=false"),
]


def mlops(workspace: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "--workspace", str(workspace), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=1500,
        check=False,
    )
    assert done.returncode == 0, (
        f"mlops {' '.join(args)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-3000:]}"
    )
    return done


def onnx_digest(workspace: Path) -> str:
    (path,) = (workspace / "artifacts").rglob("model.onnx")
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_training_runs_every_step_in_the_platform_image_and_promotes(
    docker_platform_image, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLOPS_", "MLFLOW_"))}
    env["DOCKER_HOST"] = docker_platform_image.engine.host
    in_docker, in_subprocess = tmp_path / "docker-ws", tmp_path / "subprocess-ws"

    done = mlops(in_docker, "run", "training", "--runner", "docker", *SMALL, env=env)
    assert f"steps run in      {PLATFORM_IMAGE}" in done.stdout
    assert docker_platform_image.build_tag in done.stdout
    assert "decision          promote" in done.stdout, done.stdout
    (run_dir,) = (in_docker / "pipeline-runs").glob("training-*")
    step_logs = [log for log in (run_dir / "logs").glob("*.log") if log.name != "kfp-local.log"]
    assert {log.stem for log in step_logs} >= {"train-model", "register-model", "promote-to-champion"}
    for log in step_logs:  # kfp's DockerTaskHandler names the image each step's container ran
        assert f"Found image '{PLATFORM_IMAGE}'" in log.read_text(), log
    # Files the containers wrote belong to the caller, not the image's user.
    assert {p.stat().st_uid for p in (in_docker / "artifacts").rglob("*")} == {os.getuid()}
    store = TrackingStore.from_uri(Workspace(in_docker).tracking_uri)
    assert str(store.version_by_alias("credit-default", "champion").version) == "1"
    verified = mlops(in_docker, "audit", "verify", env=env)
    assert "intact" in verified.stdout

    mlops(in_subprocess, "run", "training", *SMALL, env=env)
    assert onnx_digest(in_docker) == onnx_digest(in_subprocess)


def test_the_workspace_and_the_folders_of_named_files_are_mounted_at_their_own_paths(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws").create()
    data = tmp_path / "data" / "loans.csv"
    data.parent.mkdir()
    data.write_text("a,b\n1,2\n")
    (data.parent / "loans.suite.json").write_text("{}")  # named by the schema file, not by a setting
    key = tmp_path / "keys" / "signing.pem"
    key.parent.mkdir()
    key.write_text("k")
    inside = workspace.root / "data" / "x.csv"
    inside.write_text("a\n")
    env = {"MLOPS_SIGNING_KEY": str(key), "MLOPS_ACTOR": "ci", "MLOPS_GONE": str(tmp_path / "missing")}
    store = tmp_path / "elsewhere-artifacts"
    mounts = {
        m["Target"]: m for m in mounts_for(workspace, [str(data), str(inside), "s3://b/k"], env, [store])
    }
    assert set(mounts) == {str(workspace.root), str(data.parent), str(key), str(store)}
    assert all(m["Source"] == target and m["Type"] == "bind" for target, m in mounts.items())
    assert mounts[str(data.parent)]["ReadOnly"] is True
    assert not mounts[str(workspace.root)]["ReadOnly"] and not mounts[str(key)]["ReadOnly"]
    assert not mounts[str(store)]["ReadOnly"]


def test_a_workspace_inside_a_read_only_folder_is_still_mounted_writable(tmp_path: Path) -> None:
    """The usual project layout: loans.csv beside .mlops/. The folder is mounted read-only, the workspace
    over it read-write; a named file inside the workspace adds nothing."""
    workspace = Workspace(tmp_path / ".mlops").create()
    data = tmp_path / "loans.csv"
    data.write_text("a\n1\n")
    mounts = {m["Target"]: m["ReadOnly"] for m in mounts_for(workspace, [str(data)], {})}
    assert mounts == {str(tmp_path): True, str(workspace.root): False}
    (workspace.root / "data" / "x.csv").write_text("a\n")
    nested = {m["Target"] for m in mounts_for(workspace, [str(workspace.root / "data" / "x.csv")], {})}
    assert nested == {str(workspace.root)}


def test_only_the_platforms_variables_reach_a_container_with_a_home_it_can_write(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    environ = {
        "MLOPS_ACTOR": "ci",
        "MLFLOW_TRACKING_URI": "http://127.0.0.1:5000",
        "AWS_ACCESS_KEY_ID": "k",
        "HOME": "/root",
        "PATH": "/usr/bin",
        "SSH_AUTH_SOCK": "/tmp/agent",
    }
    forwarded = forwarded_environment(environ, workspace)
    # MLflow's and ONNX Runtime's telemetry off whatever the caller's environment says (mlops.tracking.telemetry).
    assert forwarded == {
        "MLOPS_ACTOR": "ci",
        "MLFLOW_TRACKING_URI": "http://127.0.0.1:5000",
        "AWS_ACCESS_KEY_ID": "k",
        "HOME": str(workspace.root / DOCKER_HOME),
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "ORT_DISABLE_TELEMETRY": "1",
    }


def test_runner_option_is_taken_in_either_spelling_and_checked() -> None:
    argv = ["--runner", "docker", "--set", "train.epochs=1"]
    assert take_option(argv, "--runner", ("subprocess", "docker")) == "docker"
    assert argv == ["--set", "train.epochs=1"]
    argv = ["--runner=subprocess"]
    assert take_option(argv, "--runner", ("subprocess", "docker")) == "subprocess" and argv == []
    assert take_option(["--set", "a=1"], "--runner", ("subprocess", "docker")) is None
    with pytest.raises(ValueError, match=r"--runner 'kubernetes': choose one of subprocess, docker"):
        take_option(["--runner", "kubernetes"], "--runner", ("subprocess", "docker"))


def test_no_engine_is_a_clear_error_naming_where_and_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no.sock")
    with pytest.raises(
        DockerUnavailable, match=r"no Docker engine answers at unix://.*no\.sock.*--runner subprocess"
    ):
        docker_client()


def test_run_without_an_engine_fails_before_any_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from cli.main import main

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no.sock")
    code = main(["--workspace", str(tmp_path / "ws"), "run", "training", "--runner", "docker"])
    err = capsys.readouterr().err
    assert code == 2 and "no Docker engine answers" in err
    assert not list((tmp_path / "ws" / "pipeline-runs").glob("training-*"))


def test_an_engine_without_the_platform_image_names_the_commands_that_load_it() -> None:
    import docker

    class Images:
        def get(self, name: str) -> None:
            raise docker.errors.ImageNotFound(f"No such image: {name}")

    class Client:
        images = Images()

    with pytest.raises(
        DockerUnavailable,
        match=rf"{PLATFORM_IMAGE} is not in the Docker engine.*mlops image build && mlops image load",
    ):
        platform_image(Client())


def test_image_build_refuses_a_builder_that_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    from cli.commands import image

    monkeypatch.setattr(image.shutil, "which", lambda name: "/usr/bin/docker" if name == "docker" else None)
    assert image.choose_builder("auto") == "docker"
    with pytest.raises(ValueError, match="--builder buildah: buildah is not installed"):
        image.choose_builder("buildah")
    monkeypatch.setattr(image.shutil, "which", lambda name: None)
    with pytest.raises(ValueError, match="neither buildah nor docker is installed"):
        image.choose_builder("auto")


def test_a_local_store_outside_the_workspace_is_mounted_and_a_remote_one_is_not(tmp_path: Path) -> None:
    db, artifacts = tmp_path / "store" / "mlflow.db", tmp_path / "artifacts"
    assert local_store_paths(f"sqlite:///{db}", artifacts.as_uri()) == [db.parent, artifacts]
    assert local_store_paths("http://127.0.0.1:5000", "s3://bucket/mlflow") == []
    assert local_store_paths("http://127.0.0.1:5000", "mlflow-artifacts:/") == []
