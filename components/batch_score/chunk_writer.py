"""Where a chunk's results go, written so that a re-run can trust what it finds.

For input partition ``day=1/a.parquet``, chunk 3, under the output root:

- ``day=1/a.part-00003.parquet``: the id column, the pass-through columns, ``score``, ``predicted_class``;
- ``_request_log/<model>/requests-<time>-v<version>-<key>.parquet`` (unless off): the rows in the
  request-log format of :mod:`serving.request_log` (written by its own ``to_table``), which
  ``mlops monitor`` reads like a server's log;
- ``_bad_rows/day=1/a.part-00003.parquet``: the chunk's bad values (``skip_rows`` only);
- ``_manifest/day=1/a.part-00003.json``, written last: what was written, from which input
  (its fingerprint), by which job settings (:func:`job_key`).

Every file appears atomically (:mod:`mlops.storage`: a temporary name then a rename; an S3
object upload is atomic), so a chunk counts as done only when its manifest exists, agrees
with the job and the input, and the part file it names still has the digest it recorded.
Names starting with ``_`` are skipped by Arrow's, Spark's and pandas' dataset readers, so
the output folder reads as the scores alone.
"""

from __future__ import annotations

import hashlib
import io
import json
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mlops import storage

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import numpy as np
    import pyarrow as pa

    from components.batch_score.chunk_encoder import BadValue
    from mlops.data.features import FeatureSpec

MANIFEST_DIR = "_manifest"
BAD_ROWS_DIR = "_bad_rows"
JOB_FILE = "_job.json"
PART_SUFFIX = ".parquet"
REQUEST_LOG_PLAIN = ("prediction", "timestamp", "request_row")
"""Request-log columns whose values are all distinct: no dictionary encoding."""


def job_key(settings: dict[str, Any]) -> str:
    """Digest of everything that decides a chunk's output (model version, chunking, columns, threshold)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def part_name(partition: str, chunk: int) -> str:
    """``day=1/a.parquet`` chunk 3 → ``day=1/a.part-00003``."""
    stem = partition.rsplit(".", 1)[0] if "." in partition.rsplit("/", 1)[-1] else partition
    return f"{stem}.part-{chunk:05d}"


def join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts])


@dataclass
class ChunkRecord:
    """A chunk's manifest: what a re-run checks before skipping it."""

    job_key: str
    input_uri: str
    input_fingerprint: str
    chunk: int
    first_row: int
    rows_read: int
    rows_scored: int
    rows_bad: int
    part_uri: str
    part_sha256: str
    request_log_uri: str = ""
    bad_rows_uri: str = ""
    bad_examples: list[str] = field(default_factory=list)


def manifest_uri(output_uri: str, name: str) -> str:
    return join(output_uri, MANIFEST_DIR, f"{name}.json")


def read_record(uri: str) -> ChunkRecord | None:
    try:
        return ChunkRecord(**json.loads(storage.read_bytes(uri)))
    except storage.ObjectNotFound:
        return None
    except (ValueError, TypeError):  # a damaged or foreign manifest: score the chunk again
        return None


def still_valid(record: ChunkRecord | None, key: str, input_uri: str, fingerprint: str) -> bool:
    """True when the chunk this manifest describes was written by this job from this input and is intact."""
    if record is None or record.job_key != key or record.input_uri != input_uri:
        return False
    if fingerprint and record.input_fingerprint != fingerprint:
        return False
    try:
        return hashlib.sha256(storage.read_bytes(record.part_uri)).hexdigest() == record.part_sha256
    except storage.StorageError:
        return False


def remove_outputs(record: ChunkRecord) -> None:
    """Delete what an out-of-date manifest names (its request log would count its rows twice)."""
    for uri in (record.request_log_uri, record.bad_rows_uri):
        if uri:
            storage.delete(uri)


def parquet_bytes(
    table: pa.Table,
    compression: str,
    *,
    plain: tuple[str, ...] = (),
    unsummarised: tuple[str, ...] = (),
    store_schema: bool = True,
) -> bytes:
    """The table as a Parquet file. ``plain`` columns (row numbers, scores: every value distinct) skip
    dictionary encoding, which on 10^5 distinct values costs more than their whole write and then falls
    back to plain anyway. Dictionary columns (the request log's categoricals, version and request id) and
    ``unsummarised`` ones (the predicted class) get no min/max statistics: computing them over strings costs
    a quarter of a request-log write, and nothing filters on them; numbers and timestamps keep theirs.
    ``store_schema=False`` stores dictionary arrays as the plain strings a reader gets back (the request
    log, whose readers expect the server's types)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(
        table,
        buffer,
        compression=None if compression == "none" else compression,
        use_dictionary=[name for name in table.column_names if name not in plain],
        write_statistics=[
            f.name for f in table.schema if not (pa.types.is_dictionary(f.type) or f.name in unsummarised)
        ],
        store_schema=store_schema,
    )
    return buffer.getvalue()


def scores_table(
    ids: pa.Array | np.ndarray,
    passed: dict[str, pa.Array],
    scores: np.ndarray,
    spec: FeatureSpec,
    threshold: float,
    id_name: str,
    reasons: list[str] | None = None,
) -> pa.Table:
    """The output columns: id, pass-through, ``score`` (probability of the positive class), ``predicted_class``
    (the class the score decides at ``threshold``), and with ``reasons`` each row's reasons as JSON text."""
    import numpy as np
    import pyarrow as pa

    from components.batch_score.config import PREDICTED_CLASS_COLUMN, SCORE_COLUMN

    negative, positive = spec.classes
    indices = pa.array((scores >= threshold).astype(np.int8))
    classes = pa.DictionaryArray.from_arrays(indices, pa.array([negative, positive], pa.string()))
    columns: dict[str, Any] = {id_name: ids, **passed, SCORE_COLUMN: pa.array(scores, pa.float32())}
    columns[PREDICTED_CLASS_COLUMN] = classes.cast(pa.string())  # plain strings for every reader
    if reasons is not None:
        from components.batch_score.config import REASONS_COLUMN

        columns[REASONS_COLUMN] = pa.array(reasons, pa.string())
    return pa.table(columns)


