"""Sampled request/response logging to Parquet: the drift monitor's input.

Rows are logged the way the training data looks, not the way the wire carried
them: one column per feature name (numerics as numbers, categoricals decoded back
to their strings, ``null`` for missing or unseen values), then ``prediction``,
``model_version``, ``timestamp``, ``request_id`` (the client's id, else one the server
made and returned in ``x-request-id``) and ``request_row`` (the row's index inside its
request), by which ``mlops feedback`` joins labels that arrive later. The drift monitor can therefore compare a log
file with the training table column by column.

On the event loop a sampled request costs a random draw and a copy of its rows into
a preallocated block (~1 µs). Encoding and writing happen on a worker thread every
``flush_s`` seconds, when ``max_rows`` are buffered, and on shutdown; blocks are
converted to Arrow one by one, so the thread never holds the GIL for long (one big
``np.concatenate`` of 10^5 small arrays stalled every request by ~30 ms). Files go
through :mod:`mlops.storage`: local files appear atomically (written under a ``.tmp``
name, then renamed), so a reader never sees half a file; on S3 an object upload is
atomic by itself.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from serving.background import BackgroundLoop

if TYPE_CHECKING:
    import pyarrow as pa

    from mlops.data.features import FeatureSpec
    from serving.runtime import LoadedModel

log = logging.getLogger("serving.request_log")
RESERVED = ("prediction", "model_version", "timestamp", "request_id", "request_row")
BLOCK_ROWS = 4096


class Block:
    """Logged rows of one model version, preallocated so that recording is a slice assignment."""

    def __init__(self, version: str, spec: FeatureSpec, capacity: int):
        self.version = version
        self.spec = spec
        self.x = np.empty((capacity, spec.n_features), dtype=np.float32)
        self.y = np.empty(capacity, dtype=np.float32)
        self.at_us = np.empty(capacity, dtype=np.int64)
        self.ids = np.empty(capacity, dtype=object)
        self.row_in_request = np.empty(capacity, dtype=np.int32)
        self.rows = 0

    def room(self) -> int:
        return len(self.y) - self.rows

    def add(self, x: np.ndarray, y: np.ndarray, at_us: int, request_id: str = "") -> None:
        end = self.rows + len(x)
        self.x[self.rows : end] = x
        self.y[self.rows : end] = y
        self.at_us[self.rows : end] = at_us
        self.ids[self.rows : end] = request_id
        self.row_in_request[self.rows : end] = np.arange(len(x), dtype=np.int32)
        self.rows = end


def to_table(block: Block) -> pa.Table:
    """The block's rows as Arrow columns named like the training data."""
    import pyarrow as pa

    spec, n = block.spec, block.rows
    clash = [name for name in spec.names if name in RESERVED]
    if clash:
        raise ValueError(f"feature(s) {clash} collide with request-log columns {list(RESERVED)}; rename them")
    x = block.x[:n]
    columns: dict[str, pa.Array] = {}
    for i, name in enumerate(spec.numeric):
        columns[name] = pa.array(x[:, i].astype(np.float64), from_pandas=True)  # NaN -> null
    offset = len(spec.numeric)
    for j, (name, vocab) in enumerate(zip(spec.categorical, spec.vocabularies, strict=True)):
        codes = np.nan_to_num(x[:, offset + j], nan=0.0).astype(np.int64)
        unknown = (codes < 1) | (codes > len(vocab))  # 0 = missing/unseen; out of range = unseen
        indices = pa.array(np.where(unknown, 0, codes - 1).astype(np.int32), mask=unknown)
        dictionary = pa.DictionaryArray.from_arrays(indices, pa.array(vocab, type=pa.string()))
        columns[name] = dictionary.cast(pa.string())
    columns["prediction"] = pa.array(block.y[:n].astype(np.float64))
    columns["model_version"] = pa.array(np.full(n, block.version, dtype=object), type=pa.string())
    columns["timestamp"] = pa.array(block.at_us[:n], type=pa.timestamp("us", tz="UTC"))
    columns["request_id"] = pa.array(block.ids[:n], type=pa.string())
    columns["request_row"] = pa.array(block.row_in_request[:n])
    return pa.table(columns)


class RequestLogger:
    """Buffers sampled rows and writes them under ``<uri>/<model_name>/requests-*.parquet``."""

    def __init__(
        self,
        uri: str,
        model_name: str,
        sample_rate: float,
        flush_s: float,
        max_rows: int,
        on_error: Callable[[Exception], None] = lambda exc: None,
    ):
        if not 0 < sample_rate <= 1:
            raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate}")
        self.uri = uri if "://" in uri else str(Path(uri).expanduser().resolve())
        self.model_name = model_name
        self.sample_rate = sample_rate
        self.flush_s = flush_s
        self.max_rows = max_rows
        self.on_error = on_error
        self._blocks: list[Block] = []
        self._rows = 0
        self._random = random.Random()
        self._loop = BackgroundLoop("request-log", self._run)
        self._writes: set[asyncio.Task[None]] = set()

    def record(self, model: LoadedModel, x: np.ndarray, y: np.ndarray, request_id: str = "") -> bool:
        """Keep this request's rows with probability ``sample_rate``; True if kept."""
        if self.sample_rate < 1 and self._random.random() >= self.sample_rate:
            return False
        block = self._blocks[-1] if self._blocks else None
        if block is None or block.version != model.version or block.room() < len(x):
            block = Block(model.version, model.spec, max(BLOCK_ROWS, len(x)))
            self._blocks.append(block)
        block.add(x, y, int(time.time() * 1_000_000), request_id)
        self._rows += len(x)
        if self._rows >= self.max_rows:
            task = asyncio.get_running_loop().create_task(self._flush_async())
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)
        return True

    def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)
        await self._flush_async()

    def take(self) -> list[Block]:
        """Hand over the buffered blocks; recording continues into new ones."""
        blocks, self._blocks, self._rows = self._blocks, [], 0
        return blocks

    async def _flush_async(self) -> None:
        blocks = self.take()
        if blocks:
            try:
                await asyncio.to_thread(self.write, blocks)
            except Exception as exc:  # a full disk or an S3 outage must not fail requests
                rows = sum(b.rows for b in blocks)
                log.error("dropped %d logged row(s): cannot write to %s: %s", rows, self.uri, exc)
                self.on_error(exc)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.flush_s)
            await self._flush_async()

    def write(self, blocks: list[Block]) -> list[str]:
        """Write ``blocks`` (one file per model version); return the paths/URIs written.

        Each file is encoded in memory and handed to :func:`mlops.storage.write_bytes`, the
        one write path for local disks and S3 (local files appear atomically).
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        from mlops import storage

        directory = f"{self.uri.rstrip('/')}/{self.model_name}"
        by_version: dict[str, list[Block]] = {}
        for block in blocks:
            by_version.setdefault(block.version, []).append(block)
        written = []
        for version, group in by_version.items():
            table = pa.concat_tables([to_table(block) for block in group])
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
            path = f"{directory}/requests-{stamp}-v{version}-{uuid.uuid4().hex[:8]}.parquet"
            buffer = pa.BufferOutputStream()
            pq.write_table(table, buffer)
            written.append(storage.write_bytes(path, buffer.getvalue().to_pybytes()))
        return written
