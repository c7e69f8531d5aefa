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
    capsys.readouterr()

    # The training set's rows as a server would have logged them: no skew; one value changed: skew, named.
    served = tmp_path / "served.csv"
    frame.drop(columns=["Churn"]).to_csv(served, index=False)
    skew = ["features", "skew", "--service", "telco_churn_service", "--served", str(served)]
    skew += ["--entity", "customerID", "--timestamp", "label_time"]
    assert main([*workspace, *skew, "--min-rows", "2"]) == 0
    assert (
        "skew of feature service 'telco_churn_service': pass (2 of 2 served rows" in capsys.readouterr().out
    )
    assert main([*workspace, *skew, "--min-rows", "3"]) == 3  # two rows cannot decide
    assert "not conclusive  tenure: 0 of 2 differ" in capsys.readouterr().out
    frame.loc[1, "Contract"] = "Two year"
    frame.drop(columns=["Churn"]).to_csv(served, index=False)
    assert main([*workspace, *skew, "--min-rows", "2", "--features", "Contract,tenure"]) == 1
    shown = capsys.readouterr().out
    assert f"fail            Contract: 1 of 2 differ (50.0%); e.g. {LATE} at" in shown
    assert "online 'Two year', offline 'One year'" in shown and "pass            tenure" in shown

    # A request-log folder: its Parquet files; a row scored from inline values (no entity id) is not compared.
    log = tmp_path / "request-logs"
    log.mkdir()
    rows = frame.drop(columns=["Churn"]).assign(Contract=["Month-to-month", "One year"])
    rows.iloc[:1].to_parquet(log / "requests-1.parquet")
    rows.iloc[1:].assign(customerID=[None]).to_parquet(log / "requests-2.parquet")
    skew[skew.index("--served") + 1] = str(log)
    assert main([*workspace, *skew, "--min-rows", "1"]) == 0
    assert "pass (1 of 1 served rows joined offline)" in capsys.readouterr().out


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
