"""Tracking resolution (explicit > MLFLOW_TRACKING_URI > workspace), the artifact-location guard, and the
one MLflow seam (:class:`TrackingStore`): explicit URIs, a fluent scope that restores MLflow's globals,
task runs, alias moves with their audit record, reference profiles."""

from __future__ import annotations

import pickle
import socket
from pathlib import Path

import pytest

from mlops.tracking.context import (
    ARTIFACT_ROOT_ENV,
    TrackingError,
    check_reachable,
    redact_uri,
    resolve_tracking,
)
from mlops.tracking.store import TrackingStore, fluent_state
from mlops.workspace import Workspace

REMOTE = "http://mlflow.example:5000"


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


def test_store_travels_as_the_tracking_section_and_the_run_id(workspace: Workspace) -> None:
    resolved = resolve_tracking(workspace, experiment="tuning", pipeline_run_id="r1", environ={})
    values = resolved.store.settings()
    assert values == {
        "tracking_uri": workspace.tracking_uri,
        "experiment": "tuning",
        "artifact_root": workspace.artifact_root,
    }
    assert TrackingStore.for_task(values, "r1", environ={}) == resolved.store


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


def test_the_experiment_refuses_to_be_stored_elsewhere(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/mlflow.db"
    first = TrackingStore(store, "training", "", (tmp_path / "a").as_uri())
    created = first.ensure_experiment()
    assert created.artifact_location == f"{(tmp_path / 'a').as_uri()}/training"
    TrackingStore(store, "training", "", (tmp_path / "a").as_uri()).ensure_experiment()  # same root: fine
    moved = TrackingStore(store, "training", "", (tmp_path / "b").as_uri())
    with pytest.raises(TrackingError, match=r"already stores its artifacts at .*/a/training") as info:
        moved.ensure_experiment()
    message = str(info.value)
    assert f"{(tmp_path / 'b').as_uri()}/training" in message  # the location asked for
    assert (
        "--set tracking.experiment=" in message and f"({(tmp_path / 'a').as_uri()})" in message
    )  # both fixes
    with pytest.raises(TrackingError, match="already stores its artifacts"), moved.task_run("refused"):
        pass  # no run opens in the wrong place either
    # Another experiment name is the documented way out.
    TrackingStore(store, "training-b", "", (tmp_path / "b").as_uri()).ensure_experiment()


def test_a_path_spelling_of_the_same_location_is_the_same_location(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/mlflow.db"
    TrackingStore(store, "e", "", (tmp_path / "a").as_uri()).ensure_experiment()
    TrackingStore(store, "e", "", f"{tmp_path}/a/").ensure_experiment()


def test_no_artifact_root_accepts_any_existing_location(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/mlflow.db"
    TrackingStore(store, "e", "", (tmp_path / "a").as_uri()).ensure_experiment()
    TrackingStore(store, "e", "", "").ensure_experiment()


def test_check_finds_the_mismatch_before_anything_runs(workspace: Workspace, tmp_path: Path) -> None:
    workspace.create()
    resolve_tracking(workspace, environ={}).check()  # fresh workspace: nothing to compare yet
    TrackingStore(workspace.tracking_uri, "training", "", (tmp_path / "old").as_uri()).ensure_experiment()
    with pytest.raises(TrackingError, match="already stores its artifacts"):
        resolve_tracking(workspace, environ={}).check()


# --- the seam: TrackingStore ---------------------------------------------------------------------


def _store(root: Path, experiment: str = "seam", run_id: str = "kfp-1") -> TrackingStore:
    return TrackingStore(f"sqlite:///{root}/mlflow.db", experiment, run_id, (root / "artifacts").as_uri())


def _version(store: TrackingStore, name: str, source: Path) -> str:
    """A new version of ``name`` (the model is created with its first version)."""
    source.mkdir(parents=True, exist_ok=True)
    if not store._client.search_registered_models(f"name='{name}'"):
        store._client.create_registered_model(name)
    return str(store._client.create_model_version(name, source.as_uri()).version)


def test_the_store_names_its_uris_and_the_registry_follows_the_tracking_store(tmp_path: Path) -> None:
    store = TrackingStore(f"sqlite:///{tmp_path}/mlflow.db")
    assert (store.registry_uri, store.experiment) == (store.tracking_uri, "training")
    assert store._client.tracking_uri == store.tracking_uri
    assert store._client is store._client  # built once
    separate = TrackingStore(store.tracking_uri, registry_uri=f"sqlite:///{tmp_path}/registry.db")
    assert separate.registry_uri.endswith("registry.db")


def test_explicit_uris_beat_the_process_wide_ones(tmp_path: Path) -> None:
    first, second = _store(tmp_path / "a"), _store(tmp_path / "b")
    _version(first, "only-in-a", tmp_path / "model")
    with first.fluent():  # MLflow's globals now name store a; store b's client must not follow them
        assert second._client.search_registered_models() == []
        assert TrackingStore.from_uri(second.tracking_uri)._client.search_registered_models() == []
    assert [m.name for m in first._client.search_registered_models()] == ["only-in-a"]


def test_an_empty_or_unknown_setting_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(TrackingError, match="tracking URI is empty.*MLFLOW_TRACKING_URI"):
        TrackingStore.for_task({"tracking_uri": ""}, "run-1", environ={})
    with pytest.raises(TrackingError, match=r"unknown key\(s\) \['pipeline_run_id'\].*task argument"):
        TrackingStore.for_task({"tracking_uri": REMOTE, "pipeline_run_id": "x"}, "run-1", environ={})
    with pytest.raises(TrackingError, match="experiment name is empty"):
        TrackingStore(REMOTE, " ")
    # Empty in the settings: the task environment's variable, read once, here.
    store = TrackingStore.for_task({"experiment": "e"}, "run-1", environ={"MLFLOW_TRACKING_URI": REMOTE})
    assert (store.tracking_uri, store.registry_uri, store.experiment, store.pipeline_run_id) == (
        REMOTE,
        REMOTE,
        "e",
        "run-1",
    )


def test_a_pickled_store_carries_settings_not_a_client(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.ensure_experiment()
    copy = pickle.loads(pickle.dumps(store))
    assert copy == store
    assert "_client" not in copy.__dict__ and "_experiment" not in copy.__dict__
    assert copy.experiment_by_name("seam") is not None  # builds its own on first use


def test_the_fluent_scope_points_mlflow_at_the_store_and_restores_it_when_the_body_raises(
    tmp_path: Path,
) -> None:
    import mlflow

    outer, inner = _store(tmp_path / "outer", "outer"), _store(tmp_path / "inner", "inner")
    before = fluent_state()
    with pytest.raises(RuntimeError, match="boom"), outer.fluent():
        assert (mlflow.get_tracking_uri(), mlflow.get_registry_uri()) == (
            outer.tracking_uri,
            outer.tracking_uri,
        )
        with inner.fluent():
            assert mlflow.get_tracking_uri() == inner.tracking_uri
            assert fluent_state()["experiment_id"] == inner.ensure_experiment().experiment_id
        assert mlflow.get_tracking_uri() == outer.tracking_uri  # the inner scope put the outer one back
        assert fluent_state()["experiment_id"] == outer.ensure_experiment().experiment_id
        raise RuntimeError("boom")
    assert fluent_state() == before


def test_a_run_left_open_in_the_scope_ends_with_it(tmp_path: Path) -> None:
    import mlflow

    store = _store(tmp_path)
    with pytest.raises(RuntimeError), store.fluent():
        started = mlflow.start_run()
        raise RuntimeError("the body forgot to end its run")
    assert mlflow.active_run() is None
    assert store.get_run(started.info.run_id).info.status == "FAILED"


def test_a_task_run_is_tagged_with_its_pipeline_run_and_fails_when_the_body_does(tmp_path: Path) -> None:
    import mlflow

    store = _store(tmp_path)
    with store.task_run("evaluate", tags={"extra": "1"}) as run:
        mlflow.log_metric("auc", 0.9)
    with pytest.raises(ValueError, match="bad data"), store.task_run("evaluate") as failed:
        raise ValueError("bad data")
    ok = store.get_run(run.info.run_id)
    assert ok.info.experiment_id == store.ensure_experiment().experiment_id
    assert (ok.info.status, ok.data.metrics["auc"]) == ("FINISHED", 0.9)
    assert {k: ok.data.tags[k] for k in ("mlops.task", "mlops.pipeline_run_id", "extra")} == {
        "mlops.task": "evaluate",
        "mlops.pipeline_run_id": "kfp-1",
        "extra": "1",
    }
    assert store.get_run(failed.info.run_id).info.status == "FAILED"
    assert store.ensure_experiment().artifact_location == f"{(tmp_path / 'artifacts').as_uri()}/seam"


def test_moving_a_live_alias_keeps_its_history_and_an_audit_record(tmp_path: Path) -> None:
    from mlops.governance.audit import read_events
    from mlops.vocabulary import PROMOTED_AT_TAG, REPLACED_BY_TAG

    store = _store(tmp_path)
    first, second = _version(store, "m", tmp_path / "v1"), _version(store, "m", tmp_path / "v2")
    assert store.alias_version("m", "champion") is None
    store.move_alias("m", "champion", first, None, reason="first")
    store.move_alias("m", "champion", second, first, reason="better", links={"deployment": "local/m"})
    assert store.alias_version("m", "champion") == second
    assert store.model_version("m", first).tags[REPLACED_BY_TAG] == second
    assert PROMOTED_AT_TAG in store.model_version("m", second).tags
    moved = [e for e in read_events(tracking_uri=store.tracking_uri) if e.action == "alias.moved"]
    assert [(e.details["from"], e.details["to"], e.details["reason"]) for e in moved] == [
        ("", first, "first"),
        (first, second, "better"),
    ]
    assert moved[-1].links == {
        "pipeline_run_id": "kfp-1",
        "deployment": "local/m",
        "model_version": f"m/{second}",
    }
    # A working alias moves without the champion's history.
    assert store.point_alias("m", "challenger", first) is None
    assert store.point_alias("m", "challenger", second) == first
    assert REPLACED_BY_TAG not in store.model_version("m", second).tags


def test_gate_tags_are_clipped_to_what_mlflow_stores(tmp_path: Path) -> None:
    from mlops.vocabulary import MAX_TAG_CHARS, gate_tag

    store = _store(tmp_path)
    version = _version(store, "m", tmp_path / "v1")
    store.record_gate("m", version, "metrics", "reject", "x" * (MAX_TAG_CHARS + 10))
    tags = store.model_version("m", version).tags
    assert tags[gate_tag("metrics", "decision")] == "reject"
    assert len(tags[gate_tag("metrics", "reason")]) == MAX_TAG_CHARS


def test_a_reference_profile_round_trips_through_the_version(tmp_path: Path) -> None:
    import numpy as np

    from mlops.model.reference_profile import ProfileError, ReferenceProfile, numeric_profile

    store = _store(tmp_path)
    version = _version(store, "m", tmp_path / "v1")
    with pytest.raises(ProfileError, match="has no reference profile"):
        store.reference_profile("m", version)
    profile = ReferenceProfile(
        created_at="2024-01-01T00:00:00+00:00",
        rows=3,
        numeric=(numeric_profile("age", np.array([20.0, 30.0, 40.0])),),
        categorical=(),
        score=numeric_profile("prediction", np.array([0.1, 0.5, 0.9])),
    )
    with store.task_run("register") as run:
        uri = store.write_reference_profile(run.info.run_id, "m", version, profile)
    assert uri.endswith("/reference_profile.json")
    assert store.reference_profile("m", version) == profile
