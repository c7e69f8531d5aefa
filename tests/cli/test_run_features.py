"""``mlops run training --features SERVICE``: the short spelling of data.features.service; the feature
repository defaults to the workspace's features/ folder, made absolute and checked before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.commands.run import local_arguments, parse_pipeline_arguments
from mlops.workspace import Workspace
from pipelines.catalog import forms


def test_features_is_the_short_spelling_of_the_feature_service() -> None:
    given = parse_pipeline_arguments("training", ["--features", "churn", "--data", "labels.csv"])
    assert given == {"data.features.service": "churn", "data.uri": "labels.csv"}
    assert parse_pipeline_arguments("training", ["--set", "data.features.service=churn"]) == {
        "data.features.service": "churn"
    }


def test_the_feature_repository_defaults_to_the_workspaces_and_must_be_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    (tmp_path / "labels.csv").write_text("customerID,event_timestamp,Churn\na,2024-01-01,1\n")
    workspace = Workspace(tmp_path / "ws")
    with pytest.raises(ValueError, match=r"data.features.service 'churn'.*data.uri is empty.*--data"):
        local_arguments("training", {"data.features.service": "churn"}, workspace)
    given = {"data.features.service": "churn", "data.uri": "labels.csv"}
    with pytest.raises(
        ValueError,
        match=r"data.features.repo: .*ws/features is not a feature repository.*mlops features init",
    ):
        local_arguments("training", given, workspace)
    (tmp_path / "ws" / "features").mkdir(parents=True)
    (tmp_path / "ws" / "features" / "feature_store.yaml").write_text("project: mlops\n")
    arguments, _ = local_arguments("training", given, workspace)
    values = forms()["training"].values(arguments)
    assert values["data.features.repo"] == str(tmp_path / "ws" / "features")
    assert values["data.uri"] == str(tmp_path / "labels.csv")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "feature_store.yaml").write_text("project: mlops\n")
    arguments, _ = local_arguments("training", {**given, "data.features.repo": "mine"}, workspace)
    assert forms()["training"].values(arguments)["data.features.repo"] == str(tmp_path / "mine")
    # Without a service the repository is not looked for.
    arguments, _ = local_arguments("training", {"data.uri": "labels.csv"}, workspace)
    assert forms()["training"].values(arguments)["data.features.repo"] == ""


def test_the_step_cache_key_follows_the_feature_repositorys_contents(tmp_path: Path) -> None:
    from cli.commands.run import step_cache

    workspace = Workspace(tmp_path / "ws")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "feature_store.yaml").write_text("project: mlops\n")
    settings = {"data.uri": "", "data.features.service": "churn", "data.features.repo": str(repo)}
    before = step_cache("training", settings, workspace)
    (repo / "features.py").write_text("# a changed definition\n")
    assert step_cache("training", settings, workspace) != before
    plain = {**settings, "data.features.service": ""}
    assert step_cache("training", plain, workspace) == step_cache("training", plain, workspace)
