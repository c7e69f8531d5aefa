"""``mlops score`` through the command line: the printed summary and the exit codes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from cli.main import main
from components.batch_score.chunk_writer import JOB_FILE
from mlops.governance import audit
from tests.support.monitoring import MODEL, Monitored, monitored_model, traffic


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Monitored:
    return monitored_model(tmp_path_factory.mktemp("score-command"))


def score(model: Monitored, data: Path, out: Path, *extra: str) -> int:
    return main(
        [
            "--workspace",
            str(model.workspace.root),
            "score",
            "--model",
            f"{MODEL}@champion",
            "--data",
            str(data),
            "--out",
            str(out),
            "--no-progress",
            *extra,
        ]
    )


def test_a_good_job_exits_0_and_prints_what_it_did(
    model: Monitored, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traffic(120, seed=31).to_parquet(tmp_path / "in.parquet")
    assert score(model, tmp_path / "in.parquet", tmp_path / "out", "--set", "score.chunk_rows=50") == 0
    printed = capsys.readouterr().out
    assert f"{MODEL}@champion = version {model.version} (verified); 1 input file(s)" in printed
    assert (
        f"Batch scoring finished: 120 row(s) scored with {MODEL}@champion (version {model.version})"
        in printed
    )
    assert "120 read, 120 scored, 0 bad" in printed
    assert "3 written, 0 already done (skipped)" in printed
    real = hashlib.sha256((tmp_path / "in.parquet").read_bytes()).hexdigest()  # what sha256sum prints
    assert f"{tmp_path / 'in.parquet'} (1 file, sha256 {real})\n" in printed
    assert f"mlops monitor --model-name {MODEL} --model-version {model.version}" in printed
    assert len(pd.read_parquet(tmp_path / "out")) == 120
    assert (tmp_path / "out" / JOB_FILE).is_file()

    assert score(model, tmp_path / "in.parquet", tmp_path / "out", "--set", "score.chunk_rows=50") == 0
    assert "0 written, 3 already done (skipped)" in capsys.readouterr().out


def test_a_folder_prints_a_digest_of_its_files_called_that_and_each_files_sha256_is_in_the_job_file(
    model: Monitored, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "in").mkdir()
    traffic(20, seed=32).to_parquet(tmp_path / "in" / "a.parquet")
    traffic(20, seed=33).to_csv(tmp_path / "in" / "b.csv", index=False)
    assert score(model, tmp_path / "in", tmp_path / "out") == 0
    job = json.loads((tmp_path / "out" / JOB_FILE).read_text())
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.lstrip().startswith("input "))
    assert line.endswith(
        f"(2 files; digest of their sha256s {job['input_digest'][:16]}…, each file's sha256 under input_sha256 "
        f"in {tmp_path / 'out'}/_job.json)"
    )
    assert job["input_sha256"] == {
        name: hashlib.sha256((tmp_path / "in" / name).read_bytes()).hexdigest()
        for name in ("a.parquet", "b.csv")
    }
    assert "sha256 " + job["input_digest"][:16] not in printed, "the digest of digests is no file's sha256"


def test_bad_rows_refuse_the_job_with_exit_2_naming_the_chunk_and_what_was_kept(
    model: Monitored, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = traffic(100, seed=32).astype(object)
    frame.loc[73, "income"] = "n/a"
    frame.to_csv(tmp_path / "in.csv", index=False)
    before = len(audit.read_events(model.workspace.root))
    code = score(model, tmp_path / "in.csv", tmp_path / "out", "--set", "score.chunk_rows=25")
    assert code == 2
    error = capsys.readouterr().err
    assert error.startswith("mlops: error: input ")
    assert "chunk 2 (rows 50-74): 1 row(s) the model cannot take" in error
    assert "row 73, column 'income': 'n/a' is not a number" in error
    assert "no _job.json and no audit record say it finished" in error
    assert "2 chunk(s) done before this one are kept" in error
    assert "score.on_bad_rows=skip_rows" in error
    assert not (tmp_path / "out" / JOB_FILE).exists()
    assert len(audit.read_events(model.workspace.root)) == before
    assert len(list((tmp_path / "out").glob("in.part-*.parquet"))) == 2  # chunks 0 and 1, kept

    # The same data with skip_rows resumes from the kept chunks and finishes.
    extra = ("--set", "score.chunk_rows=25", "--set", "score.on_bad_rows=skip_rows")
    assert score(model, tmp_path / "in.csv", tmp_path / "out", *extra) == 0
    printed = capsys.readouterr().out
    assert "100 read, 99 scored, 1 bad" in printed
    assert "2 written, 2 already done (skipped)" in printed
    assert audit.read_events(model.workspace.root)[-1].action == "batch.scored"


def test_an_unknown_alias_exits_2_and_writes_nothing(
    model: Monitored, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traffic(10, seed=33).to_parquet(tmp_path / "in.parquet")
    code = main(
        [
            "--workspace",
            str(model.workspace.root),
            "score",
            "--model",
            f"{MODEL}@nightly",
            "--data",
            str(tmp_path / "in.parquet"),
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
        ]
    )
    assert code == 2
    assert f"{MODEL}@nightly does not resolve" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_settings_other_than_score_are_refused(
    model: Monitored, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = score(model, tmp_path / "in.parquet", tmp_path / "out", "--set", "tracking.experiment=x")
    assert code == 2
    assert "mlops score takes score.* settings only" in capsys.readouterr().err


def test_each_bad_score_setting_is_named_with_the_value_given_and_nothing_is_written(
    model: Monitored, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = score(
        model,
        tmp_path / "in.parquet",
        tmp_path / "out",
        "--set",
        "score.chunk_rows=0",
        "--set",
        "score.threshold=2",
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "score.chunk_rows: Input should be greater than or equal to 1 (got 0)" in err
    assert "score.threshold: Input should be less than or equal to 1 (got 2.0)" in err
    assert "errors.pydantic.dev" not in err
    assert not (tmp_path / "out").exists()
