"""Training from the feature store, as a new user runs it: an entity table (ids, label times, labels) and
``mlops run training --features SERVICE``; the registered version's ``mlops lineage`` names the service,
its view's definition hash and the entity table's digest."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cli.main import main
from mlops.features.environment import FeastEnvironment
from mlops.features.repository import FeatureRepo
from tests.support.feast_table import churn_features

pytestmark = pytest.mark.slow

SMALLEST = [
    "--train.epochs", "2", "--train.batch_size", "64", "--train.model.hidden_units", "8",
]  # fmt: skip


def entity_table(path: Path) -> Path:
    """Labels dated 1 hour to 6 days after each feature value (within the 7-day TTL), churn more likely
    for short tenure: about 150 rows of the session's churn-like feature table."""
    rng = np.random.default_rng(0)
    rows = []
    for row in churn_features().itertuples():
        for hours in (1, 30, 70, 100, 144):
            churn = int(rng.random() < (0.8 if row.tenure < 8 else 0.2))
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
    store = ["--repo", str(feature_repo.path), "--timestamp", "label_time"]
    joined = tmp_path / "churn.parquet"
    service = feature_repo.service
    assert main([*workspace, "features", "training-set", "--service", service, "--entities", str(labels),
                 "--out", str(joined), *store]) == 0  # fmt: skip
    declare = [
        "--data",
        str(joined),
        "--label",
        "Churn",
        "--subject-key",
        "customerID",
        "--ignore",
        "label_time",
    ]
    assert main([*workspace, "data", "init", *declare, "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    code = main(
        [*workspace, "run", "training", "--features", service, "--data", str(labels),
         "--schema", str(tmp_path / "churn.schema.yaml"), "--data.features.repo", str(feature_repo.path),
         "--data.features.timestamp", "label_time", *SMALLEST]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().out[-3000:]
    capsys.readouterr()
    assert main([*workspace, "lineage", "churn@challenger"]) == 0
    out = capsys.readouterr().out
    assert f"feature service    {service}" in out
    assert f"view {feature_repo.view}" in out and "sha256:" in out
    assert f"({labels})" in out  # the entity table, by its path and digest
