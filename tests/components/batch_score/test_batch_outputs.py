"""Batch scoring against a real registry (SQLite, signed versions) and real ONNX Runtime: what a job writes.
Every row scored once with the model's own score, in chunks of any size and partitioned like the input; the
training encoding, categoricals read as dictionaries included; the id and pass-through columns; the request
log copy the drift monitor reads like online traffic; the audit record of a finished job. Refusals and
reruns are in test_batch_refusals_and_reruns.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from components.batch_score.batch_finish import AUDIT_ACTION
from components.batch_score.chunk_writer import JOB_FILE
from components.batch_score.config import ScoreSettings
from mlops.governance import audit
from mlops.origin_facts import file_sha256
from tests.components.batch_score.batch_jobs import expected, run, scores
from tests.support.monitoring import MODEL, Monitored, traffic


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
