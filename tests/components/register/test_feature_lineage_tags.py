"""A model trained on a training set from the feature store carries its feature lineage as version tags, and
``mlops lineage`` prints them in its chain."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch

from components.register.register import register_onnx_model
from mlops.data.features import FeatureSpec
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.governance.provenance import lineage_lines
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import Lineage, feature_lineage_tags
from training.config import ModelConfig
from training.model import TabularNet
from training.onnx_export import export_onnx

RECORD = {
    "feature_service": "telco_churn_service",
    "project": "mlops",
    "feature_views": {
        "telco_churn": {
            "features": ["tenure", "Contract"],
            "join_keys": ["customerID"],
            "ttl_seconds": 604800,
            "definition_sha256": "a" * 64,
        }
    },
    "entity_table": {"uri": "/data/labels.csv", "sha256": "e" * 64, "rows": 3},
    "training_set": {"path": "/x/sample", "sha256": "t" * 64, "rows": 3},
    "rows_without_features": 0,
}


def test_the_record_becomes_tags_and_the_lineage_prints_them() -> None:
    tags = feature_lineage_tags(RECORD)
    assert tags["mlops.features.service"] == "telco_churn_service"
    assert tags["mlops.features.view.telco_churn"] == f"sha256:{'a' * 64} ttl=604800s features=tenure,Contract"
    assert tags["mlops.features.entity_table_sha256"] == "e" * 64
    assert feature_lineage_tags({}) == {}
    text = "\n".join(lineage_lines("churn", "champion", "1", tags, []))
    assert "feature service    telco_churn_service (Feast project mlops)" in text
    assert f"view telco_churn   sha256:{'a' * 64} ttl=604800s features=tenure,Contract" in text
    assert f"entity table       sha256 {'e' * 64} (/data/labels.csv)" in text
    assert "feature service" not in "\n".join(lineage_lines("m", "champion", "1", {}, []))


def test_registration_tags_the_version_and_audits_it(tracking: TrackingStore, tmp_path: Path) -> None:
    from mlops.governance import audit

    frame = generate(SampleDataConfig(rows=200, seed=5))
    torch.manual_seed(0)
    model = TabularNet(FeatureSpec.fit(frame, SAMPLE_SCHEMA), ModelConfig(hidden_units=(4,))).eval()
    export_onnx(model, tmp_path / "model.onnx")
    lineage = Lineage("run-1", "", "d" * 64, "1.0.0", "0.1.0", "train-run")
    registered = register_onnx_model(
        tmp_path, pd.DataFrame(frame), "churn", lineage, tracking, feature_tags=feature_lineage_tags(RECORD)
    )
    tags = tracking._client.get_model_version("churn", registered.version).tags
    assert tags["mlops.features.service"] == "telco_churn_service"
    assert tags["mlops.features.entity_table_uri"] == "/data/labels.csv"
    (event,) = [e for e in audit.read_events(tracking_uri=tracking.tracking_uri) if e.action == "model.registered"]
    assert event.details["features.service"] == "telco_churn_service"
