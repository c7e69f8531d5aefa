"""A block of logged rows as the training data looks (one column per feature, categoricals decoded back
to their strings, then ``prediction``, ``model_version``, ``timestamp``, ``request_id``, ``request_row``
and ``explained``), and the Parquet files written through :mod:`mlops.storage`."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np

from serving.request_log_blocks import Block

if TYPE_CHECKING:
    import pyarrow as pa

RESERVED = ("prediction", "model_version", "timestamp", "request_id", "request_row", "explained")


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
