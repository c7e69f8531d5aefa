"""The shard step of a batch scoring job: score the shard's files chunk by chunk, skipping chunks already done."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.batch_score import chunk_writer as out
from components.batch_score.batch_job import (
    SHOWN_BAD_VALUES,
    BatchPlan,
    ModelRefused,
    ShardResult,
    check_columns,
    fetch_model,
)
from components.batch_score.chunk_encoder import encode_chunk
from components.batch_score.chunk_reader import (
    BatchInputError,
    InputFile,
    file_sha256,
    open_input,
    read_chunks,
)
from components.batch_score.config import PREDICTED_CLASS_COLUMN, REFUSE, SCORE_COLUMN, ScoreSettings
from mlops import storage

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from mlops.tracking.store import TrackingStore
    from serving.model_source import ModelArtifact

WRITERS = 2
"""Chunks written at once (threads); with the reader and the scorer, 2 + WRITERS chunks are in memory."""
Progress = Callable[[int], None]
"""Told the rows of each chunk as it is done (scored or skipped)."""


def score_shard(
    plan: BatchPlan,
    shard: int,
    store: TrackingStore,
    cache_dir: Path,
    progress: Progress = lambda rows: None,
    artifact: ModelArtifact | None = None,
) -> ShardResult:
    """Score the shard's files chunk by chunk; chunks already written by this job are skipped. ``artifact``:
    the version this process's plan verified (:func:`~components.batch_score.batch_plan.plan_with_model`);
    None fetches and verifies it here, as a shard in a task of its own must."""
    from mlops.model.onnx_model import OnnxScorer
    from serving.tensors import FeatureBounds

    settings = plan.score
    if artifact is None:
        artifact = fetch_model(store, plan.model_name, plan.version, cache_dir)
    if artifact.sha256 != plan.onnx_sha256:
        raise ModelRefused(
            f"{plan.model_name} version {plan.version} has SHA-256 {artifact.sha256}, not the {plan.onnx_sha256} "
            "the job was planned with; start the job again"
        )
    scorer = OnnxScorer.load(artifact.path, intra_op_threads=settings.intra_op_threads)
    job = _Job(plan, settings, scorer, FeatureBounds(scorer.spec), progress)
    if settings.explain:
        from serving.runtime import ExplainReference

        if artifact.reference_path is None:
            raise ModelRefused(
                f"{plan.model_name} version {plan.version} lost its reference rows; start the job again"
            )
        job.reference = ExplainReference.read(
            artifact.reference_path, scorer.spec, f"{plan.model_name} version {plan.version}"
        )
    started = time.perf_counter()
    inputs = plan.inputs()
    with _threaded_memory_pool():
        for index in plan.shards[shard]:
            job.score_file(inputs[index])
    job.result.seconds = time.perf_counter() - started
    return job.result


@contextmanager
def _threaded_memory_pool() -> Iterator[None]:
    """Arrow's jemalloc pool (else the system's) while the shard runs. Chunks are allocated on the
    reader thread and freed on a writer thread; with Arrow's default mimalloc pool that pattern costs
    about a third more CPU (kernel time: pages returned and faulted in again), measured on 1M rows."""
    import pyarrow as pa

    previous = pa.default_memory_pool()
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc
        pool = pa.system_memory_pool()
    pa.set_memory_pool(pool)
    try:
        yield
    finally:
        pa.set_memory_pool(previous)


class _Job:
    def __init__(
        self, plan: BatchPlan, settings: ScoreSettings, scorer: Any, bounds: Any, progress: Progress
    ):
        self.plan = plan
        self.settings = settings
        self.scorer = scorer
        self.spec = scorer.spec
        self.bounds = bounds
        self.progress = progress
        self.result = ShardResult()
        self.reference: Any = None
        """With ``score.explain``: the version's :class:`serving.runtime.ExplainReference`."""

    def score_file(self, file: InputFile) -> None:
        settings = self.settings
        opened = open_input(file)
        columns = check_columns(opened, self.spec.names, settings)
        digest: dict[str, Any] = {}

        def hash_file() -> None:
            try:
                digest["sha"] = file_sha256(file)
            except BaseException as exc:  # re-raised on this thread below
                digest["error"] = exc

        hasher = threading.Thread(target=hash_file, daemon=True)
        hasher.start()  # hashlib releases the GIL: the digest costs no scoring time on a second core
        try:
            if not self._all_done(file):
                copied = {settings.id_column, *settings.pass_through_columns}  # copied as they are
                categorical = tuple(c for c in self.spec.categorical if c not in copied)
                chunks = read_chunks(
                    opened, columns, settings.chunk_rows, settings.missing_values, categorical
                )
                self._pipeline(file, chunks)
        finally:
            hasher.join()
        if "error" in digest:
            raise digest["error"]
        self.result.file_digests[file.partition] = digest["sha"]

    def _pipeline(self, file: InputFile, tables: Iterator[pa.Table]) -> None:
        """Chunk k+1 is read, checked and encoded on a reader thread while chunk k is scored on this one
        and chunks k-1, k-2 are written on two writer threads (writing a chunk and its request-log copy
        costs more than scoring it). Parquet decoding and encoding, the compute kernels, ONNX Runtime and
        hashlib release the GIL, so the stages overlap on separate cores. At most ``2 + WRITERS`` chunks
        are held, so memory stays bounded by ``chunk_rows``. Chunks are counted here, in order; chunks
        being written when the job stops (refused, or an error) are finished first, each manifest last."""
        from collections import deque
        from concurrent.futures import Future, ThreadPoolExecutor

        numbered = enumerate(tables)

        def prepare() -> _Prepared | None:
            item = next(numbered, None)
            return None if item is None else self._prepare(file, *item)

        writing: deque[Future[out.ChunkRecord]] = deque()

        def collect(keep: int) -> None:
            while len(writing) > keep:
                self._count_written(writing.popleft().result())

        with (
            ThreadPoolExecutor(1, thread_name_prefix="batch-read") as reader,
            ThreadPoolExecutor(WRITERS, thread_name_prefix="batch-write") as writer,
        ):
            upcoming = reader.submit(prepare)
            while (prepared := upcoming.result()) is not None:
                upcoming = reader.submit(prepare)
                if prepared.skipped is not None:
                    collect(0)
                    self._count_skipped(prepared.skipped)
                    continue
                encoded = prepared.encoded
                if encoded.bad and self.settings.on_bad_rows == REFUSE:
                    collect(0)
                    upcoming.result()  # let the reader finish (it writes nothing) before the job stops
                    raise BatchInputError(self._refusal(file, prepared))
                scores = self.scorer.predict_encoded(encoded.x)
                collect(WRITERS - 1)
                writing.append(writer.submit(self.write_chunk, file, prepared, scores))
            collect(0)

    def _prepare(self, file: InputFile, chunk: int, table: pa.Table) -> _Prepared:
        """The chunk's manifest when it is already done (skip it), else the chunk encoded and checked."""
        name = out.part_name(file.partition, chunk)
        previous = out.read_record(out.manifest_uri(self.settings.output_uri, name))
        if self._valid(previous, file):
            return _Prepared(chunk, name, table, None, skipped=previous)
        if previous is not None:
            out.remove_outputs(previous)
        first_row = chunk * self.settings.chunk_rows
        encoded = encode_chunk(table, self.spec, self.bounds, first_row, self.settings.missing_values)
        return _Prepared(chunk, name, table, encoded)

    def _valid(self, record: out.ChunkRecord | None, file: InputFile) -> bool:
        """A chunk written by this job from this input, intact. Under ``refuse`` a chunk that skipped bad
        rows is not (that mode would have refused it); the other way round, chunks written under
        ``refuse`` are exactly what ``skip_rows`` writes, so switching to it resumes a refused job."""
        if not out.still_valid(record, self.plan.key, file.uri, file.fingerprint):
            return False
        assert record is not None
        return not (record.rows_bad and self.settings.on_bad_rows == REFUSE)

    def _refusal(self, file: InputFile, prepared: _Prepared) -> str:
        encoded = prepared.encoded
        first = prepared.chunk * self.settings.chunk_rows
        done = self.result.chunks_written + self.result.chunks_skipped
        where = f"chunk {prepared.chunk} (rows {first}-{first + prepared.table.num_rows - 1})"
        return refusal(file, encoded.bad, encoded.bad_rows, where, done)

    def _all_done(self, file: InputFile) -> bool:
        """Skip a whole file unread when its row count is known and every chunk of it is done."""
        if file.rows < 0:
            return False
        size = self.settings.chunk_rows
        records = []
        for chunk in range(max(1, -(-file.rows // size))):
            record = out.read_record(
                out.manifest_uri(self.settings.output_uri, out.part_name(file.partition, chunk))
            )
            if not self._valid(record, file):
                return False
            records.append(record)
        for record in records:
            assert record is not None
            self._count_skipped(record)
        return True

    def _count_skipped(self, record: out.ChunkRecord) -> None:
        self.result.chunks_skipped += 1
        self._count(record)

    def _count_written(self, record: out.ChunkRecord) -> None:
        self.result.chunks_written += 1
        self._count(record)

    def _count(self, record: out.ChunkRecord) -> None:
        result = self.result
        result.rows_read += record.rows_read
        result.rows_scored += record.rows_scored
        result.rows_bad += record.rows_bad
        result.bad_examples.extend(record.bad_examples[: max(0, SHOWN_BAD_VALUES - len(result.bad_examples))])
        self.progress(record.rows_read)

    def write_chunk(self, file: InputFile, prepared: _Prepared, scores: np.ndarray) -> out.ChunkRecord:
        """The chunk's part file, request-log copy and bad rows, then its manifest (last: it marks it done)."""
        import numpy as np
        import pyarrow as pa

        settings, spec, table, encoded = self.settings, self.spec, prepared.table, prepared.encoded
        name = prepared.name
        first_row = prepared.chunk * settings.chunk_rows
        good = None if encoded.good is None else pa.array(encoded.good)
        if settings.id_column:
            ids = table.column(settings.id_column)
            ids = ids if good is None else ids.filter(good)
        else:
            rows = np.arange(first_row, first_row + table.num_rows, dtype=np.int64)
            ids = pa.array(rows if encoded.good is None else rows[encoded.good])
        passed = {
            c: (table.column(c) if good is None else table.column(c).filter(good))
            for c in settings.pass_through_columns
        }
        reasons = None
        if self.reference is not None:
            reasons = out.reasons_texts(
                self.scorer.predict_encoded,
                spec,
                self.reference.x,
                self.reference.texts,
                encoded.x,
                settings.explain_top_k,
            )
        part = out.scores_table(ids, passed, scores, spec, settings.threshold, settings.id_name, reasons)
        plain = (SCORE_COLUMN,) if settings.id_column else (SCORE_COLUMN, settings.id_name)
        written = storage.write(
            out.join(settings.output_uri, name + out.PART_SUFFIX),
            out.parquet_bytes(
                part, settings.compression, plain=plain, unsummarised=(PREDICTED_CLASS_COLUMN,)
            ),
        )
        record = out.ChunkRecord(
            job_key=self.plan.key,
            input_uri=file.uri,
            input_fingerprint=file.fingerprint,
            chunk=prepared.chunk,
            first_row=first_row,
            rows_read=table.num_rows,
            rows_scored=len(scores),
            rows_bad=encoded.bad_rows,
            part_uri=written.uri,
            part_sha256=written.sha256,
            bad_examples=[b.describe() for b in encoded.bad[:SHOWN_BAD_VALUES]],
        )
        if settings.request_log and len(scores):
            log = out.request_log_table(
                self.plan.version,
                spec,
                encoded.x,
                scores,
                f"batch-{self.plan.key}/{name}",
                explained=self.reference is not None,
            )
            uri = out.request_log_uri(
                settings.log_root(), self.plan.model_name, self.plan.version, self.plan.key
            )
            record.request_log_uri = storage.write_bytes(
                uri,
                out.parquet_bytes(log, settings.compression, plain=out.REQUEST_LOG_PLAIN, store_schema=False),
            )
        if encoded.bad:
            bad_uri = out.join(settings.output_uri, out.BAD_ROWS_DIR, name + out.PART_SUFFIX)
            record.bad_rows_uri = storage.write_bytes(
                bad_uri, out.parquet_bytes(out.bad_rows_table(encoded.bad), "snappy")
            )
        out.write_record(settings.output_uri, name, record)
        return record


@dataclass
class _Prepared:
    """A chunk between the reader and the scorer."""

    chunk: int
    name: str
    """Its part name (:func:`chunk_writer.part_name`)."""
    table: pa.Table
    encoded: Any
    """The :class:`~components.batch_score.chunk_encoder.EncodedChunk` (None when skipped)."""
    skipped: out.ChunkRecord | None = None
    """The manifest of a chunk already done by this job."""


def refusal(file: InputFile, bad: list[Any], rows: int, where: str = "", chunks_done: int = 0) -> str:
    shown = "; ".join(b.describe() for b in bad[:SHOWN_BAD_VALUES])
    more = f" (and {len(bad) - SHOWN_BAD_VALUES} more)" if len(bad) > SHOWN_BAD_VALUES else ""
    line = " (CSV line = row + 2)" if file.kind == "csv" else ""
    at = f", {where}" if where else ""
    return (
        f"input {file.uri}{at}: {rows} row(s) the model cannot take{line}: {shown}{more}. The job is refused: "
        "no _job.json and no audit record say it finished. "
        f"{chunks_done} chunk(s) done before this one are kept; a re-run resumes from them (those of a file "
        "that was changed since are scored again). Fix those values, or re-run with "
        "score.on_bad_rows=skip_rows to score the other rows and list these under _bad_rows/"
    )
