"""Erasing one person's rows (GDPR Art. 17) from every store of rows, with the evidence kept verifiable.

A person is named by the schema's ``subject_key`` column and a value (``mlops forget --key
customer_id=C-42``). Every file of a store (Parquet or CSV, a local path or ``s3://``) is
searched; a file holding the person's rows is rewritten without them through
:mod:`mlops.storage`, whose local writes go to a new name and then replace the file (a crash
leaves the old file or the new one, never half of either) and whose S3 uploads are atomic;
on a versioned bucket the earlier versions, which still hold the rows, are deleted too.

Nothing is passed over in silence, because an erasure that cannot be completed must say so:

- an object S3 Object Lock keeps (retention not yet ended, or a legal hold) is named with its
  date and left as it is;
- a file that lacks the column cannot be searched by it, and is named;
- a file inside a folder the audit trail recorded as signed (a model card) is not rewritten:
  its signature would no longer verify; it is named.

Any of these makes the outcome *not conclusive*. Rows that have no key column but are joined to
the request log by ``(request_id, request_row)`` (feedback labels) are found through the ids
of the person's logged rows, when every request-log file could be searched.

The audit record (``subject.erased``) holds the column, a salted hash of the value (HMAC-SHA256
with the workspace's salt, kept in ``erasure.salt`` beside the trail and never in it: the same
person's later request can be matched, the trail itself names no one) and per store the files
searched, the rows removed and what could not be erased. Never the value.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import os
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlops import storage
from mlops.storage import object_lock

if TYPE_CHECKING:
    import pyarrow as pa

    from mlops.governance.audit import AuditEvent

ERASED_ACTION = "subject.erased"
"""Audit action of one erasure request."""
SALT_FILE = "erasure.salt"
"""The workspace's salt of subject hashes, beside the trail and never inside it."""
SALT_BYTES = 32
ROW_SUFFIXES = (".parquet", ".csv")
"""Files that hold rows."""
ID_COLUMNS = ("request_id", "request_row")
"""How a row of the request log is named by the rows joined to it later (feedback labels)."""


class ErasureError(ValueError):
    """An erasure request cannot be carried out as given; the message names the fix."""


def parse_key(text: str, subject_key: str) -> tuple[str, str]:
    """``COLUMN=VALUE`` → (column, value); the column must be the schema's ``subject_key``."""
    column, sep, value = text.partition("=")
    if not sep or not column or not value:
        raise ErasureError(f"--key {text!r}: write COLUMN=VALUE, e.g. --key customer_id=C-42")
    if not subject_key:
        raise ErasureError(
            "the schema declares no subject_key, so rows cannot be erased by person; name the column that "
            "identifies the person (subject_key: customer_id) in the schema file"
        )
    if column != subject_key:
        raise ErasureError(
            f"--key names column {column!r}, but the schema's subject_key is {subject_key!r}: erasure matches "
            f"only the column that names the person; write --key {subject_key}=VALUE"
        )
    return column, value


def workspace_salt(root: Path) -> bytes:
    """The workspace's salt (created once, readable by its owner only): hashes of one subject agree."""
    path = Path(root) / SALT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        salt = path.read_bytes()
        if len(salt) != SALT_BYTES:
            raise ErasureError(
                f"{path} holds {len(salt)} bytes, not a {SALT_BYTES}-byte salt; restore it from a backup "
                "(a new salt would no longer match the subject hashes the trail holds)"
            ) from None
        return salt
    salt = secrets.token_bytes(SALT_BYTES)
    with os.fdopen(fd, "wb") as handle:
        handle.write(salt)
    return salt