EXPLAIN_SLICE_ROWS = 16
"""Rows attributed per ONNX Runtime call: ``16 * (1 + features * reference rows)`` scores (~20k for a 20-feature
model and 64 reference rows), so memory stays small whatever the chunk size."""


def reasons_texts(
    predict: Callable[[np.ndarray], np.ndarray],
    spec: FeatureSpec,
    reference: np.ndarray,
    texts: Mapping[str, str],
    x: np.ndarray,
    top_k: int,
) -> list[str]:
    """Each row's ``top_k`` reasons as JSON text, computed as the server's ``:explain`` computes them
    (:func:`mlops.model.row_attribution.attribute`), a slice of rows per call."""
    from mlops.model.row_attribution import attribute, raw_values, reasons

    found: list[str] = []
    for start in range(0, len(x), EXPLAIN_SLICE_ROWS):
        rows = x[start : start + EXPLAIN_SLICE_ROWS]
        attributed = attribute(predict, rows, reference, spec.names)
        found += [json.dumps(r) for r in reasons(attributed, raw_values(spec, rows), texts, top_k)]
    return found


def request_log_table(
    version: str,
    spec: FeatureSpec,
    x: np.ndarray,
    scores: np.ndarray,
    request_id: str,
    explained: bool = False,
) -> pa.Table:
    """The rows as :class:`serving.request_log.RequestLogger` logs a request of them
    (:func:`serving.request_log_table.to_table`'s columns, types and values), built without a Python object per row: categoricals, the version and the
    request id stay dictionary arrays, which :func:`parquet_bytes` with ``store_schema=False`` stores as
    the plain strings the server's files hold (a test reads both back and compares)."""
    import time

    import numpy as np
    import pyarrow as pa

    from serving.request_log_table import RESERVED

    clash = [name for name in spec.names if name in RESERVED]
    if clash:
        raise ValueError(f"feature(s) {clash} collide with request-log columns {list(RESERVED)}; rename them")
    n = len(x)
    # One pass and one allocation: each feature a contiguous float64 row (the log's type), which Arrow then
    # wraps without a copy; a column of the row-major matrix would be a strided read and an array per feature.
    by_feature = np.array(x.T, dtype=np.float64, order="C")
    columns: dict[str, pa.Array] = {}
    for i, name in enumerate(spec.numeric):
        values = by_feature[i]
        missing = np.isnan(values)
        columns[name] = pa.array(values, mask=missing if missing.any() else None)  # NaN -> null
    offset = len(spec.numeric)
    with np.errstate(invalid="ignore"):
        for j, (name, vocab) in enumerate(zip(spec.categorical, spec.vocabularies, strict=True)):
            codes = by_feature[offset + j]
            unknown = ~((codes >= 1) & (codes <= len(vocab)))  # 0 = missing/unseen; NaN too
            indices = codes.astype(np.int32)  # a NaN's integer is masked out below
            indices -= 1
            indices[unknown] = 0
            columns[name] = pa.DictionaryArray.from_arrays(
                pa.array(indices, mask=unknown if unknown.any() else None), pa.array(vocab, type=pa.string())
            )
    zeros = pa.array(np.zeros(n, dtype=np.int32))
    columns["prediction"] = pa.array(scores.astype(np.float64))
    columns["model_version"] = pa.DictionaryArray.from_arrays(zeros, pa.array([version], pa.string()))
    at_us = np.full(n, int(time.time() * 1_000_000), dtype=np.int64)
    columns["timestamp"] = pa.array(at_us, type=pa.timestamp("us", tz="UTC"))
    columns["request_id"] = pa.DictionaryArray.from_arrays(zeros, pa.array([request_id], pa.string()))
    columns["request_row"] = pa.array(np.arange(n, dtype=np.int32))
    if explained:  # as the server's files: the column only where a request asked for reasons
        columns["explained"] = pa.array(np.full(n, True, dtype=bool))
    return pa.table(columns)


def request_log_uri(log_root: str, model_name: str, version: str, key: str) -> str:
    """A name the monitor's reader accepts (``requests-<UTC time>Z-...``; the time is after every row's)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return join(
        log_root, model_name, f"requests-{stamp}-v{version}-batch-{key}-{uuid.uuid4().hex[:8]}.parquet"
    )


def bad_rows_table(bad: list[BadValue]) -> pa.Table:
    import pyarrow as pa

    return pa.table(
        {
            "row": pa.array([b.row for b in bad], pa.int64()),
            "column": pa.array([b.column for b in bad], pa.string()),
            "value": pa.array([b.value for b in bad], pa.string()),
            "reason": pa.array([b.reason for b in bad], pa.string()),
        }
    )


def write_record(output_uri: str, name: str, record: ChunkRecord) -> None:
    storage.write_bytes(manifest_uri(output_uri, name), json.dumps(asdict(record), indent=1).encode())
