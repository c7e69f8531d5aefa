"""Batch scoring against a real registry (SQLite, signed versions) and real ONNX Runtime."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from components.batch_score.batch_finish import AUDIT_ACTION, JobSummary, finish_job
from components.batch_score.batch_job import ModelRefused
from components.batch_score.batch_plan import plan_job
from components.batch_score.batch_shard import score_shard
from components.batch_score.chunk_reader import BatchInputError
from components.batch_score.chunk_writer import JOB_FILE
from components.batch_score.config import ScoreSettings
from mlops.governance import audit
from mlops.vocabulary import DIGEST_TAG, file_sha256
from tests.support.monitoring import MODEL, Monitored, monitored_model, traffic


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Monitored:
    """Champion v1 (signed, with its reference profile) in a workspace of its own."""
    return monitored_model(tmp_path_factory.mktemp("batch"))


def run(registered: Monitored, cache: Path, **values: object) -> JobSummary:
    settings = ScoreSettings.model_validate({"model": f"{MODEL}@champion", **values})
    plan = plan_job(settings, registered.store, cache)
    results = [score_shard(plan, shard, registered.store, cache) for shard in range(len(plan.shards))]
    return finish_job(plan, results, workspace_root=registered.workspace.root)


def scores(out: Path) -> pd.DataFrame:
    return pd.read_parquet(out).sort_values("row").reset_index(drop=True)


def expected(model: Monitored, frame: pd.DataFrame) -> np.ndarray:
    return model.scorer.predict_proba(frame)


@pytest.mark.parametrize("chunk_rows", [1, 7, 25, 100])
def test_chunks_of_any_size_give_every_row_once_with_the_models_score(
    model: Monitored, tmp_path: Path, chunk_rows: int
) -> None:
    frame = traffic(25, seed=1)
    frame.to_parquet(tmp_path / "in.parquet")
    summary = run(
        model,
        tmp_path / "cache",
        data_uri=str(tmp_path / "in.parquet"),
        output_uri=str(tmp_path / "out"),
        chunk_rows=chunk_rows,
    )
    parts = sorted(p.name for p in (tmp_path / "out").glob("in.part-*.parquet"))
    assert len(parts) == -(-25 // chunk_rows) == summary.chunks_written
    out = scores(tmp_path / "out")
    assert out["row"].tolist() == list(range(25))
    np.testing.assert_allclose(out["score"], expected(model, frame), rtol=1e-6)
    assert set(out["predicted_class"]) <= {"0", "1"}
    assert (out["predicted_class"] == np.where(out["score"] >= 0.5, "1", "0")).all()
    assert summary.rows_read == summary.rows_scored == 25


def test_the_batch_encoding_is_the_training_encoding(model: Monitored) -> None:
    import pyarrow as pa

    from components.batch_score.chunk_encoder import encode_chunk
    from serving.tensors import FeatureBounds

    frame = traffic(500, seed=2)
    frame.loc[3, "region"] = "atlantis"  # unseen: code 0, like FeatureSpec.encode and the server
    spec = model.scorer.spec
    encoded = encode_chunk(pa.Table.from_pandas(frame), spec, FeatureBounds(spec), 0)
    np.testing.assert_array_equal(encoded.x, spec.encode(frame))
    assert encoded.good is None and not encoded.bad


def test_inadmissible_marks_exactly_what_admit_refuses(model: Monitored) -> None:
    from serving.errors import InvalidInput
    from serving.tensors import FeatureBounds

    bounds = FeatureBounds(model.scorer.spec)
    good = model.scorer.spec.encode(traffic(4, seed=3)).astype(np.float64)
    for row, col, value in [(1, 0, 1e300), (2, 0, -np.inf), (3, 15, 99.0), (0, 16, 1.5), (1, 3, np.nan)]:
        values = good.copy()
        values[row, col] = value
        marked = bounds.inadmissible(values)
        try:
            bounds.admit(values, "test")
            refused = False
        except InvalidInput:
            refused = True
        assert refused == bool(marked.any()), (row, col, value)
        assert marked.sum() == int(refused) and (not refused or marked[row, col])


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


def test_raw_rows_keep_only_the_id_and_pass_through_columns(model: Monitored, tmp_path: Path) -> None:
    frame = traffic(30, seed=5)  # holds the label `default` and the protected `sex` too
    frame["customer_id"] = [f"c{i}" for i in range(30)]
    frame["branch"] = "x"
    frame["notes"] = "free text"
    frame["label"] = frame["default"]  # a user's own outcome column, named as many datasets name it
    frame.to_parquet(tmp_path / "in.parquet")
    run(
        model,
        tmp_path / "cache",
        data_uri=str(tmp_path / "in.parquet"),
        output_uri=str(tmp_path / "out"),
        id_column="customer_id",
        pass_through_columns=["branch", "label"],
    )
    out = pd.read_parquet(tmp_path / "out")
    assert list(out.columns) == ["customer_id", "branch", "label", "score", "predicted_class"]
    assert out["customer_id"].tolist() == frame["customer_id"].tolist()
    assert out["label"].tolist() == frame["default"].tolist(), "the true label passes through unchanged"
    assert (out["predicted_class"] == np.where(out["score"] >= 0.5, "1", "0")).all()
    np.testing.assert_allclose(out["score"], expected(model, frame), rtol=1e-6)


def test_a_missing_feature_column_is_refused_before_anything_is_written(
    model: Monitored, tmp_path: Path
) -> None:
    traffic(10, seed=6).drop(columns=["income"]).to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(BatchInputError, match=r"lacks column\(s\) 'income' \(feature\)"):
        run(model, tmp_path / "cache", data_uri=str(tmp_path / "in.csv"), output_uri=str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_a_prefix_of_csv_and_parquet_files_is_scored_and_partitioned_like_the_input(
    model: Monitored, tmp_path: Path
) -> None:
    data = tmp_path / "in"
    (data / "day=1").mkdir(parents=True)
    (data / "day=2").mkdir()
    first, second = traffic(20, seed=7), traffic(15, seed=8)
    first.to_csv(data / "day=1" / "a.csv", index=False)
    second.to_parquet(data / "day=2" / "b.parquet")
    (data / "_SUCCESS").write_text("")  # markers and hidden files are not input
    summary = run(
        model,
        tmp_path / "cache",
        data_uri=str(data),
        output_uri=str(tmp_path / "out"),
        chunk_rows=8,
        shards=2,
    )
    assert summary.files == 2 and summary.rows_scored == 35
    written = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").glob("day=*/*.parquet"))
    assert written == [
        "day=1/a.part-00000.parquet",
        "day=1/a.part-00001.parquet",
        "day=1/a.part-00002.parquet",
        "day=2/b.part-00000.parquet",
        "day=2/b.part-00001.parquet",
    ]
    a = scores(tmp_path / "out" / "day=1")
    b = scores(tmp_path / "out" / "day=2")
    np.testing.assert_allclose(a["score"], expected(model, first), rtol=1e-5)
    np.testing.assert_allclose(b["score"], expected(model, second), rtol=1e-6)


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


def test_a_finished_job_is_recorded_on_the_audit_trail(model: Monitored, tmp_path: Path) -> None:
    traffic(30, seed=10).to_parquet(tmp_path / "in.parquet")
    summary = run(
        model, tmp_path / "cache", data_uri=str(tmp_path / "in.parquet"), output_uri=str(tmp_path / "out")
    )
    event = audit.read_events(model.workspace.root)[-1]
    assert event.action == AUDIT_ACTION and event.subject == f"{MODEL}/{model.version}"
    details = event.details
    assert details["rows_scored"] == 30 and details["rows_bad"] == 0
    assert details["input_uri"] == str(tmp_path / "in.parquet") and details["output_uri"] == str(
        tmp_path / "out"
    )
    assert len(details["input_digest"]) == 64 and details["alias"] == "champion"
    assert details["input_sha256"] == {"in.parquet": file_sha256(tmp_path / "in.parquet")}, "the file's own"
    assert event.links["model_version"] == f"{MODEL}/{model.version}"
    job = json.loads((tmp_path / "out" / JOB_FILE).read_text())
    assert job["input_digest"] == summary.input_digest and job["input_sha256"] == summary.input_sha256
    assert audit.verify(model.workspace.root).intact


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


def test_the_monitor_reads_a_batch_output_like_online_traffic(model: Monitored, tmp_path: Path) -> None:
    from components.drift_monitor.config import DriftSettings, WindowSettings
    from components.drift_monitor.monitor import check_window

    start = datetime.now(UTC) - timedelta(minutes=1)
    traffic(1500, seed=13, drift=1.0).to_parquet(tmp_path / "in.parquet")
    run(
        model,
        tmp_path / "cache",
        data_uri=str(tmp_path / "in.parquet"),
        output_uri=str(tmp_path / "out"),
        chunk_rows=400,
    )
    window = WindowSettings(
        model_name=MODEL,
        model_version=model.version,
        since=start.isoformat(),
        until=(datetime.now(UTC) + timedelta(minutes=1)).isoformat(),
        report_rows=0,
    )
    check = check_window(window, DriftSettings(), model.store, str(tmp_path / "out" / "_request_log"))
    result = check.result
    assert result.rows == 1500 and result.files == 4
    assert result.decision == "retrain" and "income" in result.drifted_features
    assert result.estimated  # performance estimated from the batch's scores


def test_settings_refuse_clashing_column_names() -> None:
    for taken in ("score", "predicted_class"):
        with pytest.raises(ValueError, match="collide with the output's own columns"):
            ScoreSettings(pass_through_columns=(taken,))
    assert ScoreSettings(pass_through_columns=("label",)).pass_through_columns == ("label",)
    with pytest.raises(ValueError, match="pattern"):
        ScoreSettings(model="credit-default")


def test_the_request_log_copy_reads_back_as_the_servers_log(model: Monitored) -> None:
    """Built from dictionary arrays without a Python object per row, it must still be the server's file."""
    import io

    import pyarrow.parquet as pq

    from components.batch_score.chunk_writer import REQUEST_LOG_PLAIN, parquet_bytes, request_log_table
    from serving.request_log_blocks import Block
    from serving.request_log_table import to_table

    spec = model.scorer.spec
    x = spec.encode(traffic(300, seed=14))
    x[3, 0] = np.nan  # a missing number
    x[4, -1] = 0.0  # a missing or unseen category
    scores_ = model.scorer.predict_encoded(x)
    block = Block("7", spec, len(x))
    block.add(x, scores_, 1_700_000_000_000_000, "batch-k/in.part-00000")
    server = pq.read_table(io.BytesIO(parquet_bytes(to_table(block), "snappy")))
    batch = pq.read_table(
        io.BytesIO(
            parquet_bytes(
                request_log_table("7", spec, x, scores_, "batch-k/in.part-00000"),
                "snappy",
                plain=REQUEST_LOG_PLAIN,
                store_schema=False,
            )
        )
    )
    assert batch.schema.remove_metadata() == server.schema.remove_metadata()
    for name in server.column_names:
        if name != "timestamp":  # the clock's, not the test's
            assert batch.column(name).equals(server.column(name)), name
    assert batch.column(spec.names[0]).null_count == 1 and batch.column(spec.names[-1]).null_count >= 1


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


