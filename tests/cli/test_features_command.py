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

    # A model's request-log folder, read as the monitor reads it; a row scored from inline values (no entity
    # id) is not compared; --since leaves out the rows logged before it (and files written before it unopened).
    log = tmp_path / "request-logs" / "churn-model"
    log.mkdir(parents=True)
    rows = frame.drop(columns=["Churn"]).assign(Contract=["Month-to-month", "One year"])
    rows = rows.rename(columns={"label_time": "timestamp"})
    for name, day, part in (("a", 6, rows.iloc[:1]), ("b", 12, rows.iloc[1:].assign(customerID=[None]))):
        part.to_parquet(
            log / f"requests-{(BASE + timedelta(days=day)).strftime('%Y%m%dT%H%M%S%f')}Z-{name}.parquet"
        )
    skew[skew.index("--served") + 1] = str(log)
    skew[skew.index("--timestamp") + 1] = "timestamp"
    assert main([*workspace, *skew, "--min-rows", "1"]) == 0
    assert "pass (1 of 1 served rows joined offline)" in capsys.readouterr().out
    since = (BASE + timedelta(days=8)).isoformat()
    assert main([*workspace, *skew, "--min-rows", "1", "--since", since]) == 3
    capsys.readouterr()
    assert main([*workspace, *skew, "--since", (BASE + timedelta(days=30)).isoformat()]) == 2
    assert "written at or after" in capsys.readouterr().err
