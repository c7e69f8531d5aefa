"""Batch scoring against a real registry (SQLite, signed versions) and real ONNX Runtime: what a job
refuses and how it resumes. Bad rows refuse the job (or are skipped and listed), a missing column, a swapped
model file, an unknown alias and a failed write are refused before anything counts as done; a rerun skips
the chunks already written and scores again what changed. What a job writes is in test_batch_outputs.py."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from components.batch_score.batch_job import ModelRefused
from components.batch_score.chunk_reader import BatchInputError
from components.batch_score.chunk_writer import JOB_FILE
from mlops.governance import audit
from mlops.origin_facts import file_sha256
from mlops.vocabulary import DIGEST_TAG
from tests.components.batch_score.batch_jobs import expected, run, scores
from tests.support.monitoring import MODEL, Monitored, traffic


def bad_csv(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    frame = traffic(40, seed=4)
    text = frame.astype(object)
    text.loc[7, "income"] = "abc"
    text.loc[8, "loan_amount"] = 1e300  # finite in float64, not in FP32: the server refuses it too
    path = tmp_path / "in.csv"
    text.to_csv(path, index=False)
    return path, frame


def test_bad_rows_refuse_the_job_naming_rows_columns_and_values(model: Monitored, tmp_path: Path) -> None:
    path, _ = bad_csv(tmp_path)
    before = len(audit.read_events(model.workspace.root))
    with pytest.raises(BatchInputError) as error:
        run(model, tmp_path / "cache", data_uri=str(path), output_uri=str(tmp_path / "out"), chunk_rows=10)
    message = str(error.value)
    assert "row 7, column 'income': 'abc' is not a number" in message
    assert "row 8, column 'loan_amount': '1e+300' is not a finite FP32 number" in message
    assert "score.on_bad_rows=skip_rows" in message and "CSV line = row + 2" in message
    assert not (tmp_path / "out" / JOB_FILE).exists()
    assert len(audit.read_events(model.workspace.root)) == before  # nothing recorded as done


def test_skip_rows_scores_the_rest_and_lists_the_bad_rows(model: Monitored, tmp_path: Path) -> None:
    path, frame = bad_csv(tmp_path)
    summary = run(
        model,
        tmp_path / "cache",
        data_uri=str(path),
        output_uri=str(tmp_path / "out"),
        chunk_rows=10,
        on_bad_rows="skip_rows",
    )
    assert (summary.rows_read, summary.rows_scored, summary.rows_bad) == (40, 38, 2)
    out = scores(tmp_path / "out")
    kept = [r for r in range(40) if r not in (7, 8)]
    assert out["row"].tolist() == kept
    np.testing.assert_allclose(out["score"], expected(model, frame.iloc[kept]), rtol=1e-5)
    bad = pd.read_parquet(tmp_path / "out" / "_bad_rows").sort_values("row")
    assert bad[["row", "column", "value"]].values.tolist() == [
        [7, "income", "abc"],
        [8, "loan_amount", "1e+300"],
    ]
    assert any("row 7" in example for example in summary.bad_examples)


def test_a_missing_feature_column_is_refused_before_anything_is_written(
    model: Monitored, tmp_path: Path
) -> None:
    traffic(10, seed=6).drop(columns=["income"]).to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(BatchInputError, match=r"lacks column\(s\) 'income' \(feature\)"):
        run(model, tmp_path / "cache", data_uri=str(tmp_path / "in.csv"), output_uri=str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_a_rerun_skips_chunks_already_written_and_rescores_what_changed(
    model: Monitored, tmp_path: Path
) -> None:
    traffic(50, seed=9).to_parquet(tmp_path / "in.parquet")
    values = {"data_uri": str(tmp_path / "in.parquet"), "output_uri": str(tmp_path / "out"), "chunk_rows": 20}
    first = run(model, tmp_path / "cache", **values)
    assert (first.chunks_written, first.chunks_skipped) == (3, 0)
    again = run(model, tmp_path / "cache", **values)
    assert (again.chunks_written, again.chunks_skipped, again.rows_scored) == (0, 3, 50)
    (tmp_path / "out" / "in.part-00001.parquet").write_bytes(b"damaged")
    repaired = run(model, tmp_path / "cache", **values)
    assert (repaired.chunks_written, repaired.chunks_skipped) == (1, 2)
    logs = tmp_path / "out" / "_request_log" / MODEL
    assert len(list(logs.glob("requests-*.parquet"))) == 3  # the rewritten chunk's old log file is gone
    changed = run(model, tmp_path / "cache", **{**values, "threshold": 0.9})
    assert (changed.chunks_written, changed.chunks_skipped) == (3, 0)
    rechunked = run(model, tmp_path / "cache", **{**values, "chunk_rows": 30})
    assert rechunked.chunks_written == 2
    assert sorted(p.name for p in (tmp_path / "out").glob("*.parquet")) == [
        "in.part-00000.parquet",
        "in.part-00001.parquet",
    ]
    assert len(list(logs.glob("requests-*.parquet"))) == 2
    assert len(pd.read_parquet(tmp_path / "out")) == 50


def test_a_rerun_rescores_an_input_file_rewritten_in_place_and_only_that_file(
    model: Monitored, tmp_path: Path
) -> None:
    """The local twin of the S3 resume test (which sees a new ETag): a file rewritten under the same name
    has a new fingerprint (size, mtime), so its chunks are scored again; the other file's are kept. Both
    kinds: a Parquet file (row count known: checked whole before reading) and a CSV (checked per chunk)."""
    data = tmp_path / "in"
    (data / "day=1").mkdir(parents=True)
    (data / "day=2").mkdir()
    traffic(60, seed=41).to_parquet(data / "day=1" / "a.parquet")
    traffic(30, seed=42).to_csv(data / "day=2" / "b.csv", index=False)
    values = {"data_uri": str(data), "output_uri": str(tmp_path / "out"), "chunk_rows": 25}
    first = run(model, tmp_path / "cache", **values)
    assert (first.chunks_written, first.chunks_skipped) == (3 + 2, 0)
    assert (run(model, tmp_path / "cache", **values).chunks_written, first.rows_scored) == (0, 90)

    def rewrite(path: Path, frame: pd.DataFrame) -> None:
        before = path.stat()
        if path.suffix == ".csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))  # a later mtime, surely

    new_b = traffic(30, seed=43)
    rewrite(data / "day=2" / "b.csv", new_b)
    changed = run(model, tmp_path / "cache", **values)
    assert (changed.chunks_written, changed.chunks_skipped) == (2, 3)
    np.testing.assert_allclose(scores(tmp_path / "out" / "day=2")["score"], expected(model, new_b), rtol=1e-5)
    assert changed.input_digest != first.input_digest

    new_a = traffic(60, seed=44)  # the same row count: only the fingerprint tells the versions apart
    rewrite(data / "day=1" / "a.parquet", new_a)
    again = run(model, tmp_path / "cache", **values)
    assert (again.chunks_written, again.chunks_skipped) == (3, 2)
    np.testing.assert_allclose(scores(tmp_path / "out" / "day=1")["score"], expected(model, new_a), rtol=1e-5)
    logs = tmp_path / "out" / "_request_log" / MODEL
    assert len(list(logs.glob("requests-*.parquet"))) == 5, (
        "each rescored chunk's old request-log copy is gone"
    )


def test_a_version_whose_file_was_swapped_is_refused_before_loading(model: Monitored, tmp_path: Path) -> None:
    from tests.support.monitoring import monitored_model as build

    other = build(tmp_path / "other")  # its own registry: the swap must not touch the shared one
    client = other.store._client
    uri = client.get_model_version_download_uri(MODEL, other.version)
    stored = Path(uri.removeprefix("file://")) / "model.onnx"
    stored.write_bytes(stored.read_bytes() + b"\0")  # a changed file whose digest tag is made to match
    client.set_model_version_tag(MODEL, other.version, DIGEST_TAG, file_sha256(stored))
    traffic(5, seed=11).to_parquet(tmp_path / "in.parquet")
    with pytest.raises(
        ModelRefused, match=rf"refused {MODEL} version {other.version}.*signature does not verify"
    ):
        run(
            other, tmp_path / "cache", data_uri=str(tmp_path / "in.parquet"), output_uri=str(tmp_path / "out")
        )
    assert not (tmp_path / "out").exists()


def test_an_unknown_alias_is_refused_with_the_fix(model: Monitored, tmp_path: Path) -> None:
    traffic(5, seed=12).to_parquet(tmp_path / "in.parquet")
    with pytest.raises(ModelRefused, match=r"credit-default@nightly does not resolve"):
        run(
            model,
            tmp_path / "cache",
            model=f"{MODEL}@nightly",
            data_uri=str(tmp_path / "in.parquet"),
            output_uri=str(tmp_path / "out"),
        )


def test_under_refuse_a_chunk_written_with_skipped_rows_is_scored_again_and_refused(
    model: Monitored, tmp_path: Path
) -> None:
    path, _ = bad_csv(tmp_path)
    values = {"data_uri": str(path), "output_uri": str(tmp_path / "out"), "chunk_rows": 10}
    skipped = run(model, tmp_path / "cache", **values, on_bad_rows="skip_rows")
    assert (skipped.chunks_written, skipped.rows_bad) == (4, 2)
    with pytest.raises(BatchInputError, match=r"chunk 0 \(rows 0-9\): 2 row\(s\)"):
        run(model, tmp_path / "cache", **values)  # refuse: the chunk that skipped rows does not count as done
    assert not (tmp_path / "out" / JOB_FILE).exists()


def test_a_failed_write_on_the_writer_thread_fails_the_job(
    model: Monitored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from components.batch_score import batch_shard
    from mlops import storage

    traffic(50, seed=15).to_parquet(tmp_path / "in.parquet")
    real = storage.write

    def full_disk(uri: str, body: object) -> object:
        if "part-00002" in uri:
            raise storage.StorageError(f"cannot write {uri}: No space left on device")
        return real(uri, body)  # type: ignore[arg-type]

    monkeypatch.setattr(batch_shard.storage, "write", full_disk)
    before = len(audit.read_events(model.workspace.root))
    with pytest.raises(storage.StorageError, match="No space left"):
        run(
            model,
            tmp_path / "cache",
            data_uri=str(tmp_path / "in.parquet"),
            output_uri=str(tmp_path / "out"),
            chunk_rows=10,
        )
    assert not (tmp_path / "out" / JOB_FILE).exists()
    assert len(audit.read_events(model.workspace.root)) == before
    assert not (tmp_path / "out" / "_manifest" / "in.part-00002.json").exists()
