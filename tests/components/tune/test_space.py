"""Search-space config and study storage: bad input is refused before any trial starts."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest

from components.tune.space import (
    DEFAULT_SPACE_FILE,
    Categorical,
    SearchSpaceError,
    apply,
    load_space,
    parse_space,
)
from components.tune.study import (
    StudyStorageError,
    TuneSettings,
    open_storage,
    redact,
    resolve_storage,
)
from components.tune.study_workers import prepare_study
from mlops.tracking.store import TrackingStore
from training.config import TrainConfig


def test_default_space_file_is_valid_and_covers_every_range_kind() -> None:
    space = load_space()
    space.check_against(TrainConfig())
    kinds = {type(spec).__name__ for spec in space.parameters.values()}
    assert kinds == {"FloatRange", "Categorical"}
    assert space.parameters["learning_rate"].log  # type: ignore[union-attr]
    assert DEFAULT_SPACE_FILE.name == "default.yaml"


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({}, "search space has no parameters"),
        ({"lr": {"type": "float", "low": 0.1, "high": 1.0}}, r"unknown parameter\(s\) \['lr'\]"),
        ({"grad_clip_norm": {"type": "float", "low": 0.1, "high": 1.0}}, "unknown parameter"),
        (
            {"dropout": {"type": "float", "low": 0.5, "high": 0.1}},
            "dropout: low 0.5 is greater than high 0.1",
        ),
        ({"epochs": {"type": "int", "low": 9, "high": 3}}, "epochs: low 9 is greater than high 3"),
        (
            {"learning_rate": {"type": "float", "low": 0.0, "high": 0.1, "log": True}},
            "learning_rate: log-scale range needs low > 0",
        ),
        (
            {"batch_size": {"type": "categorical", "choices": []}},
            "batch_size: categorical parameter has no choices",
        ),
        ({"batch_size": {"type": "categorical", "choices": [64, 64]}}, "duplicates"),
        ({"dropout": {"type": "uniform", "low": 0, "high": 1}}, "dropout"),
    ],
)
def test_bad_space_is_rejected_naming_the_problem(parameters: dict, message: str) -> None:
    with pytest.raises(SearchSpaceError, match=message):
        parse_space({"parameters": parameters}, "test.yaml")


def test_range_outside_the_training_config_is_rejected_before_a_trial() -> None:
    space = parse_space({"parameters": {"dropout": {"type": "float", "low": 0.0, "high": 1.5}}}, "x")
    with pytest.raises(SearchSpaceError, match=r"'dropout': value 1.5 is not a valid training setting"):
        space.check_against(TrainConfig())


def test_overrides_replace_file_entries_and_json_files_load(tmp_path: Path) -> None:
    space = load_space("", {"dropout": {"type": "float", "low": 0.0, "high": 0.2}})
    assert space.parameters["dropout"].high == 0.2  # type: ignore[union-attr]
    assert "learning_rate" in space.parameters  # the rest of the file stays

    path = tmp_path / "space.json"
    path.write_text(json.dumps({"parameters": {"epochs": {"type": "int", "low": 2, "high": 6, "step": 2}}}))
    assert set(load_space(path).parameters) == {"epochs"}

    with pytest.raises(SearchSpaceError, match="does not exist"):
        load_space(tmp_path / "missing.yaml")
    (tmp_path / "broken.yaml").write_text("parameters: [1, 2")
    with pytest.raises(SearchSpaceError, match="is not valid yaml"):
        load_space(tmp_path / "broken.yaml")


def test_suggested_values_stay_in_range_and_lists_come_back_as_lists() -> None:
    space = parse_space(
        {
            "parameters": {
                "learning_rate": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True},
                "epochs": {"type": "int", "low": 2, "high": 4},
                "hidden_units": {"type": "categorical", "choices": [[16], [32, 16]]},
            }
        },
        "x",
    )
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=1))
    for _ in range(20):
        trial = study.ask()
        values = space.suggest(trial)
        assert 1e-4 <= values["learning_rate"] <= 1e-2
        assert values["epochs"] in {2, 3, 4}
        assert values["hidden_units"] in ([16], [32, 16])
        assert trial.params["hidden_units"] in {"16", "32,16"}  # what Optuna stores
        assert space.decode(trial.params)["hidden_units"] == values["hidden_units"]
        config = apply(TrainConfig(nproc=2, batch_size=256), values)
        assert config.model.hidden_units == tuple(values["hidden_units"])
        assert config.nproc == 1  # trials run in one process
        study.tell(trial, 0.5)
    assert isinstance(space.parameters["hidden_units"], Categorical)


def test_storage_resolution_and_unreachable_storage(tmp_path: Path) -> None:
    assert resolve_storage("", f"sqlite:///{tmp_path}/mlflow.db") == f"sqlite:///{tmp_path}/optuna.db"
    assert resolve_storage(" sqlite:///x.db ", "http://mlflow:5000") == "sqlite:///x.db"
    with pytest.raises(
        StudyStorageError, match="study_storage is empty and tracking_uri 'http://mlflow:5000'"
    ):
        resolve_storage("", "http://mlflow:5000")
    with pytest.raises(StudyStorageError, match=r"unreachable: folder .*nowhere does not exist"):
        open_storage(f"sqlite:///{tmp_path}/nowhere/optuna.db")
    with pytest.raises(StudyStorageError, match=r"study storage nosuchdb://h/x is unreachable"):
        open_storage("nosuchdb://h/x")
    assert (
        redact("postgresql+psycopg2://optuna:s3cret@db/optuna")
        == "postgresql+psycopg2://optuna:***@db/optuna"
    )


def _settings(**extra: object) -> TuneSettings:
    return TuneSettings.model_validate({"study_name": "s", "trials": 2, "max_minutes": 1, **extra})


def test_bad_input_fails_before_the_study_or_a_tracking_run_exists(tmp_path: Path) -> None:
    tracking = TrackingStore(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db", experiment="tune")
    bad_space = {"learning_rate": {"type": "float", "low": 0.1, "high": 0.01}}
    with pytest.raises(SearchSpaceError, match="learning_rate: low 0.1 is greater than high 0.01"):
        prepare_study(_settings(), TrainConfig(), f"sqlite:///{tmp_path}/optuna.db", tracking, "", bad_space)
    assert not (tmp_path / "optuna.db").exists()
    with pytest.raises(StudyStorageError, match="unreachable"):
        prepare_study(_settings(), TrainConfig(), f"sqlite:///{tmp_path}/missing/optuna.db", tracking)
    assert not (tmp_path / "mlflow.db").exists()  # no parent run was opened
    with pytest.raises(ValueError, match="study_name"):
        _settings(study_name="")
    with pytest.raises(ValueError, match="trials"):
        _settings(trials=-1)
    with pytest.raises(ValueError, match=r"tune\.trials is 0: nothing to tune; set tune\.trials >= 1"):
        prepare_study(_settings(trials=0), TrainConfig(), f"sqlite:///{tmp_path}/optuna.db", tracking)
    assert not (tmp_path / "optuna.db").exists()


def test_tuning_pipeline_compiles_with_a_parallel_for_fan_out(tmp_path: Path) -> None:
    from kfp import compiler

    from pipelines.tuning.pipeline import tuning_pipeline

    path = tmp_path / "tuning.yaml"
    compiler.Compiler().compile(tuning_pipeline, str(path))
    text = path.read_text()
    assert "parameterIterator" in text  # ParallelFor over the set-up step's worker list
    for component in ("create-tuning-study", "run-tuning-worker", "select-best-trial"):
        assert f"comp-{component}" in text
