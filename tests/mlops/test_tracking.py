"""Tracking resolution (explicit > MLFLOW_TRACKING_URI > workspace) and the artifact-location guard."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlops.tracking.context import (
    ARTIFACT_ROOT_ENV,
    TrackingContext,
    TrackingError,
    check_reachable,
    redact_uri,
    resolve_tracking,
)
from mlops.workspace import Workspace

REMOTE = "http://mlflow.example:5000"


@pytest.fixture(autouse=True)
def _restore_global_tracking_uri() -> Iterator[None]:
    """``apply()`` sets MLflow's process-wide URI; later tests must not inherit a deleted tmp store."""
    import mlflow

    previous = mlflow.get_tracking_uri()
    yield
    mlflow.set_tracking_uri(previous)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws")


def test_without_anything_the_workspace_store_and_its_artifacts(workspace: Workspace) -> None:
    resolved = resolve_tracking(workspace, environ={})
    assert resolved.tracking_uri == workspace.tracking_uri
    assert resolved.artifact_root == workspace.artifact_root
    assert (resolved.tracking_source, resolved.artifact_source) == ("workspace", "workspace")
    assert resolved.workspace_store


def test_env_var_beats_the_workspace_and_drops_its_artifact_root(workspace: Workspace) -> None:
    resolved = resolve_tracking(workspace, environ={"MLFLOW_TRACKING_URI": REMOTE})
    assert resolved.tracking_uri == REMOTE
    assert resolved.tracking_source == "MLFLOW_TRACKING_URI"
    # A local artifact root under a remote server would keep models on this machine.
    assert resolved.artifact_root == ""
    assert resolved.artifact_source == "server default"
    assert not resolved.workspace_store


def test_explicit_value_beats_the_env_var(workspace: Workspace) -> None:
    resolved = resolve_tracking(
        workspace, tracking_uri="http://other:5000", environ={"MLFLOW_TRACKING_URI": REMOTE}
    )
    assert (resolved.tracking_uri, resolved.tracking_source) == ("http://other:5000", "explicit")


def test_explicit_workspace_uri_still_counts_as_the_workspace_store(workspace: Workspace) -> None:
    resolved = resolve_tracking(workspace, tracking_uri=workspace.tracking_uri, environ={})
    assert resolved.workspace_store and resolved.artifact_root == workspace.artifact_root


def test_artifact_root_precedence(workspace: Workspace) -> None:
    env = {"MLFLOW_TRACKING_URI": REMOTE, ARTIFACT_ROOT_ENV: "s3://env-bucket/mlflow"}
    from_env = resolve_tracking(workspace, environ=env)
    assert (from_env.artifact_root, from_env.artifact_source) == ("s3://env-bucket/mlflow", ARTIFACT_ROOT_ENV)
    explicit = resolve_tracking(workspace, artifact_root="s3://mine/x", environ=env)
    assert (explicit.artifact_root, explicit.artifact_source) == ("s3://mine/x", "explicit")
    # The env var also applies to the workspace store: someone may keep SQLite but push artifacts to S3.
    local = resolve_tracking(workspace, environ={ARTIFACT_ROOT_ENV: "s3://env-bucket/mlflow"})
    assert local.artifact_root == "s3://env-bucket/mlflow"


def test_context_travels_as_the_same_dict(workspace: Workspace) -> None:
    resolved = resolve_tracking(workspace, experiment="tuning", pipeline_run_id="r1", environ={})
    values = resolved.context.as_dict()
    assert values == {
        "tracking_uri": workspace.tracking_uri,
        "experiment": "tuning",
        "pipeline_run_id": "r1",
        "artifact_root": workspace.artifact_root,
    }
    assert TrackingContext.from_dict(values) == resolved.context


def test_describe_names_sources_and_hides_passwords(workspace: Workspace) -> None:
    env = {
        "MLFLOW_TRACKING_URI": "https://alice:s3cret@mlflow.example/",
        "MLFLOW_S3_ENDPOINT_URL": "http://rgw:7480",
        "AWS_SECRET_ACCESS_KEY": "very-secret-key",
    }
    text = "\n".join(resolve_tracking(workspace, environ=env).describe())
    assert "https://alice:***@mlflow.example/ (from MLFLOW_TRACKING_URI)" in text
    assert "the tracking server's default" in text
    assert "http://rgw:7480" in text
    assert "s3cret" not in text and "very-secret-key" not in text


def test_redact_keeps_uris_without_password() -> None:
    assert redact_uri("postgresql+psycopg2://u:pw@db:5432/x") == "postgresql+psycopg2://u:***@db:5432/x"
    assert redact_uri(REMOTE) == REMOTE


def test_a_path_is_not_a_tracking_uri(workspace: Workspace) -> None:
    with pytest.raises(TrackingError, match=r"MLFLOW_TRACKING_URI 'mlflow\.db' is not a tracking URI"):
        resolve_tracking(workspace, environ={"MLFLOW_TRACKING_URI": "mlflow.db"})


def test_unreachable_server_fails_fast_with_the_fix() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(TrackingError, match=rf"127\.0\.0\.1:{port} is unreachable .*MLFLOW_TRACKING_URI"):
        check_reachable(f"http://127.0.0.1:{port}", timeout_s=2)


def test_apply_refuses_an_experiment_stored_elsewhere(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/mlflow.db"
    first = TrackingContext(store, "training", "", (tmp_path / "a").as_uri())
    first.apply()
    first.apply()  # the same root again is fine
    moved = TrackingContext(store, "training", "", (tmp_path / "b").as_uri())
    with pytest.raises(TrackingError, match=r"already stores its artifacts at .*/a/training") as info:
        moved.apply()
    message = str(info.value)
    assert f"{(tmp_path / 'b').as_uri()}/training" in message  # the location asked for
    assert "--set experiment=" in message and f"({(tmp_path / 'a').as_uri()})" in message  # both fixes
    # Another experiment name is the documented way out.
    TrackingContext(store, "training-b", "", (tmp_path / "b").as_uri()).apply()


def test_apply_accepts_a_path_spelling_of_the_same_location(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/mlflow.db"
    TrackingContext(store, "e", "", (tmp_path / "a").as_uri()).apply()
    TrackingContext(store, "e", "", f"{tmp_path}/a/").apply()


def test_no_artifact_root_accepts_any_existing_location(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/mlflow.db"
    TrackingContext(store, "e", "", (tmp_path / "a").as_uri()).apply()
    TrackingContext(store, "e", "", "").apply()


def test_check_finds_the_mismatch_before_anything_runs(workspace: Workspace, tmp_path: Path) -> None:
    workspace.create()
    resolve_tracking(workspace, environ={}).check()  # fresh workspace: nothing to compare yet
    TrackingContext(workspace.tracking_uri, "training", "", (tmp_path / "old").as_uri()).apply()
    with pytest.raises(TrackingError, match="already stores its artifacts"):
        resolve_tracking(workspace, environ={}).check()