def test_categoricals_read_as_dictionaries_encode_like_strings(model: Monitored) -> None:
    """Parquet categoricals are read as dictionary arrays; unseen, null and missing tokens give 0, as in plain string columns."""
    import pyarrow as pa

    from components.batch_score.chunk_encoder import encode_chunk
    from serving.tensors import FeatureBounds

    spec = model.scorer.spec
    frame = traffic(200, seed=16)
    frame.loc[3, "region"] = "atlantis"
    frame.loc[4, "region"] = None
    frame.loc[150, "region"] = "?"
    plain = pa.Table.from_pandas(frame, preserve_index=False)
    halves = [plain.slice(0, 100), plain.slice(100)]  # two chunks, each with its own dictionary
    columns = {
        name: pa.chunked_array([h.column(name).combine_chunks().dictionary_encode() for h in halves])
        if name in spec.categorical
        else plain.column(name)
        for name in plain.column_names
    }
    dictionary = pa.table(columns)
    bounds = FeatureBounds(spec)
    expected_x = encode_chunk(plain, spec, bounds, 0, ("?",)).x
    np.testing.assert_array_equal(encode_chunk(dictionary, spec, bounds, 0, ("?",)).x, expected_x)
    region = spec.names.index("region")
    assert expected_x[[3, 4, 150], region].tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_array_equal(expected_x, spec.encode(frame.replace({"region": {"?": None}})))
