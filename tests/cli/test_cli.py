"""The ``mlops`` console script as a user runs it: a real process, real exit codes and output."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from components.data_validation.suite import DEFAULT_SUITE_PATH
from mlops.data.sample_data import SampleDataConfig, generate

MLOPS = shutil.which("mlops", path=str(Path(sys.executable).parent))


def _mlops(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert MLOPS, "the mlops console script is not installed in this environment"
    return subprocess.run([MLOPS, *args], cwd=cwd, capture_output=True, text=True, timeout=900, check=False)


@pytest.mark.slow
def test_run_training_prints_where_everything_is(tmp_path: Path) -> None:
    result = _mlops(
        "--workspace",
        str(tmp_path / "ws"),
        "run",
        "training",
        "--set",
        "sample_rows=2000",
        "--set",
        "epochs=2",
        "--set",
        "hidden_units=16",
        "--set",
        "bootstrap_resamples=0",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    lines = out.splitlines()
    assert len(lines) <= 40, out  # no library chatter: a line per step and the summary
    assert "KFP Executor" not in out and "great_expectations" not in out.lower()
    assert "model             credit-default version 1 (aliases: challenger" in out
    assert any(line.startswith("  test AUC          0.") for line in lines), out
    report = next(line for line in lines if "data report " in line).split()[-1]
    assert Path(report).is_file() and "<html" in Path(report).read_text().lower()
    steps = {line.split()[1]: line for line in lines if line.startswith("  ok ")}
    for task in ("validate-data", "train-model", "evaluate-model", "register-model", "metrics-gate"):
        assert task in steps, out
    assert "rows validated" in steps["validate-data"] and "validation AUC 0." in steps["train-model"]
    assert "test AUC 0." in steps["evaluate-model"] and "version 1" in steps["register-model"]
    # Each decision reason on its own short line.
    assert all(len(line) <= 160 for line in lines if line.startswith("    - "))
    run_dir = Path(next(line for line in lines if "pipeline run " in line).split()[-1])
    for task in steps:
        assert "KFP Executor" in (run_dir / "logs" / f"{task}.log").read_text()

    listed = _mlops("--workspace", str(tmp_path / "ws"), "runs", cwd=tmp_path)
    assert listed.returncode == 0
    row = next(line for line in listed.stdout.splitlines() if line.startswith(run_dir.name))
    assert row.split()[3] == "succeeded" and "credit-default v1" in row
    shown = _mlops("--workspace", str(tmp_path / "ws"), "runs", "show", run_dir.name, cwd=tmp_path)
    assert shown.returncode == 0 and "succeeded" in shown.stdout.splitlines()[0]
    assert sum(line.startswith("  ok ") for line in shown.stdout.splitlines()) == len(steps)


@pytest.mark.slow
def test_run_on_corrupt_file_ends_with_step_and_reason(tmp_path: Path) -> None:
    frame = generate(SampleDataConfig(sample_rows=1000, sample_seed=2))
    frame.loc[:, "home_ownership"] = "castle"
    frame.to_csv(tmp_path / "bad.csv", index=False)
    suite = str(DEFAULT_SUITE_PATH)  # user data declares its suite; this file is shaped like the sample
    result = _mlops(
        "--workspace", str(tmp_path / "ws"), "run", "training", "--data", "bad.csv", "--expectation_suite", suite,
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    lines = result.stdout.strip().splitlines()
    assert len(lines) <= 40, result.stdout
    assert any(line.startswith("Run FAILED at step validate-data") for line in lines[-12:]), result.stdout
    reasons = [line for line in lines if line.startswith("    - ")]
    assert 1 <= len(reasons) <= 5 and any("home_ownership" in r and "castle" in r for r in reasons), reasons
    assert lines[-1].startswith("  log ") and lines[-1].endswith("/logs/validate-data.log")
    assert "ValidationFailed" in Path(lines[-1].split()[-1]).read_text()

    listed = _mlops("--workspace", str(tmp_path / "ws"), "runs", cwd=tmp_path)
    assert "failed" in listed.stdout and "failed at validate-data" in listed.stdout


def test_unknown_parameter_exits_2_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--workspace", str(tmp_path / "ws"), "run", "training", "--set", "learning_rat=0.1"])
    assert code == 2
    assert "unknown parameter 'learning_rat'; did you mean 'learning_rate'" in capsys.readouterr().err


def test_missing_data_file_is_named(tmp_path: Path) -> None:
    result = _mlops(
        "--workspace", str(tmp_path / "ws"), "run", "training", "--data", "nope.csv", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "data_uri 'nope.csv': no such file" in result.stderr


def test_compile_writes_yaml(tmp_path: Path) -> None:
    assert main(["compile", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "training.yaml").read_text().startswith("# PIPELINE DEFINITION")


@pytest.mark.parametrize("command", [["run", "training"], ["run", "tuning"], ["tune"]])
def test_help_lists_every_parameter_with_default_and_description(command: list[str], tmp_path: Path) -> None:
    from pipelines.catalog import pipelines

    result = _mlops(*command, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())  # argparse wraps lines
    pipeline = pipelines()["training" if command == ["run", "training"] else "tuning"]
    for name, spec in pipeline.component_spec.inputs.items():
        assert f"--{name}" in text, name
        first_words = " ".join((spec.description or "").split()[:4])
        assert first_words in text, f"{name}: description missing"
    assert "Maximum number of epochs. (default: 20)" in text
    assert "(default: credit-default)" in text


def test_flags_are_typed_like_set_and_name_the_parameter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--workspace", str(tmp_path / "ws"), "run", "training", "--epochs", "three"])
    assert code == 2
    assert "--epochs 'three': expected integer (e.g. epochs=3)" in capsys.readouterr().err
    code = main(["--workspace", str(tmp_path / "ws"), "run", "training", "--expectation_suite", "none.json"])
    assert code == 2
    assert "expectation_suite 'none.json': no such file" in capsys.readouterr().err
    assert not (tmp_path / "ws" / "mlflow.db").exists()  # nothing ran


def test_ui_points_at_the_tracking_server_instead_of_an_empty_local_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://user:secret@mlflow.example:5000")
    assert main(["--workspace", str(tmp_path / "ws"), "ui"]) == 0
    out = capsys.readouterr().out
    assert "mlflow.example:5000" in out and "secret" not in out
    assert not (tmp_path / "ws").exists()  # no empty store was created


def test_text_that_would_corrupt_a_task_input_is_refused_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--workspace", str(tmp_path / "ws"), "run", "training", "--model_name", 'a"b'])
    assert code == 2
    assert "model_name 'a\"b': a double quote or backslash cannot be passed" in capsys.readouterr().err
    assert not (tmp_path / "ws" / "pipeline-runs").exists()


def test_out_of_range_settings_are_refused_before_any_step_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--workspace", str(tmp_path / "ws"), "run", "training", "--epochs", "0", "--auc_floor", "2"])
    assert code == 2
    err = capsys.readouterr().err
    assert "epochs 0: Input should be greater than or equal to 1" in err
    assert "auc_floor 2.0: Input should be less than or equal to 1" in err
    code = main(
        ["--workspace", str(tmp_path / "ws"), "run", "training", "--batch_size", "100", "--nproc", "3"]
    )
    assert code == 2
    assert "batch_size 100 is not divisible by nproc 3" in capsys.readouterr().err
    assert not (tmp_path / "ws" / "pipeline-runs").exists()
