"""Sampled request/response logging to Parquet: the drift monitor's input.

Rows are logged the way the training data looks, not the way the wire carried
them: one column per feature name (numerics as numbers, categoricals decoded back
to their strings, ``null`` for missing or unseen values), then ``prediction``,
``model_version``, ``timestamp``, ``request_id`` (the client's id, else one the server
made and returned in ``x-request-id``) and ``request_row`` (the row's index inside its
request), by which ``mlops feedback`` joins labels that arrive later; a file holding a request that asked
for its reasons also has ``explained`` (bool). A model whose schema names a ``subject_key`` logs that
column too (its text as the request sent it beside the features, null when it did not), so ``mlops forget``
finds a person's logged rows. The drift monitor can therefore compare a log
file with the training table column by column.

On the event loop a sampled request costs a random draw, a copy of its rows into a
preallocated block and three list appends (its time, id and row count): nothing per
row is a Python object. Decoding and encoding (Arrow columns, Parquet) happen in a
separate process, :mod:`serving.request_log_writer`, so they never hold the serving
process's GIL: on the 64-row JSON load the Parquet writer running on a thread of the
server had cut throughput to a third. Every ``flush_s`` seconds, when ``max_rows`` are
buffered, and on shutdown, the buffered blocks are framed (:func:`~serving.request_log_blocks.encode_blocks`: a JSON header and the
arrays' raw bytes, one copy each; never pickle, which would run code when read) and piped to the writer; a thread of the server waits for its answer with the GIL
released. Files go through :mod:`mlops.storage`: local files appear atomically (written
under a ``.tmp`` name, then renamed), so a reader never sees half a file; on S3 an object
upload is atomic by itself.

Bounded memory and back-pressure: one batch is with the writer at a time; while it is,
rows keep buffering in the server up to ``2 * max_rows``, and a request that would go
beyond is not logged (it is answered as usual), its rows counted by ``on_drop``
(``mlops_serving_request_log_dropped_rows``). A request never waits for the log.
A writer that died is started again at the next flush; the batch it held is counted as
a write failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from serving.request_log_blocks import Block
from serving.request_log_process import WriterProcess
from serving.request_log_table import write_blocks

if TYPE_CHECKING:
    from serving.runtime import LoadedModel

log = logging.getLogger("serving.request_log")
BLOCK_ROWS = 4096


class RequestLogger:
    """Buffers sampled rows and has the writer process write them under ``<uri>/<model_name>/requests-*.parquet``."""

    def __init__(
        self,
        uri: str,
        model_name: str,
        sample_rate: float,
        flush_s: float,
        max_rows: int,
        on_error: Callable[[Exception], None] = lambda exc: None,
        on_drop: Callable[[int], None] = lambda rows: None,
    ):
        if not 0 < sample_rate <= 1:
            raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate}")
        self.uri = uri if "://" in uri else str(Path(uri).expanduser().resolve())
        self.model_name = model_name
        self.sample_rate = sample_rate
        self.flush_s = flush_s
        self.max_rows = max_rows
        self.on_error = on_error
        self.on_drop = on_drop
        self.writer = WriterProcess(self.uri, model_name)
        self.dropped_rows = 0
        """Rows not logged because the buffer was full while the writer was busy."""
        self._blocks: list[Block] = []
        self._rows = 0
        self._random = random.Random()
        self._wake = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    def record(
        self,
        model: LoadedModel,
        x: np.ndarray,
        y: np.ndarray,
        request_id: str = "",
        explained: bool = False,
        subjects: list[str | None] | None = None,
    ) -> bool:
        """Keep this request's rows with probability ``sample_rate``; True if kept.

        False also when the buffer already holds ``2 * max_rows`` rows (the writer is behind):
        the rows are counted as dropped.
        """
        if self.sample_rate < 1 and self._random.random() >= self.sample_rate:
            return False
        if self._rows and self._rows + len(x) > 2 * self.max_rows:
            self.dropped_rows += len(x)
            self.on_drop(len(x))
            return False
        block = self._blocks[-1] if self._blocks else None
        if block is None or block.version != model.version or block.room() < len(x):
            block = Block(model.version, model.spec, max(BLOCK_ROWS, len(x)))
            self._blocks.append(block)
        block.add(x, y, int(time.time() * 1_000_000), request_id, explained, subjects)
        self._rows += len(x)
        if self._rows >= self.max_rows:
            self._wake.set()
        return True

    async def start(self) -> None:
        """Start the writer process and the flush loop (inside the event loop).

        Returns once the writer has its libraries imported: the server opens its port with a
        request log that can write (on a loaded machine the imports took seconds, longer than
        a short flush interval), and a writer that cannot start stops the server at start.
        """
        await asyncio.to_thread(self.writer._started)
        self._stopping = False
        self._task = asyncio.get_running_loop().create_task(self._run(), name="request-log")
        self._task.add_done_callback(self._flusher_ended)

    async def stop(self) -> None:
        """Write everything buffered, then end the writer process."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):  # a failure was logged when it ended
                await self._task
        await self._flush_async()  # rows recorded after the loop's last flush (or it never started)
        await asyncio.to_thread(self.writer.close)

    def take(self) -> list[Block]:
        """Hand over the buffered blocks; recording continues into new ones."""
        blocks, self._blocks, self._rows = self._blocks, [], 0
        return blocks

    async def _flush_async(self) -> None:
        blocks = self.take()
        if blocks:
            try:
                await asyncio.to_thread(self.writer.write, blocks)
            except Exception as exc:  # a full disk or an S3 outage must not fail requests
                rows = sum(b.rows for b in blocks)
                log.error("dropped %d logged row(s): %s", rows, exc)
                self.on_error(exc)

    async def _run(self) -> None:
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.flush_s)
            self._wake.clear()
            # Not cancelled at shutdown: a batch on its way to the writer is waited for, never cut.
            await self._flush_async()

    @staticmethod
    def _flusher_ended(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("the request-log flusher stopped", exc_info=task.exception())

    def write(self, blocks: list[Block]) -> list[str]:
        """Write ``blocks`` in this process (what the writer process does with each batch)."""
        return write_blocks(self.uri, self.model_name, blocks)
