"""Evaluation metrics, plots, and the champion comparison against a real MLflow registry."""

import dataclasses
import json
import os
import sys
from pathlib import Path

import mlflow
import numpy as np
import onnx
import pandas as pd
import pytest
from sklearn import metrics as sk

from components.evaluate.binary_metrics import (
    EvaluationError,
    expected_calibration_error,
    score_probabilities,
)
from components.evaluate.holdout_evaluation import (
    CONFUSION_FILE,
    METRICS_FILE,
    ROC_FILE,
    champion_metrics,
    evaluate,
    run_evaluation,
)
from mlops.data.dataset import SCHEMA_METADATA_KEY
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.model.onnx_model import OnnxScorer
from mlops.settings import section_values
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import SPLIT_TAG
from tests.support.model_factory import fit_tabular_net
from training.config import TrainConfig
from training.data_splits import split_frame, split_rule
from training.model import TabularNet, load_model, save_model
from training.onnx_export import export_onnx, torch_probabilities
from training.row_split import SplitRule

LABEL = SAMPLE_SCHEMA.label
MODEL_NAME = "credit-default"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _train(frame: pd.DataFrame, steps: int = 200, seed: int = 0) -> TabularNet:
    return fit_tabular_net(frame, steps=steps, seed=seed)


@pytest.fixture(scope="module")
def train_frame() -> pd.DataFrame:
    return generate(SampleDataConfig(rows=1500, seed=21))


@pytest.fixture(scope="module")
def test_frame() -> pd.DataFrame:
    return generate(SampleDataConfig(rows=800, seed=22))


