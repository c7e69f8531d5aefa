"""``mlops features`` end to end, as a new user runs it: init from a CSV, apply, materialize, training set."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from cli.main import main
from tests.support.feast_table import BASE, EARLY, LATE, build_feast_environment, write_features


def test_init_apply_materialize_and_a_training_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build_feast_environment()
    features = write_features(tmp_path / "input")
    workspace = ["--workspace", str(tmp_path / "ws")]
    assert (
        main(
            [*workspace, "features", "init", "--data", str(features), "--entity", "customerID", "--ttl", "7d"]
        )
        == 0
    )
    assert "feature service 'telco_churn_service'" in capsys.readouterr().out
    assert main([*workspace, "features", "apply"]) == 0
    assert "Created feature service telco_churn_service" in capsys.readouterr().out
    assert (
        main([*workspace, "features", "materialize", "--end", (BASE + timedelta(days=12)).isoformat()]) == 0
    )
    assert "telco_churn" in capsys.readouterr().out
    labels = tmp_path / "labels.csv"
    pd.DataFrame(
        [(EARLY, BASE + timedelta(days=5), 1), (LATE, BASE + timedelta(days=11), 0)],
        columns=["customerID", "label_time", "Churn"],
    ).to_csv(labels, index=False)
    out = tmp_path / "train.parquet"
    args = [
        "--service",
        "telco_churn_service",
        "--entities",
        str(labels),
        "--out",
        str(out),
        "--timestamp",
        "label_time",
    ]
    assert main([*workspace, "features", "training-set", *args]) == 0
    frame = pd.read_parquet(out)
    assert list(frame.columns[:3]) == ["customerID", "label_time", "Churn"]
    assert list(frame["tenure"]) == [2, 13]
    record = json.loads((tmp_path / "train.features.json").read_text())
    assert list(record["feature_views"]) == ["telco_churn"]


def test_a_bad_column_and_a_missing_feast_are_errors_that_say_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "t.csv"
    pd.DataFrame({"id": ["a"], "event_timestamp": ["2024-01-01"], "monthly charges": [1.0]}).to_csv(
        table, index=False
    )
    workspace = ["--workspace", str(tmp_path / "ws")]
    assert main([*workspace, "features", "init", "--data", str(table), "--entity", "id"]) == 2
    assert "feature column 'monthly charges' is not a plain identifier" in capsys.readouterr().err
    monkeypatch.setenv("MLOPS_FEAST_HOME", str(tmp_path / "nowhere"))
    assert main([*workspace, "features", "apply"]) == 2
    err = capsys.readouterr().err
    assert "no Feast 0.67.0 environment at" in err and "mlops features setup" in err
