"""The ``mlops`` console script as a user runs it: a real process, real exit codes and output.

What a successful `mlops run training` prints (a line per step, the summary, where everything is) is checked
on the first run of tests/pipelines/test_governance.py, the same command in a real process: a run costs
minutes, and that scenario makes one anyway.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from cli.parameters import shown
from components.data_validation.suite import DEFAULT_SUITE_PATH
from mlops.data.sample_data import SampleDataConfig, generate

MLOPS = shutil.which("mlops", path=str(Path(sys.executable).parent))


def _mlops(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert MLOPS, "the mlops console script is not installed in this environment"
    return subprocess.run([MLOPS, *args], cwd=cwd, capture_output=True, text=True, timeout=900, check=False)


@pytest.mark.slow
def test_run_on_corrupt_file_ends_with_step_and_reason(tmp_path: Path) -> None:
    frame = generate(SampleDataConfig(rows=1000, seed=2))
    frame.loc[:, "home_ownership"] = "castle"
    frame.to_csv(tmp_path / "bad.csv", index=False)
    suite = str(DEFAULT_SUITE_PATH)  # user data declares its suite; this file is shaped like the sample
    result = _mlops(
        "--workspace", str(tmp_path / "ws"), "run", "training", "--data", "bad.csv", "--validation.expectation_suite", suite,
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


def test_unknown_setting_exits_2_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--workspace", str(tmp_path / "ws"), "run", "training", "--set", "train.learning_rat=0.1"])
    assert code == 2
    err = capsys.readouterr().err
    assert (
        "unknown setting 'train.learning_rat' of pipeline 'training'; did you mean 'train.learning_rate'"
        in err
    )
    assert "train's settings: train.epochs, " in err
    code = main(["--workspace", str(tmp_path / "ws"), "run", "training", "--train.learning-rat", "0.1"])
    assert code == 2  # a misspelt flag is named the same way
    assert "did you mean 'train.learning_rate'" in capsys.readouterr().err
    code = main(["--workspace", str(tmp_path / "ws"), "run", "training", "--set", "learning_rate=0.1"])
    assert code == 2  # a pre-sections name points at its address
    assert "unknown setting 'learning_rate' of pipeline 'training'; did you mean 'train.learning_rate'" in (
        capsys.readouterr().err
    )


def test_missing_data_file_is_named(tmp_path: Path) -> None:
    result = _mlops(
        "--workspace", str(tmp_path / "ws"), "run", "training", "--data", "nope.csv", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "data.uri 'nope.csv': no such file" in result.stderr


def test_compile_writes_yaml(tmp_path: Path) -> None:
    assert main(["compile", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "training.yaml").read_text().startswith("# PIPELINE DEFINITION")


@pytest.mark.parametrize(
    ("command", "pipeline"),
    [
        (["run", "training"], "training"),
        (["run", "tuning"], "tuning"),
        (["tune"], "tuning"),
        (["run", "monitoring"], "monitoring"),
    ],
)
def test_help_lists_every_setting_under_its_sections_heading(
    command: list[str], pipeline: str, tmp_path: Path
) -> None:
    from pipelines.catalog import forms

    result = _mlops(*command, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    form = forms()[pipeline]
    # argparse prints a group as "<title>:" at the margin, then its options indented.
    blocks: dict[str, str] = {}
    heading = ""
    for line in result.stdout.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            heading = line.removesuffix(":")
            blocks[heading] = ""
        elif heading:
            blocks[heading] += " " + line.strip()
    sections = list(dict.fromkeys(setting.section for setting in form.settings))
    assert [h.removesuffix(" settings") for h in blocks if h.endswith(" settings")] == sections
    for setting in form.settings:
        block = " ".join(blocks[f"{setting.section} settings"].split())  # argparse wraps lines
        assert f"--{setting.address} " in block, setting.address
        first_words = " ".join(setting.description.split()[:4])
        assert first_words in block, f"{setting.address}: description missing"
        assert f"(default: {shown(setting.default)}" in block, f"{setting.address}: default missing"
    if pipeline == "training":
        train = " ".join(blocks["train settings"].split())
        assert "--train.epochs INT Maximum number of epochs. (default: 20)" in train
        assert "--registration.model_name TEXT" in blocks["registration settings"]
        assert "(default: credit-default; per run: its own field on the KFP form)" in " ".join(
            blocks["registration settings"].split()
        )
        assert "--data.uri TEXT, --data TEXT" in blocks["data settings"]
        assert "--validation.schema_uri TEXT, --schema TEXT" in blocks["validation settings"]


def test_flags_are_typed_like_set_and_name_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--workspace", str(tmp_path / "ws"), "run", "training", "--train.epochs", "three"])
    assert code == 2
    assert "--train.epochs 'three': expected integer (e.g. train.epochs=3)" in capsys.readouterr().err
    code = main(["--workspace", str(tmp_path / "ws"), "run", "training", "--train.batch-size", "many"])
    assert code == 2  # dashes for underscores: the same setting
    assert "--train.batch_size 'many': expected integer" in capsys.readouterr().err
    code = main(
        [
            "--workspace",
            str(tmp_path / "ws"),
            "run",
            "training",
            "--validation.expectation_suite",
            "none.json",
        ]
    )
    assert code == 2
    assert "validation.expectation_suite 'none.json': no such file" in capsys.readouterr().err
    assert not (tmp_path / "ws" / "mlflow.db").exists()  # nothing ran


def test_ui_points_at_the_tracking_server_instead_of_an_empty_local_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://user:secret@mlflow.example:5000")
    assert main(["--workspace", str(tmp_path / "ws"), "ui"]) == 0
    out = capsys.readouterr().out
    assert "mlflow.example:5000" in out and "secret" not in out
    assert not (tmp_path / "ws").exists()  # no empty store was created


def test_out_of_range_settings_are_refused_before_any_step_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "--workspace",
            str(tmp_path / "ws"),
            "run",
            "training",
            "--train.epochs",
            "0",
            "--gate.auc_floor",
            "2",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "train.epochs: Input should be greater than or equal to 1 (got 0)" in err
    assert "gate.auc_floor: Input should be less than or equal to 1 (got 2.0)" in err
    code = main(
        [
            "--workspace",
            str(tmp_path / "ws"),
            "run",
            "training",
            "--train.batch_size",
            "100",
            "--train.nproc",
            "3",
        ]
    )
    assert code == 2
    assert "batch_size 100 is not divisible by nproc 3" in capsys.readouterr().err
    code = main(["--workspace", str(tmp_path / "ws"), "run", "training", "--registration.model_name", 'a"b'])
    assert code == 2
    assert "registration.model_name: String should match pattern" in capsys.readouterr().err
    assert not (tmp_path / "ws" / "pipeline-runs").exists()
