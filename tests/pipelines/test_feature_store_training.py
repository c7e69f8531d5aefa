"""Training from the feature store, as a new user runs it: an entity table (ids, label times, labels) and
``mlops run training --features SERVICE``; the registered version's ``mlops lineage`` names the service,
its view's definition hash and the entity table's digest."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cli.main import main
from mlops.features.environment import FeastEnvironment
from mlops.features.repository import FeatureRepo
from tests.support.feast_table import BASE, EARLY, churn_features

pytestmark = pytest.mark.slow

SMALLEST = [
    "--train.epochs", "2", "--train.batch_size", "64", "--train.model.hidden_units", "8",
]  # fmt: skip


SCHEMA = """
label: Churn
positive_label: '1'
negative_label: '0'
numeric_features: [tenure, MonthlyCharges, TotalCharges]
categorical_features: [Contract]
ignored_columns: [customerID, label_time]
subject_key: customerID
model_name: churn
expectation_suite: churn.suite.json
"""
SUITE = {
    "name": "churn",
    "version": "1.0.0",
    "expectations": [{"type": "expect_column_to_exist", "kwargs": {"column": "tenure"}}],
}


def entity_table(path: Path) -> Path:
    """Labels dated 1 hour to 6 days after each feature value (within the 7-day TTL), churn more likely
    for short tenure: 350 rows over the session's churn-like feature table (test split above the 20 rows
    validate-model needs to explain)."""
    rng = np.random.default_rng(0)
    rows = []
    for row in churn_features().itertuples():
        for hours in range(1, 166, 12):  # 14 label times within the TTL
            churn = int(rng.random() < (0.7 if row.tenure < 8 else 0.3))
            rows.append((row.customerID, row.event_timestamp + timedelta(hours=hours), churn))
    pd.DataFrame(rows, columns=["customerID", "label_time", "Churn"]).to_csv(path, index=False)
    return path


def test_run_training_with_features_registers_a_version_whose_lineage_names_the_service(
    feast_environment: FeastEnvironment,
    feature_repo: FeatureRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    workspace = ["--workspace", str(tmp_path / "ws")]
    labels = entity_table(tmp_path / "labels.csv")
    service = feature_repo.service
    schema = tmp_path / "churn.schema.yaml"  # as `mlops data init` writes it for the joined set, shortened
    schema.write_text(SCHEMA)
    (tmp_path / "churn.suite.json").write_text(json.dumps(SUITE))
    code = main(
        [*workspace, "run", "training", "--features", service, "--data", str(labels),
         "--schema", str(schema), "--data.features.repo", str(feature_repo.path),
         "--data.features.timestamp", "label_time", *SMALLEST]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().out[-3000:]
    # prepare-data's output: each label joined with the values known at its time, never a later one.
    (step,) = (tmp_path / "ws" / "pipeline-runs").glob("training-*/prepare-data")
    joined = pd.read_parquet(step / "sample")
    early = joined[joined["customerID"] == EARLY]
    before = pd.to_datetime(early["label_time"], utc=True) < pd.Timestamp(BASE + timedelta(days=10))
    assert set(early["tenure"][before]) == {2} and set(early["tenure"][~before]) == {12}
    assert len(joined) == len(pd.read_csv(labels)) == 350
    record = json.loads((step / "sample.features.json").read_text())
    assert record["feature_service"] == service and list(record["feature_views"]) == [feature_repo.view]
    capsys.readouterr()
    assert main([*workspace, "lineage", "churn@challenger"]) == 0
    out = capsys.readouterr().out
    assert f"feature service    {service} (Feast project mlops, repository {feature_repo.path})" in out
    assert f"view {feature_repo.view}" in out and "sha256:" in out
    assert f"({labels})" in out  # the entity table, by its path and digest
