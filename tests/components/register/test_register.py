"""Registration against a real MLflow SQLite registry with a real exported ONNX model."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pandas as pd
import pytest
import torch

from components.register.version_registration import register_onnx_model
from mlops.data.features import FeatureSpec
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.model.onnx_model import OnnxScorer
from mlops.origin_facts import file_sha256
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import Lineage, feature_lineage_tags
from training.config import ModelConfig
from training.model import TabularNet
from training.onnx_export import export_onnx

LINEAGE = Lineage(
    kfp_run_id="run-1",
    git_commit="abc123",
    dataset_digest="d" * 64,
    suite_version="1.0.0",
    package_version="0.1.0",
    train_run_id="train-run",
)
FEATURE_RECORD = {
    "feature_service": "churn_service",
    "project": "mlops",
    "feature_views": {"churn": {"features": ["tenure"], "ttl_seconds": 0, "definition_sha256": "a" * 64}},
    "entity_table": {"uri": "/data/labels.csv", "sha256": "e" * 64, "rows": 3},
}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return generate(SampleDataConfig(rows=600, seed=5))


@pytest.fixture(scope="module")
def onnx_dir(frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    model = TabularNet(FeatureSpec.fit(frame, SAMPLE_SCHEMA), ModelConfig(hidden_units=(8,))).eval()
    directory = tmp_path_factory.mktemp("onnx")
    export_onnx(model, directory / "model.onnx")
    return directory


def test_registers_version_with_lineage_digest_and_challenger_alias_after_the_gates(
    onnx_dir: Path, frame: pd.DataFrame, tracking: TrackingStore, tmp_path: Path
) -> None:
    from components.promotion_gate.combine import record_overall
    from mlops.gates import Decision
    from mlops.governance import audit

    first = register_onnx_model(onnx_dir, frame, "credit", LINEAGE, tracking)
    # Trained on a training set from the feature store: its lineage record's tags join the version's.
    from_store = feature_lineage_tags(FEATURE_RECORD)
    second = register_onnx_model(onnx_dir, frame, "credit", LINEAGE, tracking, feature_tags=from_store)
    assert (first.version, second.version) == ("1", "2")

    client = tracking._client
    # No alias until every gate has decided: a run whose gate crashes leaves no challenger behind.
    assert client.get_model_version("credit", second.version).aliases == []
    record_overall(Decision("overall", "promote", "ok", {}), "credit", first.version, tracking)
    record_overall(Decision("overall", "reject", "auc", {}), "credit", second.version, tracking)
    version = client.get_model_version("credit", second.version)
    assert version.aliases == ["challenger"]  # the alias moved off version 1
    assert client.get_model_version("credit", first.version).aliases == []
    moves = [e for e in audit.read_events(tracking_uri=tracking.tracking_uri) if e.action == "alias.moved"]
    assert [(e.details["from"], e.details["to"], e.details["decision"]) for e in moves] == [
        (None, "1", "promote"),
        ("1", "2", "reject"),
    ]
    for key, value in {
        "mlops.kfp_run_id": "run-1",
        "mlops.git_commit": "abc123",
        "mlops.dataset_digest": "d" * 64,
        "mlops.suite_version": "1.0.0",
        "mlops.package_version": "0.1.0",
        "mlops.train_run_id": "train-run",
    }.items():
        assert version.tags[key] == value
    assert version.tags["mlops.features.service"] == "churn_service"
    assert "mlops.features.service" not in client.get_model_version("credit", first.version).tags
    registered = [
        e for e in audit.read_events(tracking_uri=tracking.tracking_uri) if e.action == "model.registered"
    ]
    assert [e.details.get("features.entity_table_sha256") for e in registered] == [None, "e" * 64]

    # The recorded digest is the digest of exactly what a server downloads, and it scores.
    challenger = tracking.alias_version("credit", "challenger")
    assert challenger == second.version
    downloaded = tracking.download_version("credit", challenger, tmp_path / "served")
    assert version.tags["mlops.onnx_sha256"] == file_sha256(downloaded / "model.onnx") == second.onnx_sha256
    assert not list(downloaded.glob("*.data")), "registered model must be one self-contained file"
    scorer = OnnxScorer.load(downloaded / "model.onnx")
    assert scorer.predict_proba(frame.head(3)).shape == (3,)

    # Signature and input example come from the encoded features.
    info = mlflow.models.Model.load(str(tracking.download_version("credit", "2", tmp_path / "v2")))
    assert info.signature is not None
    assert [spec.shape for spec in info.signature.inputs.inputs] == [(-1, 20)]

    run = client.get_run(client.get_model_version("credit", "2").run_id)
    assert run.data.tags["mlops.task"] == "register"
    assert run.data.tags["mlops.pipeline_run_id"] == "test-run"


def test_bad_inputs_register_nothing(
    onnx_dir: Path, frame: pd.DataFrame, tracking: TrackingStore, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=r"model name 'a/b' is invalid"):
        register_onnx_model(onnx_dir, frame, "a/b", LINEAGE, tracking)
    with pytest.raises(FileNotFoundError, match="holds no model.onnx; run the export_onnx step first"):
        register_onnx_model(tmp_path, frame, "credit", LINEAGE, tracking)
    assert tracking._client.search_registered_models() == []


def test_registration_stores_a_reference_profile(
    onnx_dir: Path, frame: pd.DataFrame, tracking: TrackingStore
) -> None:
    registered = register_onnx_model(onnx_dir, frame, "profiled", LINEAGE, tracking, label="default")
    profile = tracking.reference_profile("profiled", registered.version)

    assert profile.rows == len(frame)
    assert profile.feature_names == SAMPLE_SCHEMA.features
    income = next(p for p in profile.numeric if p.name == "income")
    assert income.missing == int(frame["income"].isna().sum())
    assert sum(income.counts) == income.rows == int(frame["income"].notna().sum())
    assert income.std == pytest.approx(float(frame["income"].dropna().std(ddof=0)))
    purpose = next(p for p in profile.categorical if p.name == "loan_purpose")
    assert (
        dict(zip(purpose.categories, purpose.counts, strict=True))
        == frame["loan_purpose"].value_counts().to_dict()
    )
    scores = OnnxScorer.load(onnx_dir / "model.onnx").predict_proba(frame)
    assert profile.score.mean == pytest.approx(float(scores.mean()), rel=1e-5)
    assert profile.calibration is not None and set(profile.metrics) == {
        "accuracy",
        "roc_auc",
        "positive_rate",
    }
