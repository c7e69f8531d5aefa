"""Before training: a model's champion (else its latest version) must be able to score the run's data."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import onnx
import pandas as pd
import pytest

from components.evaluate.holdout_evaluation import METRICS_FILE, run_evaluation
from components.promotion_gate.config import MetricsGatePolicy
from components.promotion_gate.promotion import decide
from components.train.champion_check import check_champion_contract
from mlops.data.dataset import DatasetError, DatasetSchema
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import LEAK_COLUMNS_TAG
from tests.components.promotion_gate import public_shapes as shapes
from tests.support.model_factory import fit_tabular_net
from training.model import save_model
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


# --- a champion later found to leak can be replaced by an honest retrain with fewer columns ----------------
def _register_compas(store: TrackingStore, tmp_path: Path, schema: DatasetSchema, frame: pd.DataFrame) -> str:
    path = export_onnx(fit_tabular_net(frame, steps=40, schema=schema), tmp_path / "leaky.onnx")
    with store.task_run("register"):
        info = mlflow.onnx.log_model(
            onnx.load(str(path)), name="model", registered_model_name="compas", pip_requirements=["onnx"]
        )
        version = str(info.registered_model_version)
        store.sign_version("compas", version, store.download_version("compas", version))
    store.point_alias("compas", "champion", version)
    return version


def test_a_retrain_that_ignores_the_champions_leaks_is_judged_on_its_own_merits(
    tracking: TrackingStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    leaky, honest = shapes.compas_schema(leaks=True), shapes.compas_schema(leaks=False)
    raw = shapes.compas_frame(1200)
    version = _register_compas(tracking, tmp_path, leaky, leaky.prepare(raw).iloc[:800])

    # train-model: the champion cannot score the honest data, and that is no reason to refuse it.
    assert check_champion_contract(tracking, "compas", honest) == version
    said = capsys.readouterr().out
    assert (
        f"the champion of 'compas' (version {version}) uses column(s) this data leaves out on purpose" in said
    )
    assert "is_recid (ignored_columns)" in said and "judged on its own merits" in said
    assert f"not against version {version}, and replaces it if it passes" in said

    # evaluate-model: the champion is not compared; the report says why.
    prepared = honest.prepare(raw)
    model_dir = save_model(tmp_path / "honest", fit_tabular_net(prepared.iloc[:800], steps=40, schema=honest))
    test_path = tmp_path / "test.parquet"
    prepared.iloc[800:].to_parquet(test_path, index=False)
    outcome = run_evaluation(model_dir, test_path, honest.label, "compas", tracking, tmp_path / "eval")
    assert not outcome.has_champion and outcome.champion_auc == 0.0
    report = json.loads((tmp_path / "eval" / METRICS_FILE).read_text())
    assert report["champion"] is None
    not_compared = report["champion_not_compared"]
    assert not_compared.startswith(
        f"champion compas version {version} was not compared: it needs column(s) ["
    )
    assert "'is_recid'" in not_compared and "judged on its own merits" in not_compared

    # metrics-gate: on its own merits the honest model passes; against the leaky champion it could not.
    policy = MetricsGatePolicy(auc_floor=0.5)
    decision = decide(policy, outcome.test_auc, 0.0, False, not_compared=not_compared)
    assert decision.promote and decision.reason.endswith(not_compared)
    assert not decide(policy, outcome.test_auc, 0.999, True).promote


def test_a_champion_column_dropped_without_saying_so_is_still_refused(
    tracking: TrackingStore, tmp_path: Path
) -> None:
    leaky = shapes.compas_schema(leaks=True)
    version = _register_compas(tracking, tmp_path, leaky, leaky.prepare(shapes.compas_frame(600)))
    silent = DatasetSchema.model_validate(
        {**leaky.model_dump(), "numeric_features": tuple(c for c in leaky.numeric_features if c != "end")}
    )  # 'end' is neither a feature nor ignored: dropped without saying why
    with pytest.raises(DatasetError) as raised:
        check_champion_contract(tracking, "compas", silent)
    message = str(raised.value)
    assert (
        f"the champion of 'compas' (version {version}) cannot score this data: it needs column(s) ['end']"
        in message
    )
    assert (
        "list them in the schema file's ignored_columns: a retrain without them is then judged on its own merits"
        in message
    )
    assert "declare the columns the champion uses" not in message  # never: put the leak back
    # Found leaking by the champion's own leakage gate: dropping it needs no further word.
    tracking.tag_version("compas", version, {LEAK_COLUMNS_TAG: "end,is_recid"})
    assert check_champion_contract(tracking, "compas", silent) == version


def test_columns_left_out_on_purpose_do_not_excuse_another_mismatch(
    tracking: TrackingStore, tmp_path: Path
) -> None:
    leaky = shapes.compas_schema(leaks=True)
    _register_compas(tracking, tmp_path, leaky, leaky.prepare(shapes.compas_frame(600)))
    honest = shapes.compas_schema(leaks=False)
    retyped = DatasetSchema.model_validate(
        {
            **honest.model_dump(),
            "numeric_features": tuple(c for c in honest.numeric_features if c != "age"),
            "categorical_features": (*honest.categorical_features, "age"),
        }
    )
    with pytest.raises(DatasetError, match=r"column\(s\) \['age'\] are numeric for it and categorical here"):
        check_champion_contract(tracking, "compas", retyped)
    relabelled = DatasetSchema.model_validate({**honest.model_dump(), "label": "is_violent_recid"})
    with pytest.raises(DatasetError, match="it predicts label 'two_year_recid'"):
        check_champion_contract(tracking, "compas", relabelled)