def subject_hash(salt: bytes, column: str, value: str) -> str:
    """HMAC-SHA256 of ``column`` and ``value`` under the workspace's salt: what the trail holds."""
    return hmac.new(salt, f"{column}\x00{value}".encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class RowStore:
    """One store of rows: its name (what the report and the audit record call it) and its files."""

    name: str
    files: tuple[str, ...]
    joined_by_ids: bool = False
    """Rows without the key column are matched by the ids of the person's request-log rows."""
    request_log: bool = False
    """Its rows are request-log rows: the ids of the person's rows are collected for joined stores."""


@dataclass
class StoreOutcome:
    """What one store gave up: rows removed per file, and everything that keeps it from being conclusive."""

    store: str
    files_searched: int = 0
    rows_removed: int = 0
    rewritten: list[str] = field(default_factory=list)
    unsearchable: list[str] = field(default_factory=list)
    """Files without the key column (nor, for a joined store, the request ids)."""
    locked: list[object_lock.Retention] = field(default_factory=list)
    """Objects holding the person's rows that S3 Object Lock keeps: not erasable before their date."""
    refused: list[str] = field(default_factory=list)
    """Files holding the person's rows that were not rewritten (signed folders), and object versions
    S3 refused to delete; each with the reason."""
    searched_by: str = ""
    """How the rows were found: the key column, or the request ids for a joined store."""
    rows_without_key: int = 0
    """Rows whose key column is empty (e.g. requests sent as a packed tensor): whose they are cannot be told."""

    @property
    def conclusive(self) -> bool:
        return not (self.unsearchable or self.locked or self.refused or self.rows_without_key)

    def details(self) -> dict[str, Any]:
        """The audit record's part for this store: counts and names of files, never a value."""
        return {
            "files_searched": self.files_searched,
            "rows_removed": self.rows_removed,
            "files_rewritten": len(self.rewritten),
            "searched_by": self.searched_by,
            "unsearchable": list(self.unsearchable),
            "locked": [
                {"uri": r.uri, "mode": r.mode, "until": r.until, "legal_hold": r.legal_hold}
                for r in self.locked
            ],
            "refused": list(self.refused),
            "rows_without_key": self.rows_without_key,
        }


@dataclass
class Erasure:
    """The outcome of one request over every store."""

    column: str
    subject_hash: str
    stores: list[StoreOutcome]

    @property
    def rows_removed(self) -> int:
        return sum(s.rows_removed for s in self.stores)

    @property
    def conclusive(self) -> bool:
        return all(s.conclusive for s in self.stores)

    @property
    def status(self) -> str:
        """``erased`` (rows removed, nothing left unsearched), ``nothing found`` (searched everywhere, no
        row held), or ``not conclusive`` (a store could not be searched or a file could not be rewritten)."""
        if not self.conclusive:
            return "not conclusive"
        return "erased" if self.rows_removed else "nothing found"

    def details(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "subject_hash": self.subject_hash,
            "status": self.status,
            "rows_removed": self.rows_removed,
            "stores": {s.store: s.details() for s in self.stores},
        }


Guard = Callable[[str], str]
"""Why a file must not be rewritten ("" when it may be): e.g. it lies in a signed folder."""
Rewritten = Callable[[str, int], None]
"""Told each file rewritten and the rows removed from it (e.g. to re-record a digest a manifest holds)."""


def _never(uri: str) -> str:
    return ""


def _nothing(uri: str, removed: int) -> None:
    return None


def is_row_file(uri: str) -> bool:
    """A Parquet or CSV file by its name, or a local file whose bytes are Parquet's whatever its name (KFP
    writes a step's Dataset artifacts as ``…/validate-data/dataset``, no suffix: a person's rows are there)."""
    return uri.lower().endswith(ROW_SUFFIXES) or ("://" not in uri and is_parquet_bytes(Path(uri)))


PARQUET_MAGIC = b"PAR1"


def is_parquet_bytes(path: Path) -> bool:
    """Parquet's own marker at both ends of the file (the format's header and footer)."""
    try:
        if path.stat().st_size < 12:  # header, footer length and footer: no Parquet file is smaller
            return False
        with path.open("rb") as handle:
            if handle.read(4) != PARQUET_MAGIC:
                return False
            handle.seek(-4, io.SEEK_END)
            return handle.read(4) == PARQUET_MAGIC
    except OSError:
        return False


def read_rows(uri: str) -> pa.Table:
    """A Parquet or CSV file as an Arrow table (CSV cells as text: a rewrite changes no other row)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = storage.read_bytes(uri)
    if uri.lower().endswith(".csv"):
        import pandas as pd

        if not data.strip():
            return pa.table({})
        frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
        return pa.Table.from_pandas(frame, preserve_index=False)
    return pq.read_table(pa.BufferReader(data))


def rows_bytes(uri: str, table: pa.Table) -> bytes:
    """``table`` in ``uri``'s format."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if uri.lower().endswith(".csv"):
        buffer = io.BytesIO()
        table.to_pandas().to_csv(buffer, index=False)
        return buffer.getvalue()
    out = pa.BufferOutputStream()
    pq.write_table(table, out)
    return bytes(out.getvalue().to_pybytes())


def key_mask(table: pa.Table, column: str, value: str) -> pa.Array | None:
    """True where ``column`` holds ``value`` (compared as text); None when the table lacks the column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if column not in table.column_names:
        return None
    text = pc.cast(table.column(column), pa.string())
    return pc.fill_null(pc.equal(text, pa.scalar(value, pa.string())), False)


def ids_mask(table: pa.Table, ids: set[tuple[str, int]]) -> pa.Array | None:
    """True where ``(request_id, request_row)`` is one of ``ids``; None when the table lacks those columns."""
    import pyarrow as pa

    if not set(ID_COLUMNS) <= set(table.column_names):
        return None
    request_ids = table.column("request_id").to_pylist()
    rows = table.column("request_row").to_pylist()
    return pa.array(
        [
            (str(i), int(r)) in ids if i is not None and r is not None else False
            for i, r in zip(request_ids, rows, strict=True)
        ],
        pa.bool_(),
    )


def remove_rows(
    uri: str, table: pa.Table, mask: pa.Array, outcome: StoreOutcome, guard: Guard, rewritten: Rewritten
) -> None:
    """Rewrite ``uri`` without the rows ``mask`` marks, unless a lock or the guard forbids it (then named)."""
    import pyarrow.compute as pc

    removed = int(pc.sum(mask).as_py() or 0)
    if not removed:
        return
    lock = object_lock.retention(uri)
    if lock is not None:
        outcome.locked.append(lock)
        return
    reason = guard(uri)
    if reason:
        outcome.refused.append(f"{uri}: {reason}")
        return
    storage.write_bytes(uri, rows_bytes(uri, table.filter(pc.invert(mask))))
    outcome.refused += [
        f"{version}: S3 refused to delete this earlier version" for version in object_lock.purge_versions(uri)
    ]
    outcome.rows_removed += removed
    outcome.rewritten.append(uri)
    rewritten(uri, removed)


def erase_store(
    store: RowStore,
    column: str,
    value: str,
    ids: set[tuple[str, int]] | None,
    guard: Guard = _never,
    rewritten: Rewritten = _nothing,
) -> StoreOutcome:
    """Remove the person's rows from every file of ``store``. A request-log store adds the ids of the
    person's rows to ``ids`` (even those a lock keeps); a joined store matches rows without the key column
    by ``ids`` (None: the ids are incomplete, so such files cannot be searched)."""
    outcome = StoreOutcome(store.name, searched_by=column)
    by_ids = False
    for uri in store.files:
        table = read_rows(uri)
        outcome.files_searched += 1
        mask = key_mask(table, column, value)
        if mask is not None:
            outcome.rows_without_key += table.column(column).null_count
        if mask is None and store.joined_by_ids and ids is not None:
            mask = ids_mask(table, ids)
            by_ids = by_ids or mask is not None
        if mask is None:
            outcome.unsearchable.append(uri)
            continue
        if store.request_log and ids is not None:
            mine = table.filter(mask)
            if set(ID_COLUMNS) <= set(mine.column_names):
                pairs = zip(
                    mine.column("request_id").to_pylist(), mine.column("request_row").to_pylist(), strict=True
                )
                ids.update((str(i), int(r)) for i, r in pairs if i is not None and r is not None)
        remove_rows(uri, table, mask, outcome, guard, rewritten)
    if by_ids:
        outcome.searched_by = f"{column}, or request_id and request_row of the person's request-log rows"
    return outcome


def erase(
    stores: Iterable[RowStore],
    column: str,
    value: str,
    salt: bytes,
    guard: Guard = _never,
    rewritten: Rewritten = _nothing,
    known_ids: Iterable[tuple[str, int]] | None = (),
) -> Erasure:
    """Erase the person from every store (request logs first: their ids find the joined rows).

    ``known_ids`` are ids of the person's request-log rows found elsewhere (a batch job's parts name the
    rows of its request-log copy); None when some could not be found, so rows joined by id cannot be."""
    ordered = sorted(stores, key=lambda s: (not s.request_log, s.joined_by_ids))
    ids: set[tuple[str, int]] | None = None if known_ids is None else set(known_ids)
    outcomes = []
    for store in ordered:
        outcome = erase_store(store, column, value, ids, guard, rewritten)
        if store.request_log and outcome.unsearchable:
            ids = None  # some logged rows could not be searched: their ids, and so their labels, are unknown
        outcomes.append(outcome)
    return Erasure(column, subject_hash(salt, column, value), outcomes)


def record_erasure(erasure: Erasure, workspace_root: str | Path | None = None) -> AuditEvent:
    """The ``subject.erased`` audit record: the salted hash and the counts per store, never the value."""
    from mlops.governance.audit import record

    return record(
        ERASED_ACTION,
        f"subject/{erasure.subject_hash[:16]}",
        erasure.details(),
        workspace_root=workspace_root,
    )


def signed_folder_guard(events: Iterable[object]) -> Guard:
    """A guard refusing files inside a folder the trail records as signed (its signature covers them)."""
    folders = []
    for event in events:
        details = getattr(event, "details", {}) or {}
        if details.get("folder") and isinstance(details.get("files"), dict):
            folders.append((Path(str(details["folder"])).resolve(), getattr(event, "seq", "?")))

    def guard(uri: str) -> str:
        if "://" in uri and not uri.startswith("file://"):
            return ""
        path = Path(uri.removeprefix("file://")).resolve()
        for folder, seq in folders:
            if path.is_relative_to(folder):
                return (
                    f"inside {folder}, signed and recorded in audit record {seq}: rewriting it would break that "
                    "signature; issue the document again from the erased data, then delete this copy"
                )
        return ""

    return guard
