"""Which model a command means: the schema file's model_name, else the workspace's only model, else ask.

Against a real SQLite MLflow registry (the workspace's own kind of store).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import mlflow
import pytest
import yaml
from mlflow.tracking import MlflowClient

from cli.commands.run import local_arguments, parse_pipeline_arguments
from cli.commands.serve import server_config
from cli.main import main
from cli.model_choice import ModelChoiceError, model_settings, workspace_model
from mlops.data.sample_data import SampleDataConfig, generate
from mlops.workspace import Workspace


def _workspace(tmp_path: Path, *models: str) -> Workspace:
    workspace = Workspace(tmp_path / "ws").create()
    client = MlflowClient(tracking_uri=workspace.tracking_uri, registry_uri=workspace.tracking_uri)
    for name in models:
        client.create_registered_model(name)
    return workspace


def test_the_only_model_is_the_default_and_an_explicit_name_always_wins(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path, "adult")
    assert workspace_model(None, workspace.tracking_uri) == "adult"
    assert workspace_model("bank", workspace.tracking_uri) == "bank"


def test_two_models_are_listed_with_the_flag_to_pass(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path, "bank", "adult")
    with pytest.raises(
        ModelChoiceError, match=r"holds 2 models \(adult, bank\); say which with --model-name NAME"
    ):
        workspace_model(None, workspace.tracking_uri)


def test_an_empty_registry_says_how_to_train_one(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with pytest.raises(ModelChoiceError, match="no registered model .*mlops data init.*or pass --model NAME"):
        workspace_model(None, workspace.tracking_uri, "--model")


@pytest.mark.parametrize(
    ("command", "example"),
    [
        (["lineage"], "mlops lineage adult@champion"),
        (["lineage", "@challenger"], "mlops lineage adult@challenger"),
        (["history"], "mlops history adult"),
    ],
)
def test_lineage_and_history_with_several_models_name_them_and_give_a_line_to_paste(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], example: str
) -> None:
    """They take the model as an argument, not a flag: the hint is the command itself, filled in."""
    workspace = _workspace(tmp_path, "bank", "adult")
    assert main(["--workspace", str(workspace.root), *command]) == 2
    error = capsys.readouterr().err
    assert f"holds 2 models (adult, bank); say which, e.g. {example}\n" in error
    assert " NAME" not in error and "<model-name>" not in error
    empty = _workspace(tmp_path / "empty")
    assert main(["--workspace", str(empty.root), *command]) == 2
    assert f"or name one: {example.replace('adult', 'NAME')}\n" in capsys.readouterr().err


def test_mlops_serve_defaults_to_the_workspace_model_or_asks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = _workspace(tmp_path, "adult")
    parser = argparse.ArgumentParser()
    from cli.commands.serve import add_parser

    add_parser(parser.add_subparsers())
    args = parser.parse_args(["serve"])
    assert server_config(args, workspace, workspace.tracking_uri).model_name == "adult"
    MlflowClient(tracking_uri=workspace.tracking_uri).create_registered_model("bank")
    with pytest.raises(ModelChoiceError, match=r"adult, bank"):
        server_config(args, workspace, workspace.tracking_uri)
    named = parser.parse_args(["serve", "--model-name", "bank"])
    assert server_config(named, workspace, workspace.tracking_uri).model_name == "bank"
    # Through the command line: one line, exit 2, naming both.
    code = main(["--workspace", str(workspace.root), "quantize"])
    assert code == 2
    assert "adult, bank" in capsys.readouterr().err


def _schema_file(tmp_path: Path, model_name: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "loans.csv"
    generate(SampleDataConfig(rows=300, seed=1)).to_csv(data, index=False)
    assert main(["--workspace", str(tmp_path / "ws"), "data", "init", "--data", str(data), "--label", "default",
                 "--out", str(tmp_path), *(["--model-name", model_name] if model_name else [])]) == 0  # fmt: skip
    return tmp_path / "loans.schema.yaml"


def test_data_init_writes_the_model_name_from_the_file_or_the_flag(tmp_path: Path) -> None:
    path = _schema_file(tmp_path / "a", "")
    assert yaml.safe_load(path.read_text())["model_name"] == "loans"
    path = _schema_file(tmp_path / "b", "loan-risk.v2")
    assert yaml.safe_load(path.read_text())["model_name"] == "loan-risk.v2"


def test_data_init_refuses_a_name_the_registry_would_refuse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "loans.csv"
    generate(SampleDataConfig(rows=100, seed=1)).to_csv(data, index=False)
    code = main(["--workspace", str(tmp_path / "ws"), "data", "init", "--data", str(data), "--label", "default",
                 "--out", str(tmp_path), "--model-name", "loans/v2"])  # fmt: skip
    assert code == 2
    assert "--model-name 'loans/v2' is not a registered-model name" in capsys.readouterr().err
    assert not (tmp_path / "loans.schema.yaml").exists()


def test_the_stem_is_sanitised_to_a_valid_model_name(tmp_path: Path) -> None:
    data = tmp_path / "my data (2024).csv"
    generate(SampleDataConfig(rows=100, seed=1)).to_csv(data, index=False)
    assert main(["--workspace", str(tmp_path / "ws"), "data", "init", "--data", str(data), "--label", "default",
                 "--out", str(tmp_path)]) == 0  # fmt: skip
    (path,) = tmp_path.glob("*.schema.yaml")
    name = yaml.safe_load(path.read_text())["model_name"]
    assert name == "my_data_2024"
    mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/check.db").create_registered_model(name)


def test_run_training_registers_under_the_schema_files_model_and_refuses_another(tmp_path: Path) -> None:
    schema = _schema_file(tmp_path, "loan-risk")
    workspace = Workspace(tmp_path / "ws").create()
    given = parse_pipeline_arguments("training", ["--schema", str(schema)])
    arguments, _ = local_arguments("training", given, workspace)
    assert arguments["registration_model_name"] == "loan-risk"
    assert arguments["tune"]["study_name"] == "loan-risk"

    agreeing = parse_pipeline_arguments(
        "training", ["--schema", str(schema), "--registration.model_name", "loan-risk"]
    )
    assert local_arguments("training", agreeing, workspace)[0]["registration_model_name"] == "loan-risk"
    other = parse_pipeline_arguments(
        "training", ["--schema", str(schema), "--set", "registration.model_name=x"]
    )
    with pytest.raises(
        ModelChoiceError, match="registration.model_name=x disagrees with model_name 'loan-risk'"
    ):
        local_arguments("training", other, workspace)


def test_without_a_schema_file_training_keeps_its_default_and_monitoring_asks(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path, "adult", "bank")
    known = {"registration.model_name", "validation.schema_uri"}
    assert model_settings(known, {}, workspace.tracking_uri) == {}
    with pytest.raises(ModelChoiceError, match="adult, bank"):
        model_settings({"window.model_name"}, {}, workspace.tracking_uri)
    assert model_settings({"window.model_name"}, {"window.model_name": "bank"}, workspace.tracking_uri) == {}
    single = _workspace(tmp_path / "one", "adult")
    assert model_settings({"score.model"}, {}, single.tracking_uri) == {"score.model": "adult@champion"}


def test_serving_a_model_without_a_champion_suggests_the_challenger_flag(tmp_path: Path) -> None:
    from serving.model_source import RegisteredModelSource, RegistryError

    workspace = _workspace(tmp_path, "adult")
    registry = RegisteredModelSource(workspace.tracking_uri, "adult", tmp_path / "cache")
    with pytest.raises(RegistryError) as raised:
        registry.version_for("champion")
    message = str(raised.value)
    assert "mlops serve --model-name adult --alias challenger" in message
    assert "client." not in message and "MlflowClient" not in message
    with pytest.raises(RegistryError, match="mlops serve --model-name adult --alias champion"):
        registry.version_for("nightly")
