"""The request log's writer process: encoding off the serving process, bounded buffer, drops counted."""

from __future__ import annotations

import asyncio
import io
import os
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from mlops.data.features import FeatureSpec
from serving.metrics import ServingMetrics
from serving.request_log import RequestLogger
from serving.request_log_blocks import FRAME, Block, decode_blocks, encode_blocks
from serving.request_log_process import WriteFailed
from serving.request_log_writer import serve_writes

SPEC = FeatureSpec(
    numeric=("amount",),
    medians=(0.0,),
    means=(0.0,),
    stds=(1.0,),
    categorical=("city",),
    vocabularies=(("a", "b"),),
)
MODEL: Any = SimpleNamespace(version="7", spec=SPEC)


def rows(n: int, start: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    x = np.column_stack([np.arange(n, dtype=np.float32) + start, np.ones(n, dtype=np.float32)])
    return x, np.full(n, 0.25, dtype=np.float32)


def read_logs(directory: Path) -> pd.DataFrame:
    files = sorted(directory.glob("*.parquet"))
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True) if files else pd.DataFrame()


def test_rows_are_written_by_another_process_and_flushed_on_stop(tmp_path: Path) -> None:
    async def run() -> tuple[int, int | None]:
        logger = RequestLogger(str(tmp_path), "m", 1.0, 3600, 1_000_000)
        await logger.start()
        process = logger.writer.process
        assert process is not None and process.poll() is None
        logger.record(MODEL, *rows(3), request_id="first")
        logger.record(MODEL, *rows(2, start=10), request_id="second")
        await logger.stop()  # flush interval of an hour: only the shutdown flush writes
        return process.pid, process.poll()

    pid, exit_status = asyncio.run(run())
    assert pid != os.getpid()
    assert exit_status == 0, "the writer exits once the server closes its pipe"
    logged = read_logs(tmp_path / "m")
    assert logged["request_id"].tolist() == ["first"] * 3 + ["second"] * 2
    assert logged["request_row"].tolist() == [0, 1, 2, 0, 1]
    assert logged["amount"].tolist() == [0.0, 1.0, 2.0, 10.0, 11.0]
    assert logged["city"].tolist() == ["a"] * 5
    assert (logged["model_version"] == "7").all()


def test_a_full_buffer_drops_rows_and_counts_them() -> None:
    dropped: list[int] = []
    logger = RequestLogger("unused", "m", 1.0, 3600, 10, on_drop=dropped.append)

    async def run() -> list[bool]:  # never started: no flush empties the buffer, as when the writer is behind
        return [logger.record(MODEL, *rows(3)) for _ in range(8)]

    kept = asyncio.run(run())
    assert kept == [True] * 6 + [False] * 2, "up to 2 * max_rows rows wait; beyond, rows are dropped"
    assert dropped == [3, 3] and logger.dropped_rows == 6
    assert sum(b.rows for b in logger.take()) == 18
    assert logger.record(MODEL, *rows(3)), "an emptied buffer takes rows again"


def test_dropped_rows_are_a_metric() -> None:
    metrics = ServingMetrics()
    metrics.log_dropped("m", 5)
    metrics.log_dropped("m", 2)
    assert b'mlops_serving_request_log_dropped_rows_total{model="m"} 7.0' in metrics.render()


def test_a_dead_writer_is_started_again_at_the_next_flush(tmp_path: Path) -> None:
    errors: list[Exception] = []

    async def run() -> None:
        logger = RequestLogger(str(tmp_path), "m", 1.0, 3600, 1_000_000, on_error=errors.append)
        await logger.start()
        first = logger.writer.process
        assert first is not None
        first.send_signal(signal.SIGKILL)  # SIGTERM is ignored: it must outlive the server's shutdown flush
        first.wait()
        logger.record(MODEL, *rows(2), request_id="lost")
        await logger._flush_async()  # started again before the write: this batch is written
        logger.record(MODEL, *rows(1), request_id="kept")
        await logger.stop()
        assert logger.writer.process is None and first.returncode == -signal.SIGKILL

    asyncio.run(run())
    assert not errors
    assert sorted(read_logs(tmp_path / "m")["request_id"]) == ["kept", "lost", "lost"]


def test_a_writer_that_cannot_write_reports_the_cause(tmp_path: Path) -> None:
    errors: list[Exception] = []
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")

    async def run() -> None:
        logger = RequestLogger(str(blocked), "m", 1.0, 3600, 1_000_000, on_error=errors.append)
        await logger.start()
        logger.record(MODEL, *rows(2))
        await logger.stop()

    asyncio.run(run())
    (error,) = errors
    assert isinstance(error, WriteFailed) and str(blocked) in str(error)


def test_the_writer_drops_a_batch_cut_short_and_writes_the_whole_ones(tmp_path: Path) -> None:
    block = Block("7", SPEC, 8)
    block.add(*rows(2), at_us=1, request_id="whole")
    payload = encode_blocks([block])
    assert len(decode_blocks(payload)[0].x) == 2, "only the filled rows cross the pipe"
    cut = FRAME.pack(len(payload)) + payload + FRAME.pack(len(payload)) + payload[:10]
    answers = io.BytesIO()
    assert serve_writes(str(tmp_path), "m", io.BytesIO(cut), answers) == 1
    ready, written = answers.getvalue().splitlines()
    assert ready == b'{"ready": true}' and b"written" in written
    assert read_logs(tmp_path / "m")["request_id"].tolist() == ["whole", "whole"]


@pytest.mark.parametrize("size", [0, 1])
def test_a_server_killed_before_sending_leaves_nothing_half_written(tmp_path: Path, size: int) -> None:
    assert serve_writes(str(tmp_path), "m", io.BytesIO(b"\0" * size), io.BytesIO()) == 0
    assert not (tmp_path / "m").exists()


def test_a_batch_crosses_the_pipe_as_data_whole_and_nothing_else() -> None:
    """No pickle on the pipe (tests/serving/test_no_pickle.py): the framed batch decodes to the same rows."""
    first, second = Block("7", SPEC, 8), Block("8", SPEC, 4)
    first.add(*rows(3), at_us=5, request_id="a")
    first.add(*rows(2), at_us=6, request_id="b")
    second.add(*rows(1), at_us=7, request_id="c")
    decoded = decode_blocks(encode_blocks([first, second]))
    for got, sent in zip(decoded, [first, second], strict=True):
        assert (got.version, got.spec, got.rows) == (sent.version, sent.spec, sent.rows)
        assert (got.at_us, got.ids, got.sizes) == (sent.at_us, sent.ids, sent.sizes)
        assert np.array_equal(got.x, sent.x[: sent.rows], equal_nan=True)
        assert np.array_equal(got.y, sent.y[: sent.rows])
    payload = encode_blocks([first])
    with pytest.raises(ValueError, match="cut short"):
        decode_blocks(payload[:-4])
    with pytest.raises(ValueError, match="bytes after its last block"):
        decode_blocks(payload + b"\0")
