"""``mlops rollout`` history/status/start argument handling (the rollout itself: tests/delivery/rollout)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main
from delivery.rollout.config import RolloutConfig
from delivery.rollout.state import RolloutState, StateStore
from mlops.governance import audit


def test_history_answers_which_version_served_with_what_traffic_when(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = {"model_name": "m", "champion": "1", "challenger": "2"}
    audit.record(
        "rollout.step",
        "m/2",
        {**common, "stage": "shadow", "traffic": {"1": 100}, "shadow": "2"},
        workspace_root=tmp_path,
    )
    audit.record("rollout.interval", "m/2", {**common, "outcome": "pass"}, workspace_root=tmp_path)
    audit.record(
        "rollout.step",
        "m/2",
        {**common, "stage": "10", "traffic": {"1": 90, "2": 10}, "shadow": None},
        workspace_root=tmp_path,
    )
    audit.record(
        "rollout.step",
        "other/5",
        {"model_name": "other", "stage": "5", "traffic": {"4": 95, "5": 5}},
        workspace_root=tmp_path,
    )
    audit.record(
        "rollout.rolled_back",
        "m/2",
        {**common, "traffic": {"1": 100}, "reason": "error_rate gate"},
        workspace_root=tmp_path,
    )
    assert main(["--workspace", str(tmp_path), "rollout", "history", "--model-name", "m"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert len(lines) == 3  # the interval and the other model's step are not traffic changes of m
    assert "step" in lines[0] and "v1 100 % + v2 shadow" in lines[0]
    assert "v1 90 %, v2 10 %" in lines[1]
    assert "rolled_back" in lines[2] and "v1 100 %" in lines[2] and "error_rate gate" in lines[2]


def test_status_reads_the_saved_state_and_says_when_there_is_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--workspace", str(tmp_path), "rollout", "status", "--model-name", "m"]) == 2
    assert "no rollout of 'm' recorded" in capsys.readouterr().err
    state = RolloutState(
        model_name="m", champion="1", challenger="2", config=RolloutConfig(), target="local x"
    )
    StateStore(tmp_path).save(state.advance(stage=2, intervals=3, reason="waiting for more traffic"))
    assert main(["--workspace", str(tmp_path), "rollout", "status", "--model-name", "m"]) == 0
    out = capsys.readouterr().out
    assert "version 2 vs champion 1 — running at stage 25 (3 intervals" in out


def test_bad_canary_steps_are_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--workspace", str(tmp_path), "rollout", "start", "--canary-steps", "5,x"]) == 2
    assert "--canary-steps '5,x': give percentages like 5,25,50,100" in capsys.readouterr().err
