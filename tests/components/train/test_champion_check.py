"""Before training: a model's champion (else its latest version) must be able to score the run's data."""

from __future__ import annotations

from pathlib import Path

import mlflow
import onnx
import pytest

from components.train.champion_check import check_champion_contract
from mlops.data.dataset import DatasetError
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.tracking.store import TrackingStore
from tests.support.model_factory import fit_tabular_net
from training.onnx_export import export_onnx


def _register(store: TrackingStore, tmp_path: Path, name: str, champion: bool) -> str:
    frame = generate(SampleDataConfig(rows=300, seed=2))
    path = export_onnx(fit_tabular_net(frame, steps=5), tmp_path / f"{name}.onnx")
    with store.task_run("register"):
        info = mlflow.onnx.log_model(
            onnx.load(str(path)), name="model", registered_model_name=name, pip_requirements=["onnx"]
        )
        version = str(info.registered_model_version)
        store.sign_version(name, version, store.download_version(name, version))  # as the register step does
    if champion:
        store.point_alias(name, "champion", version)
    return version


def test_a_new_model_and_a_matching_schema_pass(tracking: TrackingStore, tmp_path: Path) -> None:
    assert check_champion_contract(tracking, "fresh", SAMPLE_SCHEMA) is None
    version = _register(tracking, tmp_path, "loans", champion=True)
    assert check_champion_contract(tracking, "loans", SAMPLE_SCHEMA) == version
    # More declared columns than the champion uses: it can still score the data.
    wider = SAMPLE_SCHEMA.model_validate(
        {**SAMPLE_SCHEMA.model_dump(), "numeric_features": (*SAMPLE_SCHEMA.numeric_features, "tenure")}
    )
    assert check_champion_contract(tracking, "loans", wider) == version


def test_another_datasets_schema_is_refused_naming_columns_and_the_fix(
    tracking: TrackingStore, tmp_path: Path
) -> None:
    version = _register(tracking, tmp_path, "loans", champion=True)
    census = SAMPLE_SCHEMA.model_validate(
        {"label": "income", "numeric_features": ("age", "hours"), "categorical_features": ("education",)}
    )
    with pytest.raises(DatasetError) as raised:
        check_champion_contract(tracking, "loans", census)
    message = str(raised.value)
    assert f"the champion of 'loans' (version {version}) cannot score this data" in message
    assert "it predicts label 'default', this data's label is 'income'" in message
    missing = [c for c in SAMPLE_SCHEMA.features if c not in census.columns]
    assert f"it needs column(s) {missing}" in message
    assert "mlops data init --model-name NEW" in message and "Nothing was trained" in message


def test_a_numeric_column_declared_categorical_is_named(tracking: TrackingStore, tmp_path: Path) -> None:
    _register(tracking, tmp_path, "loans", champion=True)
    first = SAMPLE_SCHEMA.numeric_features[0]
    retyped = SAMPLE_SCHEMA.model_validate(
        {
            **SAMPLE_SCHEMA.model_dump(),
            "numeric_features": SAMPLE_SCHEMA.numeric_features[1:],
            "categorical_features": (*SAMPLE_SCHEMA.categorical_features, first),
        }
    )
    with pytest.raises(
        DatasetError, match=rf"column\(s\) \['{first}'\] are numeric for it and categorical here"
    ):
        check_champion_contract(tracking, "loans", retyped)


def test_without_a_champion_the_latest_version_is_the_contract(
    tracking: TrackingStore, tmp_path: Path
) -> None:
    _register(tracking, tmp_path, "loans", champion=False)
    latest = _register(tracking, tmp_path, "loans", champion=False)
    other = SAMPLE_SCHEMA.model_validate({"label": "default", "numeric_features": ("x",)})
    with pytest.raises(DatasetError, match=f"the latest version of 'loans' \\(version {latest}\\)"):
        check_champion_contract(tracking, "loans", other)
