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
buffered, and on shutdown, the buffered blocks are framed (:func:`encode_blocks`: a JSON header and the
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
import json
import logging
import os
import random
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

    from mlops.data.features import FeatureSpec
    from serving.runtime import LoadedModel

log = logging.getLogger("serving.request_log")
RESERVED = ("prediction", "model_version", "timestamp", "request_id", "request_row", "explained")
BLOCK_ROWS = 4096
FRAME = struct.Struct("<Q")
"""The length prefix of one batch on the writer's pipe, and of the JSON header inside it."""


class Block:
    """Logged rows of one model version, preallocated so that recording is a slice assignment.

    Per request only its time, id and row count are kept (list appends); the per-row
    columns (``timestamp``, ``request_id``, ``request_row``) are expanded by :func:`to_table`,
    in the writer process.
    """

    def __init__(self, version: str, spec: FeatureSpec, capacity: int):
        self.version = version
        self.spec = spec
        self.x = np.empty((capacity, spec.n_features), dtype=np.float32)
        self.y = np.empty(capacity, dtype=np.float32)
        self.at_us: list[int] = []
        self.ids: list[str] = []
        self.sizes: list[int] = []
        self.explained: list[bool] = []
        self.subjects: list[str | None] = []
        """Per row, the subject key's value the request carried (only for a model whose spec names one)."""
        self.rows = 0

    def room(self) -> int:
        return len(self.y) - self.rows

    def add(
        self,
        x: np.ndarray,
        y: np.ndarray,
        at_us: int,
        request_id: str = "",
        explained: bool = False,
        subjects: list[str | None] | None = None,
    ) -> None:
        if self.spec.subject:
            known = subjects is not None and len(subjects) == len(x)
            self.subjects.extend(subjects if known and subjects is not None else [None] * len(x))
        end = self.rows + len(x)
        self.x[self.rows : end] = x
        self.y[self.rows : end] = y
        self.at_us.append(at_us)
        self.ids.append(request_id)
        self.sizes.append(len(x))
        self.explained.append(explained)
        self.rows = end


def encode_blocks(blocks: list[Block]) -> bytes:
    """One batch for the writer's pipe: the length of a JSON header (each block's version, spec, per-request
    times, ids and sizes, row count), the header, then each block's filled rows of ``x`` and ``y`` as raw
    float32 bytes. Only data crosses the pipe: decoding it runs no code (unlike pickle)."""
    header = json.dumps(
        [
            {
                "version": b.version,
                "spec": b.spec.model_dump(),
                "at_us": b.at_us,
                "ids": b.ids,
                "sizes": b.sizes,
                "explained": b.explained,
                "subjects": b.subjects,
                "rows": b.rows,
            }
            for b in blocks
        ]
    ).encode()
    parts = [FRAME.pack(len(header)), header]
    for b in blocks:
        parts += [
            np.ascontiguousarray(b.x[: b.rows]).tobytes(),
            np.ascontiguousarray(b.y[: b.rows]).tobytes(),
        ]
    return b"".join(parts)


def decode_blocks(payload: bytes) -> list[Block]:
    """The blocks :func:`encode_blocks` framed (a payload whose sizes do not add up is refused)."""
    from mlops.data.features import FeatureSpec

    (size,) = FRAME.unpack_from(payload)
    offset = FRAME.size + size
    blocks = []
    for entry in json.loads(payload[FRAME.size : offset]):
        spec = FeatureSpec.model_validate(entry["spec"])
        rows = int(entry["rows"])
        block = Block(str(entry["version"]), spec, 0)
        x_bytes, y_bytes = rows * spec.n_features * 4, rows * 4
        if offset + x_bytes + y_bytes > len(payload):
            raise ValueError(f"a request-log batch is cut short: {len(payload)} bytes, {rows} rows need more")
        block.x = np.frombuffer(payload, np.float32, rows * spec.n_features, offset).reshape(
            rows, spec.n_features
        )
        block.y = np.frombuffer(payload, np.float32, rows, offset + x_bytes)
        offset += x_bytes + y_bytes
        block.at_us, block.ids, block.sizes = list(entry["at_us"]), list(entry["ids"]), list(entry["sizes"])
        block.explained = [bool(e) for e in entry.get("explained", [False] * len(block.sizes))]
        block.subjects = [None if s is None else str(s) for s in entry.get("subjects", [])]
        block.rows = rows
        blocks.append(block)
    if offset != len(payload):
        raise ValueError(f"a request-log batch has {len(payload) - offset} bytes after its last block")
    return blocks


def to_table(block: Block, explained: bool | None = None) -> pa.Table:
    """The block's rows as Arrow columns named like the training data; ``explained`` (whether the request
    asked for reasons) only when some request of the file did (``explained`` None: of this block)."""
    import pyarrow as pa

    spec, n = block.spec, block.rows
    clash = [name for name in (*spec.names, spec.subject) if name in RESERVED]
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
    if spec.subject:  # the person a row is about, as the request named them: what `mlops forget` searches
        subjects = block.subjects[:n] if len(block.subjects) >= n else [None] * n
        columns[spec.subject] = pa.array(subjects, type=pa.string())
    sizes = np.asarray(block.sizes, dtype=np.int64)
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    columns["prediction"] = pa.array(block.y[:n].astype(np.float64))
    columns["model_version"] = pa.array(np.full(n, block.version, dtype=object), type=pa.string())
    at_us = np.repeat(np.asarray(block.at_us, dtype=np.int64), sizes)
    columns["timestamp"] = pa.array(at_us, type=pa.timestamp("us", tz="UTC"))
    ids = np.repeat(np.asarray(block.ids, dtype=object), sizes)
    columns["request_id"] = pa.array(ids, type=pa.string())
    columns["request_row"] = pa.array((np.arange(n, dtype=np.int64) - starts).astype(np.int32))
    flags = block.explained if len(block.explained) == len(sizes) else [False] * len(sizes)
    if any(flags) if explained is None else explained:
        columns["explained"] = pa.array(np.repeat(np.asarray(flags, dtype=bool), sizes))
    return pa.table(columns)


def write_blocks(uri: str, model_name: str, blocks: list[Block]) -> list[str]:
    """Write ``blocks`` (one file per model version) under ``<uri>/<model_name>/``; the paths/URIs written.

    Each file is encoded in memory and handed to :func:`mlops.storage.write_bytes`, the
    one write path for local disks and S3 (local files appear atomically).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mlops import storage

    directory = f"{uri.rstrip('/')}/{model_name}"
    by_version: dict[str, list[Block]] = {}
    for block in blocks:
        by_version.setdefault(block.version, []).append(block)
    written = []
    for version, group in by_version.items():
        explained = any(any(block.explained) for block in group)
        table = pa.concat_tables([to_table(block, explained) for block in group])
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path = f"{directory}/requests-{stamp}-v{version}-{uuid.uuid4().hex[:8]}.parquet"
        buffer = pa.BufferOutputStream()
        pq.write_table(table, buffer)
        written.append(storage.write_bytes(path, buffer.getvalue().to_pybytes()))
    return written


class WriteFailed(RuntimeError):
    """The writer process could not write a batch (its message says why), or died holding it."""


class WriterProcess:
    """The ``python -m serving.request_log_writer`` process and the pipe a batch travels on.

    :meth:`write` is blocking (call it from a thread: it waits on the pipe with the GIL
    released) and sends one batch at a time; the process is started on first use and
    again after it died.
    """

    def __init__(self, uri: str, model_name: str):
        self.uri = uri
        self.model_name = model_name
        self.process: subprocess.Popen[bytes] | None = None
        self._lock = threading.RLock()  # write() holds it while (re)starting the process

    def _started(self) -> subprocess.Popen[bytes]:
        with self._lock:
            return self._start_unless_running()

    def _start_unless_running(self) -> subprocess.Popen[bytes]:
        process = self.process
        if process is not None and process.poll() is None:
            return process
        # The server's import path, whatever put it there (PYTHONPATH, the working directory, a .pth).
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or os.getcwd() for p in sys.path)}
        command = [sys.executable, "-m", "serving.request_log_writer", self.uri, self.model_name]
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        # It imports the Parquet and storage libraries before it says ready: the first flush must not
        # wait for them (seconds on a loaded machine, longer than a short flush interval).
        assert process.stdout is not None
        ready = process.stdout.readline()
        if not ready:
            raise WriteFailed(f"the request-log writer process did not start (exit status {process.wait()})")
        self.process = process
        return process

    def write(self, blocks: list[Block]) -> list[str]:
        """Hand ``blocks`` to the writer and wait until they are written; the paths written.

        Raises :class:`WriteFailed` when the writer could not write them or died.
        """
        payload = encode_blocks(blocks)
        with self._lock:
            process = self._started()
            stdin, stdout = process.stdin, process.stdout
            assert stdin is not None and stdout is not None
            try:
                stdin.write(FRAME.pack(len(payload)))
                stdin.write(payload)
                stdin.flush()
                answer = stdout.readline()
            except (BrokenPipeError, OSError) as exc:
                raise WriteFailed(f"the request-log writer process ended: {exc}") from exc
        if not answer:
            raise WriteFailed(f"the request-log writer process ended (exit status {process.wait()})")
        reply = json.loads(answer)
        if "error" in reply:
            raise WriteFailed(reply["error"])
        return list(reply["written"])

    def close(self, timeout_s: float = 30.0) -> None:
        """End the writer: it sees the pipe close after its last batch and exits."""
        process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            log.error("the request-log writer did not exit within %.0f s; killing it", timeout_s)
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def warm_up() -> None:
    """Encode one made-up row to Parquet in memory: pyarrow imports pandas and more on first use, which
    took 2 s on a loaded machine and held up the first flush past the SIGKILL bound."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mlops.data.features import FeatureSpec

    spec = FeatureSpec(
        numeric=("n",), medians=(0.0,), means=(0.0,), stds=(1.0,), categorical=("c",), vocabularies=(("v",),)
    )
    block = Block("0", spec, 1)
    block.add(np.ones((1, 2), dtype=np.float32), np.zeros(1, dtype=np.float32), 0, "warm-up")
    pq.write_table(to_table(block), pa.BufferOutputStream())


def serve_writes(uri: str, model_name: str, source: IO[bytes], answers: IO[bytes]) -> int:
    """The writer process's loop: each batch read from ``source`` is written and answered with one
    JSON line on ``answers`` (``{"written": [...]}`` or ``{"error": ...}``); returns at end of input
    the number of batches received. A batch cut short (the server was killed while sending it) is dropped."""
    import mlops.data.features  # noqa: F401  (what a Block's spec is read into)
    from mlops import storage  # noqa: F401

    warm_up()
    answers.write(b'{"ready": true}\n')
    answers.flush()
    batches = 0
    while True:
        header = source.read(FRAME.size)
        if len(header) < FRAME.size:
            return batches
        (size,) = FRAME.unpack(header)
        payload = source.read(size)
        if len(payload) < size:
            log.error("the server ended while sending a batch of %d bytes; it is lost", size)
            return batches
        batches += 1
        try:
            reply: dict[str, Any] = {"written": write_blocks(uri, model_name, decode_blocks(payload))}
        except Exception as exc:  # reported to the server, which logs and counts it
            reply = {"error": f"cannot write to {uri}: {type(exc).__name__}: {exc}"}
        try:
            answers.write(json.dumps(reply).encode() + b"\n")
            answers.flush()
        except BrokenPipeError:  # the server was killed while this batch was written: it is on disk
            return batches


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
