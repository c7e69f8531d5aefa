"""The input of a batch job, file by file and chunk by chunk, as Arrow tables of the columns it needs.

The input is one CSV or Parquet file, a local directory or an ``s3://`` prefix of such files
(names starting with ``_`` or ``.`` are skipped, like Spark's and Arrow's readers do). A
file's path under the input root is its *partition* (``day=2026-01-02/part-0.parquet``),
which the output mirrors. Each file is read in chunks of exactly ``chunk_rows`` rows (the
last one shorter), so the same file always splits the same way and a re-run can skip the
chunks it already wrote. Only the needed columns are decoded. Local files are streamed
from disk; an S3 object through :func:`mlops.storage.open_read` (the one S3 client) by
ranged GETs: a Parquet file's footer, then the column chunks of the needed columns, a CSV
front to back. Either way memory is bounded by the chunk (for Parquet, by the row group
it lies in), not by the file.

CSV columns are read as text and parsed by :mod:`components.batch_score.chunk_encoder`, so a
bad value is reported with its row instead of failing the whole file.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlops import storage
from mlops.data.dataset import PARQUET_MAGIC, csv_delimiter

if TYPE_CHECKING:
    import pyarrow as pa

KINDS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "csv"}
CSV_BLOCK_BYTES = 4 << 20


class BatchInputError(ValueError):
    """The input cannot be scored as it stands; the message names the file, rows, columns and the fix."""


@dataclass(frozen=True)
class InputFile:
    """One file of the input."""

    uri: str
    """Where it is (a path, ``file://`` URI or ``s3://`` URI)."""
    partition: str
    """Its path under the input root (the file name itself for a single-file input)."""
    kind: str
    """``parquet`` or ``csv``."""
    fingerprint: str
    """Size and modification time of a local file, size and ETag of an object: a chunk written from
    another version of the file is not reused."""
    rows: int = -1
    """Rows, when the file's metadata says so without reading it (Parquet); -1 otherwise (CSV)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def list_inputs(data_uri: str) -> list[InputFile]:
    """The input files of ``data_uri`` in a stable order; an error naming the fix when there are none."""
    if not data_uri:
        raise BatchInputError("no input given: set --data (score.data_uri) to a CSV/Parquet file or a prefix")
    location = storage.parse(data_uri, need_key=False)
    if location.path is not None and location.path.is_file():
        return [_input(data_uri, location.path.name)]
    try:
        found = storage.list_prefix(data_uri if data_uri.endswith("/") else f"{data_uri}/")
    except storage.StorageError as exc:
        raise BatchInputError(f"cannot list the input {data_uri}: {exc}") from exc
    root = data_uri.rstrip("/") + "/"
    files = []
    for uri in found:
        partition = uri[len(root) :] if uri.startswith(root) else uri.rsplit("/", 1)[-1]
        if any(part.startswith(("_", ".")) for part in partition.split("/")):
            continue
        if Path(partition).suffix.lower() in KINDS:
            files.append(_input(uri, partition))
    if not files:
        raise BatchInputError(
            f"the input {data_uri} holds no .csv/.tsv/.parquet files (found {len(found)} other entries); "
            "point --data at a file or a folder/prefix of CSV or Parquet files"
        )
    return files


def _input(uri: str, partition: str) -> InputFile:
    kind = KINDS.get(Path(partition).suffix.lower(), "")
    location = storage.parse(uri)
    if location.path is not None and not location.path.is_file():
        raise BatchInputError(f"input file {location.path} does not exist; check --data")
    try:
        info = storage.stat(uri)
        with storage.open_read(uri, read_ahead=4) as handle:
            magic = handle.read(4)
    except storage.StorageError as exc:
        raise BatchInputError(f"cannot read input {uri}: {exc}") from exc
    kind = "parquet" if magic == PARQUET_MAGIC else (kind or "csv")
    file = InputFile(uri, partition, kind, f"{info.size}:{info.version}")
    if kind == "parquet":  # the footer says how many rows: a finished file is skipped unread on a re-run
        import pyarrow.parquet as pq

        opened = Opened(file, [])
        try:
            file = InputFile(
                uri, partition, kind, file.fingerprint, pq.ParquetFile(opened.source()).metadata.num_rows
            )
        except Exception as exc:  # pyarrow raises ArrowInvalid / OSError for a damaged file
            raise BatchInputError(
                f"cannot read input {uri} as parquet: {exc}; fix or remove the file"
            ) from exc
    return file


@dataclass
class Opened:
    """An input file ready to be read, and its columns."""

    file: InputFile
    columns: list[str]
    delimiter: str = ","
    """A CSV's field separator, as its header line shows."""

    def source(self) -> Any:
        """A new reader of the file: memory-mapped or streamed locally, by ranged GETs from S3."""
        import pyarrow as pa

        path = storage.parse(self.file.uri).path
        if path is not None:
            return pa.memory_map(str(path)) if self.file.kind == "parquet" else pa.OSFile(str(path))
        return pa.PythonFile(storage.open_read(self.file.uri), mode="r")


def open_input(file: InputFile) -> Opened:
    """Read the file's column names (a Parquet footer, a CSV header line)."""
    opened = Opened(file, [])
    try:
        if file.kind == "parquet":
            import pyarrow.parquet as pq

            opened.columns = list(pq.ParquetFile(opened.source()).schema_arrow.names)
        else:
            opened.columns = _csv_header(opened)
    except BatchInputError:
        raise
    except storage.StorageError as exc:
        raise BatchInputError(f"cannot read input {file.uri}: {exc}") from exc
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError for a damaged file
        raise BatchInputError(f"cannot read input {file.uri} as {file.kind}: {exc}") from exc
    return opened


def _head(opened: Opened) -> bytes:
    with storage.open_read(opened.file.uri, read_ahead=65536) as handle:
        return handle.read(65536)


def _csv_header(opened: Opened) -> list[str]:
    head = _head(opened)
    if not head.strip():
        raise BatchInputError(f"input {opened.file.uri} is empty; provide a CSV with a header line")
    line = head.split(b"\n", 1)[0].decode("utf-8-sig", errors="replace").rstrip("\r")
    opened.delimiter = csv_delimiter(head)
    return next(csv.reader(io.StringIO(line), delimiter=opened.delimiter))


def read_chunks(
    opened: Opened,
    columns: list[str],
    chunk_rows: int,
    missing: tuple[str, ...],
    dictionary: tuple[str, ...] = (),
) -> Iterator[pa.Table]:
    """The file's ``columns`` in tables of exactly ``chunk_rows`` rows (the last one shorter).

    ``dictionary`` columns of a Parquet file are read as dictionary arrays (categorical features: their
    strings are stored once per page, and the encoder maps the few distinct values instead of each row's);
    this halves reading the sample data and its categoricals' encoding costs a third of what it did."""
    return _rebatch(_batches(opened, columns, chunk_rows, missing, dictionary), chunk_rows)


def _batches(
    opened: Opened, columns: list[str], chunk_rows: int, missing: tuple[str, ...], dictionary: tuple[str, ...]
) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    try:
        if opened.file.kind == "parquet":
            import pyarrow.parquet as pq

            parquet = pq.ParquetFile(opened.source(), read_dictionary=list(dictionary) or None)
            yield from parquet.iter_batches(batch_size=chunk_rows, columns=columns, use_threads=False)
            return
        import pyarrow.csv as pacsv

        reader = pacsv.open_csv(
            opened.source(),
            read_options=pacsv.ReadOptions(block_size=CSV_BLOCK_BYTES, use_threads=False),
            parse_options=pacsv.ParseOptions(delimiter=opened.delimiter),
            convert_options=pacsv.ConvertOptions(
                include_columns=columns,
                column_types={name: pa.string() for name in columns},
                strings_can_be_null=True,
                null_values=["", *missing],
            ),
        )
        yield from reader
    except (pa.ArrowInvalid, OSError) as exc:
        raise BatchInputError(
            f"cannot read input {opened.file.uri} as {opened.file.kind}: {exc}; fix or remove the file"
        ) from exc


def _rebatch(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    import pyarrow as pa

    pending: list[pa.RecordBatch] = []
    held = 0
    for batch in batches:
        while batch.num_rows:
            take = min(rows - held, batch.num_rows)
            pending.append(batch.slice(0, take))
            held += take
            batch = batch.slice(take)
            if held == rows:
                yield pa.Table.from_batches(pending).combine_chunks()
                pending, held = [], 0
    if held:
        yield pa.Table.from_batches(pending).combine_chunks()


def file_sha256(file: InputFile) -> str:
    """SHA-256 of the file's bytes (for the job's input digest), streamed: an object is read again by
    ranged GETs on the hashing thread, never held whole."""
    import hashlib

    digest = hashlib.sha256()
    try:
        with storage.open_read(file.uri) as handle:
            for block in iter(lambda: handle.read(8 << 20), b""):
                digest.update(block)
    except storage.StorageError as exc:
        raise BatchInputError(f"cannot read input {file.uri}: {exc}") from exc
    return digest.hexdigest()
