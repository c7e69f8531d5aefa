"""Key figures, reasons and run records read from what steps leave behind."""

from __future__ import annotations

import json
from pathlib import Path

from cli.console.display import Step, duration
from cli.console.figures import exception_reason, failed_checks, split_reasons, step_figure
from cli.console.record import RunRecord, all_runs
from mlops.progress import Progress, parse


def _executor_output(task_dir: Path, params: dict, artifacts: dict) -> None:
    task_dir.mkdir(parents=True)
    body = {
        "parameterValues": params,
        "artifacts": {
            k: {"artifacts": [{"name": k, "uri": "", "metadata": v}]} for k, v in artifacts.items()
        },
    }
    (task_dir / "executor_output.json").write_text(json.dumps(body))


def test_step_figures_come_from_the_steps_outputs(tmp_path: Path) -> None:
    _executor_output(
        tmp_path / "train-model",
        {"val_auc": 0.71234},
        {"model": {"best_epoch": 3}, "metrics": {"epochs_run": 5}},
    )
    _executor_output(
        tmp_path / "evaluate-model", {"test_auc": 0.69, "has_champion": True, "champion_auc": 0.7}, {}
    )
    _executor_output(tmp_path / "register-model-2", {"version": "4"}, {})
    assert (
        step_figure("train-model", tmp_path / "train-model") == "best epoch 3 of 5 run, validation AUC 0.7123"
    )
    assert step_figure("evaluate-model", tmp_path / "evaluate-model") == "test AUC 0.6900, champion 0.7000"
    assert step_figure("register-model-2", tmp_path / "register-model-2") == "version 4"
    assert step_figure("evaluate-model", tmp_path / "missing") == "test AUC ?"
    assert step_figure("some-new-step", tmp_path / "train-model") == ""


def test_the_drift_check_shows_its_decision_and_the_kinds_of_finding(tmp_path: Path) -> None:
    _executor_output(tmp_path / "check-drift", {"Output": "none"}, {})
    assert step_figure("check-drift", tmp_path / "check-drift") == "decision: none"
    findings = [
        "bias drift: sex=female selection rate 0.31 …",
        "attribution drift: the feature-importance ranking changed …",
        "bias drift: sex=male selection rate 0.12 …",
    ]
    (tmp_path / "check-drift" / "report_json").write_text(json.dumps({"findings": findings}))
    assert (
        step_figure("check-drift", tmp_path / "check-drift")
        == "decision: none; findings: bias drift, attribution drift"
    )


def test_reasons_split_on_top_level_semicolons_only() -> None:
    text = "metrics gate: auc 0.6 < 0.7; model_validation gate: a (1 of 2; worst 3); b [x; y]"
    assert split_reasons(text) == [
        "metrics gate: auc 0.6 < 0.7",
        "model_validation gate: a (1 of 2; worst 3)",
        "b [x; y]",
    ]


def test_failed_checks_name_column_expectation_and_observed_values(tmp_path: Path) -> None:
    report = {
        "suite_name": "credit",
        "suite_version": "1.0.0",
        "checks": [
            {
                "expectation": "dataset_schema",
                "column": None,
                "success": True,
                "observed_text": "ok",
                "kwargs": {},
            },
            {
                "expectation": "expect_column_values_to_not_be_null",
                "column": "income",
                "success": False,
                "observed_text": "40.60% null (609 of 1500 rows)",
                "kwargs": {"column": "income", "mostly": 0.9},
            },
        ],
    }
    (tmp_path / "report_json").write_text(json.dumps(report))
    header, lines = failed_checks(tmp_path / "report_json") or ("", [])
    assert header == "1 of 2 checks failed (suite credit 1.0.0)"
    assert lines == [
        "income: expect_column_values_to_not_be_null: 40.60% null (609 of 1500 rows) (mostly=0.9)"
    ]
    assert failed_checks(tmp_path / "absent.json") is None


def test_exception_reason_is_the_last_exception_in_the_log() -> None:
    log = [
        "Traceback (most recent call last):",
        "ValueError: an earlier one",
        "components.x.Failed: model failed: tests a (1; 2); b; c",
    ]
    assert exception_reason(log) == ("Failed: model failed", ["tests a (1; 2)", "b", "c"])
    assert exception_reason(["nothing here"]) == ("the step exited with an error", [])


def test_progress_lines_round_trip_and_garbage_is_ignored() -> None:
    event = Progress("trial", 8, advance=1, text="trial 3 complete")
    assert parse("    " + event.line()) == event
    assert parse("::mlops-progress:: {not json") is None
    assert parse('::mlops-progress:: {"unit": "epoch"}') is None  # missing total
    assert parse("print ::mlops-progress:: {}") is None


def test_step_lines_and_durations() -> None:
    assert duration(4.26) == "4.3s" and duration(89) == "1m29s" and duration(3720) == "1h02m"
    assert (
        Step("train-model", "finished", 12.0, "test AUC 0.7").line()
        == "  ok     train-model              12.0s  test AUC 0.7"
    )
    assert Step("validate-data", "failed", 1.0).line().split()[:2] == ["FAILED", "validate-data"]


def test_runs_are_listed_newest_first_and_an_unrecorded_folder_reads_unknown(tmp_path: Path) -> None:
    older = tmp_path / "training-2026-01-01-10-00-00-000001"
    newer = tmp_path / "training-2026-01-02-10-00-00-000001"
    interrupted = tmp_path / "tuning-2026-01-03-10-00-00-000001"
    for folder in (older, newer, interrupted):
        folder.mkdir()
    RunRecord(older.name, "training", "2026-01-01 10:00:00", "failed", failed_step="validate-data").save(
        older
    )
    RunRecord(newer.name, "training", "2026-01-02 10:00:00", "succeeded", facts={"model": "m v2"}).save(newer)
    runs = all_runs(tmp_path)
    assert [(r.id, r.status) for r in runs] == [
        (interrupted.name, "unknown"),
        (newer.name, "succeeded"),
        (older.name, "failed"),
    ]
    assert runs[0].pipeline == "tuning" and runs[0].started == "2026-01-03 10:00:00"
    assert runs[1].facts == {"model": "m v2"}
