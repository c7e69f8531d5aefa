"""``mlops runs`` and ``mlops runs show`` over run records in a workspace (no pipeline needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.console.record import RunRecord
from cli.main import main


def _workspace(tmp_path: Path) -> Path:
    runs = tmp_path / "ws" / "pipeline-runs"
    ok = runs / "training-2026-01-02-10-00-00-000001"
    bad = runs / "training-2026-01-03-10-00-00-000001"
    for folder in (ok, bad):
        folder.mkdir(parents=True)
    RunRecord(
        ok.name,
        "training",
        "2026-01-02 10:00:00",
        "succeeded",
        seconds=95.0,
        steps=[{"name": "evaluate-model", "status": "finished", "seconds": 3.0, "figure": "test AUC 0.7700"}],
        reasons=["metrics gate: test_auc 0.77 >= floor 0.70"],
        facts={"model": "credit-default v3", "decision": "promote", "test AUC": "0.7700"},
    ).save(ok)
    RunRecord(
        bad.name,
        "training",
        "2026-01-03 10:00:00",
        "failed",
        seconds=20.0,
        failed_step="validate-data",
        reasons=["1 of 91 checks failed", "income: 40% null"],
    ).save(bad)
    return tmp_path / "ws"


def test_runs_lists_status_duration_model_and_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = _workspace(tmp_path)
    assert main(["--workspace", str(workspace), "runs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["ID", "STARTED", "STATUS", "DURATION"]
    assert lines[1].split()[3:5] == ["failed", "20.0s"] and lines[1].endswith("failed at validate-data")
    assert lines[2].split()[3:] == ["succeeded", "1m35s", "credit-default", "v3", "promote"]


def test_runs_show_summarises_one_run_by_unique_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = _workspace(tmp_path)
    assert main(["--workspace", str(workspace), "runs", "show", "training-2026-01-02"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Run training-2026-01-02-10-00-00-000001 (training): succeeded in 1m35s")
    assert "  ok     evaluate-model            3.0s  test AUC 0.7700" in out
    assert "    - metrics gate: test_auc 0.77 >= floor 0.70" in out


def test_runs_show_the_status_and_every_undecided_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "ws" / "pipeline-runs"
    folder = runs / "training-2026-01-04-10-00-00-000001"
    folder.mkdir(parents=True)
    undecided = "model_validation: race demographic_parity_difference 0.2200 is beyond the max 0.1000\nmodel_validation: b"
    RunRecord(
        folder.name,
        "training",
        "2026-01-04 10:00:00",
        "succeeded",
        seconds=10.0,
        facts={
            "model": "compas v2",
            "decision": "reject",
            "status": "not_conclusive",
            "undecided": undecided,
        },
    ).save(folder)
    assert main(["--workspace", str(tmp_path / "ws"), "runs"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith("reject (not conclusive, 2 undecided)")
    assert main(["--workspace", str(tmp_path / "ws"), "runs", "show", folder.name]) == 0
    out = capsys.readouterr().out
    assert "  status            not conclusive" in out
    assert "  not conclusive    2 check(s) the test rows could not decide:" in out
    assert "    - model_validation: race demographic_parity_difference 0.2200 is beyond the max 0.1000" in out


def test_runs_show_an_ambiguous_or_unknown_id_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = _workspace(tmp_path)
    assert main(["--workspace", str(workspace), "runs", "show", "training-2026"]) == 2
    assert "2 runs with id 'training-2026'" in capsys.readouterr().err
    assert main(["--workspace", str(workspace), "runs", "show", "nope"]) == 2
    assert "no run with id 'nope'" in capsys.readouterr().err


def test_runs_in_an_empty_workspace_says_how_to_start_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--workspace", str(tmp_path / "empty"), "runs"]) == 0
    assert "start one with `mlops run training`" in capsys.readouterr().out