@pytest.fixture(scope="module")
def model_dir(train_frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_model(tmp_path_factory.mktemp("model"), _train(train_frame))


@pytest.fixture(scope="module")
def champion_onnx(train_frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A different model (fewer steps, other seed) exported to ONNX, to register as champion."""
    return export_onnx(_train(train_frame, steps=60, seed=1), tmp_path_factory.mktemp("champ") / "model.onnx")


@pytest.fixture(scope="module")
def test_parquet(test_frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "test.parquet"
    test_frame.to_parquet(path, index=False)
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> TrackingStore:
    """One real SQLite MLflow store for the module (creating one costs seconds); tests use their own
    experiment and model names through :func:`_context` so they cannot see each other's runs."""
    root = tmp_path_factory.mktemp("mlflow")
    return TrackingStore(f"sqlite:///{root}/mlflow.db", "tests", "test-run", (root / "artifacts").as_uri())


def _context(store: TrackingStore, experiment: str) -> TrackingStore:
    return dataclasses.replace(store, experiment=experiment)


def _register(store: TrackingStore, onnx_path: Path, name: str) -> str:
    with store.task_run("register"):
        # Explicit requirements skip MLflow's slow dependency inference; the model is the same.
        info = mlflow.onnx.log_model(
            onnx.load(str(onnx_path)), name="model", registered_model_name=name, pip_requirements=["onnx"]
        )
        version = str(info.registered_model_version)
        store.sign_version(
            name, version, store.download_version(name, version)
        )  # as components.register does
    return version


def _register_champion(store: TrackingStore, onnx_path: Path, name: str) -> str:
    version = _register(store, onnx_path, name)
    store.point_alias(name, "champion", version)
    return version


def test_metrics_match_sklearn_on_the_models_probabilities(model_dir: Path, test_frame: pd.DataFrame) -> None:
    model = load_model(model_dir)
    probability = torch_probabilities(model, model.spec.encode(test_frame)).astype(np.float64)
    y = test_frame[LABEL].to_numpy()
    predicted = (probability >= 0.5).astype(int)

    result = evaluate(model_dir, test_frame, LABEL)

    m = result.metrics
    assert m.roc_auc == pytest.approx(sk.roc_auc_score(y, probability), abs=1e-12)
    assert m.roc_auc > 0.65, "the fixture model should have learned the signal"
    assert m.pr_auc == pytest.approx(sk.average_precision_score(y, probability), abs=1e-12)
    assert m.accuracy == pytest.approx(sk.accuracy_score(y, predicted), abs=1e-12)
    assert m.f1 == pytest.approx(sk.f1_score(y, predicted), abs=1e-12)
    assert m.log_loss == pytest.approx(sk.log_loss(y, probability), rel=1e-9)
    assert m.n_rows == 800 and m.positive_rate == pytest.approx(y.mean())
    assert 0 < m.ece < 0.5
    assert [list(row) for row in result.confusion_matrix] == sk.confusion_matrix(y, predicted).tolist()
    assert np.trapezoid(result.roc_tpr, result.roc_fpr) == pytest.approx(m.roc_auc, abs=1e-9)
    assert result.roc_fpr[0] == 0.0 and result.roc_tpr[-1] == 1.0


def test_threshold_is_inclusive_and_counts_are_hand_checkable() -> None:
    y = np.array([0, 0, 1, 1, 1, 0])
    p = np.array([0.1, 0.5, 0.5, 0.9, 0.2, 0.7])  # 0.5 counts as positive

    result = score_probabilities(y, p)

    assert result.confusion_matrix == ((1, 2), (1, 2))  # tn, fp / fn, tp
    assert result.metrics.accuracy == pytest.approx(3 / 6)
    assert result.metrics.f1 == pytest.approx(2 * 2 / (2 * 2 + 2 + 1))


def test_ece_is_zero_when_calibrated_and_large_when_overconfident() -> None:
    calibrated_p = np.array([0.25] * 4 + [0.75] * 4)
    calibrated_y = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    assert expected_calibration_error(calibrated_y, calibrated_p) == pytest.approx(0.0, abs=1e-12)

    overconfident_p = np.full(10, 0.95)
    coin_flips = np.array([0, 1] * 5)
    assert expected_calibration_error(coin_flips, overconfident_p) == pytest.approx(0.45)

    # Two bins, half the rows each: 0.5 * |0.5 - 0.1| + 0.5 * |1.0 - 0.95| (1.0 falls in the last bin).
    mixed_p = np.array([0.1, 0.1, 0.9, 1.0])
    mixed_y = np.array([0, 1, 1, 1])
    assert expected_calibration_error(mixed_y, mixed_p) == pytest.approx(0.5 * 0.4 + 0.5 * 0.05)

    with pytest.raises(ValueError, match="equal-length"):
        expected_calibration_error(np.array([1, 0]), np.array([0.5]))


def test_champion_is_scored_from_its_registered_onnx_file(
    store: TrackingStore, champion_onnx: Path, test_frame: pd.DataFrame
) -> None:
    context = _context(store, "champion-scored")
    version = _register_champion(context, champion_onnx, "champion-scored")

    champion = champion_metrics(context, "champion-scored", test_frame, LABEL)

    assert champion is not None and champion.version == version
    direct = score_probabilities(
        test_frame[LABEL].to_numpy(), OnnxScorer.load(champion_onnx).predict_proba(test_frame)
    )
    assert champion.metrics == direct.metrics


def test_a_champion_signed_with_another_key_is_not_scored(
    store: TrackingStore,
    champion_onnx: Path,
    test_frame: pd.DataFrame,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mlops.governance.signing import SignatureError, generate_key_pair

    context = _context(store, "champion-foreign")
    _register_champion(context, champion_onnx, "champion-own")  # the workspace key exists
    monkeypatch.setenv("MLOPS_SIGNING_KEY", str(generate_key_pair(tmp_path / "other")[0]))
    version = _register_champion(context, champion_onnx, "champion-foreign")
    monkeypatch.delenv("MLOPS_SIGNING_KEY")
    with pytest.raises(
        SignatureError, match=f"champion-foreign version {version}: its signature does not verify"
    ):
        champion_metrics(context, "champion-foreign", test_frame, LABEL)


def _tag_split(store: TrackingStore, name: str, version: str, rule: SplitRule) -> None:
    store.tag_version(name, version, {SPLIT_TAG: rule.to_json()})  # as the register step records it


def test_a_retrained_model_with_another_seed_is_compared_on_rows_the_champion_never_saw(
    store: TrackingStore, champion_onnx: Path
) -> None:
    """The issue's case: retraining on the same data with another seed used to put champion training
    rows in the new test split. With the hash split the new test split is exactly the champion's."""
    context = _context(store, "champion-unseen")
    data = generate(SampleDataConfig(rows=3000, seed=23))
    champion_config = TrainConfig(seed=0, batch_size=64)
    version = _register_champion(context, champion_onnx, "champion-unseen")
    _tag_split(context, "champion-unseen", version, split_rule(SAMPLE_SCHEMA, champion_config))
    champion_train = set(split_frame(data, SAMPLE_SCHEMA, champion_config).train.index)

    new_test = split_frame(data, SAMPLE_SCHEMA, TrainConfig(seed=5, batch_size=64)).test
    assert not champion_train & set(new_test.index)
    champion = champion_metrics(context, "champion-unseen", new_test, LABEL)
    assert champion is not None and champion.rows == len(new_test)
    assert f"{len(new_test)} of {len(new_test)} test rows are compared" in champion.note

    # A challenger holding out more rows: the champion is scored only on its own test rows among them.
    wider = split_frame(data, SAMPLE_SCHEMA, TrainConfig(seed=5, batch_size=64, test_fraction=0.3)).test
    champion_test = set(split_frame(data, SAMPLE_SCHEMA, champion_config).test.index)
    seen = len(set(wider.index) - champion_test)
    assert seen > 100  # the wider split really holds champion training/validation rows
    scored = champion_metrics(context, "champion-unseen", wider, LABEL)
    assert scored is not None and scored.rows == len(wider) - seen
    assert f"{seen} were in champion champion-unseen version {version}'s training or validation split" in (
        scored.note
    )
    kept = wider.loc[sorted(set(wider.index) & champion_test)]
    direct = score_probabilities(kept[LABEL].to_numpy(), OnnxScorer.load(champion_onnx).predict_proba(kept))
    assert scored.metrics == direct.metrics


def test_a_champion_without_a_split_rule_is_compared_on_every_row_and_says_why(
    store: TrackingStore, champion_onnx: Path, test_frame: pd.DataFrame
) -> None:
    context = _context(store, "champion-no-rule")
    _register_champion(context, champion_onnx, "champion-no-rule")
    champion = champion_metrics(context, "champion-no-rule", test_frame, LABEL)
    assert champion is not None and champion.rows == len(test_frame) and champion.unseen is None
    assert "records no split rule" in champion.note and f"all {len(test_frame)} test rows" in champion.note


def test_a_champion_that_learnt_from_every_test_row_is_refused_with_the_fix(
    store: TrackingStore, champion_onnx: Path, test_frame: pd.DataFrame
) -> None:
    context = _context(store, "champion-all-seen")
    version = _register_champion(context, champion_onnx, "champion-all-seen")
    _tag_split(context, "champion-all-seen", version, SplitRule(SAMPLE_SCHEMA.split_columns, 0.0, 0.0))
    with pytest.raises(EvaluationError, match="split rule differs from this run's.*new model name"):
        champion_metrics(context, "champion-all-seen", test_frame, LABEL)


def test_no_champion_means_none(store: TrackingStore, champion_onnx: Path, test_frame: pd.DataFrame) -> None:
    context = _context(store, "no-champion")
    assert champion_metrics(context, "never-registered", test_frame, LABEL) is None

    _register(context, champion_onnx, "registered-without-alias")
    assert champion_metrics(context, "registered-without-alias", test_frame, LABEL) is None

    with pytest.raises(EvaluationError, match="model_name is empty"):
        champion_metrics(context, " ", test_frame, LABEL)


def test_run_evaluation_logs_metrics_plots_and_the_champion_comparison(
    store: TrackingStore,
    model_dir: Path,
    test_parquet: Path,
    test_frame: pd.DataFrame,
    champion_onnx: Path,
    tmp_path: Path,
) -> None:
    tracking = _context(store, "run-evaluation")
    first = run_evaluation(model_dir, test_parquet, LABEL, MODEL_NAME, tracking, tmp_path / "first")

    expected_auc = evaluate(model_dir, test_frame, LABEL).metrics.roc_auc
    assert first[:3] == (pytest.approx(expected_auc), 0.0, False)
    assert (first.comparison_auc, first.comparison_rows) == (0.0, 0)
    for name in (CONFUSION_FILE, ROC_FILE):
        data = (tmp_path / "first" / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000
    report = json.loads((tmp_path / "first" / METRICS_FILE).read_text())
    assert report["champion"] is None and report["test"]["roc_auc"] == pytest.approx(expected_auc)
    assert report["roc_curve"]["thresholds"][0] is None  # sklearn's leading inf, valid JSON

    version = _register_champion(tracking, champion_onnx, MODEL_NAME)
    second = run_evaluation(model_dir, test_parquet, LABEL, MODEL_NAME, tracking, tmp_path / "second")

    champion_auc = champion_metrics(tracking, MODEL_NAME, test_frame, LABEL).metrics.roc_auc  # type: ignore[union-attr]
    assert second.has_champion and second.champion_auc == pytest.approx(champion_auc)
    assert second.champion_auc != pytest.approx(second.test_auc)  # really a different model
    (run,) = tracking.search_runs(
        experiment_names=[tracking.experiment],
        filter_string="tags.`mlops.task` = 'evaluate' and tags.`mlops.has_champion` = 'true'",
        output_format="list",
    )
    assert run.data.tags["mlops.pipeline_run_id"] == tracking.pipeline_run_id
    assert run.data.params["champion_version"] == version
    assert run.data.metrics["test_roc_auc"] == pytest.approx(second.test_auc)
    assert run.data.metrics["champion_test_roc_auc"] == pytest.approx(champion_auc)
    assert {"test_pr_auc", "test_accuracy", "test_f1", "test_log_loss", "test_ece"} <= set(run.data.metrics)
    logged = {a.path for a in tracking._client.list_artifacts(run.info.run_id, "evaluation")}
    assert logged == {f"evaluation/{n}" for n in (CONFUSION_FILE, ROC_FILE, METRICS_FILE)}


def test_bad_inputs_are_rejected_with_clear_errors(
    model_dir: Path, test_frame: pd.DataFrame, tmp_path: Path
) -> None:
    with pytest.raises(
        EvaluationError, match="no label column 'default'.*Declare the label the model was trained with"
    ):
        evaluate(model_dir, test_frame.drop(columns=[LABEL]), LABEL)
    with pytest.raises(EvaluationError, match="no rows"):
        evaluate(model_dir, test_frame.head(0), LABEL)
    with pytest.raises(EvaluationError, match=r"test data label 'default' has a single class \['0'\]"):
        evaluate(model_dir, test_frame[test_frame[LABEL] == 0], LABEL)
    with pytest.raises(EvaluationError, match="must be 0/1"):
        evaluate(model_dir, test_frame.assign(**{LABEL: test_frame[LABEL] * 2}), LABEL)
    with pytest.raises(EvaluationError, match="cannot score the test data.*income"):
        evaluate(model_dir, test_frame.drop(columns=["income"]), LABEL)
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(FileNotFoundError, match="is not a saved model: model.pt is missing"):
        evaluate(tmp_path, test_frame, LABEL)


def test_failed_evaluation_leaves_a_failed_mlflow_run(
    store: TrackingStore, test_parquet: Path, tmp_path: Path
) -> None:
    tracking = _context(store, "failed-evaluation")
    with pytest.raises(FileNotFoundError, match="not a saved model"):
        run_evaluation(tmp_path, test_parquet, LABEL, MODEL_NAME, tracking, tmp_path / "out")
    (run,) = tracking.search_runs(experiment_names=[tracking.experiment], output_format="list")
    assert run.info.status == "FAILED" and run.data.tags["mlops.task"] == "evaluate"


def test_component_runs_under_the_kfp_local_runner(
    store: TrackingStore,
    model_dir: Path,
    test_parquet: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kfp import dsl, local

    from components.evaluate.component import evaluate_model

    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path / "root"))

    @dsl.pipeline(name="evaluate-test")
    def pipeline(tracking_uri: str, artifact_root: str) -> float:
        model = dsl.importer(artifact_uri=str(model_dir), artifact_class=dsl.Model)
        data = dsl.importer(
            artifact_uri=str(test_parquet),
            artifact_class=dsl.Dataset,
            metadata={SCHEMA_METADATA_KEY: section_values(SAMPLE_SCHEMA)},
        )
        task = evaluate_model(
            model=model.output,
            test_data=data.output,
            model_name="component-test",
            tracking={
                "tracking_uri": tracking_uri,
                "experiment": "component-test",
                "artifact_root": artifact_root,
            },
            pipeline_run_id="kfp-local",
        )
        return task.outputs["test_auc"]

    run = pipeline(tracking_uri=store.tracking_uri, artifact_root=store.artifact_root)

    assert 0.65 < run.output <= 1.0
    task_dir = next((tmp_path / "root").glob("evaluate-test-*/evaluate-model"))
    for output, name in (("confusion_matrix", CONFUSION_FILE), ("roc_curve", ROC_FILE)):
        assert (task_dir / output / name).read_bytes().startswith(PNG_MAGIC)
    assert json.loads((task_dir / "metrics").read_text())["test"]["roc_auc"] == pytest.approx(run.output)
