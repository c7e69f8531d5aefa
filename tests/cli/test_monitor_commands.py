"""``mlops monitor`` (argument mapping) and ``mlops feedback`` (labels stored beside the request log)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import pytest

from cli.commands.monitor import pipeline_argv
from cli.commands.run import parse_pipeline_arguments
from cli.main import build_parser, main
from mlops.data.features import FeatureSpec
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from serving.request_log import RequestLogger
from serving.request_log_blocks import Block


def test_monitor_flags_become_the_monitoring_pipelines_settings() -> None:
    args = build_parser().parse_args(
        [
            "monitor",
            "--since",
            "2026-11-01T00:00Z",
            "--model-name",
            "m",
            "--force",
            "--set",
            "window.min_rows=5",
        ]
    )
    assert isinstance(args, argparse.Namespace)
    argv = pipeline_argv(args)
    assert argv == [
        "--window.since=2026-11-01T00:00Z", "--window.model_name=m", "--retrain.force=true", "--set=window.min_rows=5"
    ]  # fmt: skip
    # Each is a setting of the monitoring pipeline, typed as mlops run monitoring types it.
    assert parse_pipeline_arguments("monitoring", argv) == {
        "window.since": "2026-11-01T00:00Z",
        "window.model_name": "m",
        "retrain.force": True,
        "window.min_rows": 5,
    }


@pytest.mark.parametrize("trigger", ["drift", "performance", "both"])
def test_the_trigger_flag_is_the_drift_trigger_setting(trigger: str) -> None:
    args = build_parser().parse_args(["monitor", "--trigger", trigger])
    assert isinstance(args, argparse.Namespace)
    assert parse_pipeline_arguments("monitoring", pipeline_argv(args)) == {"drift.trigger": trigger}


def test_an_unknown_trigger_is_refused_naming_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["monitor", "--trigger", "accuracy"])
    assert (
        "invalid choice: 'accuracy' (choose from 'drift', 'performance', 'both')" in capsys.readouterr().err
    )


def test_feedback_stores_labels_and_counts_the_ones_matching_logged_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = generate(SampleDataConfig(rows=30, seed=4))
    spec = FeatureSpec.fit(frame, SAMPLE_SCHEMA)
    block = Block("1", spec, 30)
    x = spec.encode(frame)
    for i in range(0, 30, 3):  # ten requests of three rows
        block.add(x[i : i + 3], x[i : i + 3, 0] * 0, 0, f"id-{i // 3}")
    RequestLogger(str(tmp_path / "ws" / "request-logs"), "credit-default", 1.0, 60, 100).write([block])
    labels = pd.DataFrame({"request_id": ["id-0", "id-0", "id-9", "unknown"], "request_row": [0, 2, 1, 0]})
    labels["label"] = [1, 0, 1, 1]
    labels.to_csv(tmp_path / "labels.csv", index=False)

    assert (
        main(["--workspace", str(tmp_path / "ws"), "feedback", "--labels", str(tmp_path / "labels.csv")]) == 0
    )
    out = capsys.readouterr().out
    assert "stored 4 label(s)" in out and "; 3 match logged request rows" in out
    stored = list((tmp_path / "ws" / "request-logs" / "credit-default" / "labels").glob("labels-*.parquet"))
    assert len(stored) == 1 and len(pd.read_parquet(stored[0])) == 4

    pd.DataFrame({"request_id": ["id-1"], "label": ["yes"]}).to_csv(tmp_path / "bad.csv", index=False)
    assert main(["--workspace", str(tmp_path / "ws"), "feedback", "--labels", str(tmp_path / "bad.csv")]) == 2
    assert "other than 0/1" in capsys.readouterr().err
