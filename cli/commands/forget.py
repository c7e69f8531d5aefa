"""``mlops forget --key COLUMN=VALUE --schema FILE``: erase one person's rows from every store of rows.

COLUMN must be the schema's ``subject_key``. The stores searched: the request log (``<workspace>/request-logs``,
every ``--request-log-uri``, and the request logs of batch jobs the audit trail records), feedback labels
beside it (by the key column, else by the request ids of the person's logged rows), batch outputs (the
``output_uri`` of every ``batch.scored`` record; a rewritten part's manifest digest is re-recorded; the
rows of a job's request-log copy, which has no key column, are found by its parts' rows),
reference rows stored with model versions (``explain_reference.parquet`` and every other table under
``<workspace>/artifacts``, and the copies a server cached), every other table
(Parquet, CSV) the workspace holds, and every ``--rows`` folder or prefix. Each file holding the person's
rows is rewritten without them (atomically). One ``subject.erased`` audit record holds a salted hash of
the value and the counts per store, never the value. Every other file of the workspace (logs, the SQLite store) is searched for the value's bytes and named
where it holds them. Exit 0 when the erasure is conclusive (erased, or
nothing found), 1 when it is not: a store that cannot be searched by COLUMN, an object S3 Object Lock
keeps (named with its date), or a file in a signed folder.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from mlops.workspace import Workspace

if TYPE_CHECKING:
    from mlops.governance.erasure import RowStore, StoreOutcome

HELP = (
    "erase one person's rows (--key SUBJECT_KEY=VALUE) from every store of rows; record it in the audit trail"
)
REQUEST_LOG_STORE = "request log"
LABELS_STORE = "feedback labels"
BATCH_STORE = "batch outputs"
REFERENCE_STORE = "reference rows"
OTHER_STORE = "other workspace tables"
EXTRA_STORE = "named stores (--rows)"
BATCH_LOG_STORE = "batch request-log copies"
BATCH_LOG_MARK = "-batch-"
"""In the name of a batch job's request-log copy (``requests-<time>-v<version>-batch-<job key>-…``)."""
SKIPPED_DIRS = ("_summaries", "_manifest")
"""Folders of aggregates and manifests: they hold no rows."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("forget", help=HELP, description=(__doc__ or "").split("\n\n", 1)[1])
    parser.add_argument(
        "--key", required=True, help="COLUMN=VALUE: the schema's subject_key and the person's value"
    )
    parser.add_argument(
        "--schema", required=True, help="the data's schema file (its subject_key names the column)"
    )
    parser.add_argument(
        "--request-log-uri",
        dest="request_log_uris",
        action="append",
        default=[],
        help="another request log root (repeatable; <workspace>/request-logs is always searched)",
    )
    parser.add_argument(
        "--rows",
        dest="rows",
        action="append",
        default=[],
        help="another folder or s3:// prefix of Parquet/CSV rows to erase from (repeatable)",
    )
    parser.set_defaults(handler=forget_command)


def row_files(root: str) -> list[str]:
    """Parquet and CSV files under ``root`` (a missing folder holds none), skipping aggregates and manifests."""
    from mlops import storage
    from mlops.governance.erasure import is_row_file

    files = (
        storage.list_prefix(root.rstrip("/") + "/") if root.startswith("s3://") else storage.list_prefix(root)
    )
    return [f for f in files if is_row_file(f) and not any(f"/{d}/" in f for d in SKIPPED_DIRS)]


def _local(uri: str) -> str:
    return str(Path(uri).resolve()) if "://" not in uri else uri


def discover(
    workspace: Workspace, log_roots: Iterable[str], extra: Iterable[str], events: Iterable[object]
) -> tuple[list[RowStore], dict[str, str]]:
    """The workspace's stores of rows (each file in one store) and the batch manifests by the part they name."""
    from cli.commands.run import REQUEST_LOG_DIR
    from components.batch_score.batch_finish import AUDIT_ACTION as BATCH_SCORED
    from mlops.governance.erasure import RowStore
    from mlops.model.row_attribution import REFERENCE_FILE
    from mlops.monitoring.logs import LABELS_DIR

    roots = [str(workspace.root / REQUEST_LOG_DIR), *log_roots]
    outputs: list[str] = []
    for event in events:
        if getattr(event, "action", "") == BATCH_SCORED:
            details = getattr(event, "details", {}) or {}
            if details.get("request_log_uri"):
                roots.append(str(details["request_log_uri"]))
            if details.get("output_uri"):
                outputs.append(str(details["output_uri"]))
    taken: set[str] = set()

    def claim(files: Iterable[str]) -> tuple[str, ...]:
        fresh = tuple(f for f in dict.fromkeys(files) if _local(f) not in taken)
        taken.update(_local(f) for f in fresh)
        return fresh

    logged = [f for root in dict.fromkeys(roots) for f in row_files(root)]
    labels = [f for f in logged if f"/{LABELS_DIR}/" in f]
    requests = [f for f in logged if f not in labels and f.rsplit("/", 1)[-1].startswith("requests-")]
    copies = [f for f in requests if BATCH_LOG_MARK in f.rsplit("/", 1)[-1]]
    stores = [
        RowStore(REQUEST_LOG_STORE, claim(f for f in requests if f not in copies), request_log=True),
        RowStore(BATCH_LOG_STORE, claim(copies), request_log=True, joined_by_ids=True),
        RowStore(LABELS_STORE, claim(labels), joined_by_ids=True),
    ]
    manifests = batch_manifests(outputs)
    stores.append(RowStore(BATCH_STORE, claim(f for out in dict.fromkeys(outputs) for f in row_files(out))))
    everywhere = row_files(str(workspace.root))
    references = [
        *row_files(str(workspace.root / "artifacts")),
        *(f for f in everywhere if f.endswith(f"/{REFERENCE_FILE}")),
    ]
    stores.append(RowStore(REFERENCE_STORE, claim(references)))
    stores.append(RowStore(OTHER_STORE, claim(everywhere)))
    stores.append(RowStore(EXTRA_STORE, claim(f for root in extra for f in row_files(root))))
    return [s for s in stores if s.files], manifests


def batch_manifests(outputs: Iterable[str]) -> dict[str, str]:
    """Each batch part file and the manifest that records its digest."""
    import json

    from components.batch_score.chunk_writer import MANIFEST_DIR, join
    from mlops import storage

    found: dict[str, str] = {}
    for output in dict.fromkeys(outputs):
        for uri in storage.list_prefix(join(output, MANIFEST_DIR) + "/"):
            try:
                part = json.loads(storage.read_bytes(uri)).get("part_uri", "")
            except ValueError:
                continue
            if part:
                found[_local(part)] = uri
    return found


def batch_ids(manifests: dict[str, str], column: str, value: str) -> set[tuple[str, int]] | None:
    """The request ids of the person's rows in batch jobs' request-log copies, which carry no key column: a
    chunk's copy holds its part's rows in order, under ``batch-<job key>/<chunk name>``. None when a part
    cannot be searched by ``column`` (its copy's rows of the person cannot be told)."""
    import pyarrow.compute as pc

    from components.batch_score.chunk_writer import MANIFEST_DIR, read_record
    from mlops import storage
    from mlops.governance.erasure import key_mask, read_rows

    ids: set[tuple[str, int]] = set()
    for manifest in manifests.values():
        record = read_record(manifest)
        if record is None or not record.request_log_uri or not storage.exists(record.part_uri):
            continue
        mask = key_mask(read_rows(record.part_uri), column, value)
        if mask is None:
            return None
        name = manifest.split(f"/{MANIFEST_DIR}/", 1)[1].removesuffix(".json")
        positions = pc.indices_nonzero(mask).to_pylist()
        ids.update((f"batch-{record.job_key}/{name}", int(p)) for p in positions)
    return ids


def rerecord_part(manifests: dict[str, str]) -> Callable[[str, int], None]:
    """After a batch part is rewritten, its manifest records the new digest and row count: a re-run of the
    job trusts the erased part instead of scoring the person's rows again."""

    def rewritten(uri: str, removed: int) -> None:
        import hashlib
        import json
        from dataclasses import asdict

        from components.batch_score.chunk_writer import read_record
        from mlops import storage

        manifest = manifests.get(_local(uri))
        record = read_record(manifest) if manifest else None
        if manifest is None or record is None:
            return
        record.part_sha256 = hashlib.sha256(storage.read_bytes(uri)).hexdigest()
        record.rows_scored -= removed
        storage.write_bytes(manifest, json.dumps(asdict(record), indent=1).encode())

    return rewritten


RESIDUE_LIMIT = 256 << 20
"""Larger files are not byte-searched for the value (model files, databases of that size are named as unchecked)."""
RESIDUE_STORE = "other workspace files (bytes)"


def residue(root: Path, value: str, searched: set[str]) -> StoreOutcome:
    """Every workspace file that is not a table of rows, searched for the value's bytes (logs, a SQLite store,
    a JSON document): what holds it is named, never rewritten (only tables of rows are erased by row)."""
    from mlops.governance.erasure import StoreOutcome

    outcome = StoreOutcome(RESIDUE_STORE, searched_by="the value's bytes")
    needle = value.encode()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if str(path.resolve()) in searched:
            continue
        outcome.files_searched += 1
        if path.stat().st_size > RESIDUE_LIMIT:
            outcome.unsearchable.append(str(path))
        elif needle in path.read_bytes():
            outcome.refused.append(
                f"{path}: holds the value's bytes and is not a table of rows; erase it by hand"
            )
    return outcome


def forget_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlops.data.schema_file import load_schema_file
    from mlops.governance.audit import read_events
    from mlops.governance.erasure import (
        erase,
        parse_key,
        record_erasure,
        signed_folder_guard,
        workspace_salt,
    )

    column, value = parse_key(args.key, load_schema_file(args.schema).subject_key)
    events = read_events(workspace.root)
    stores, manifests = discover(workspace, args.request_log_uris, args.rows, events)
    salt = workspace_salt(workspace.root)
    known = batch_ids(manifests, column, value)
    guard = signed_folder_guard(events)
    erasure = erase(stores, column, value, salt, guard, rerecord_part(manifests), known)
    searched = {_local(f) for store in stores for f in store.files if "://" not in f}
    erasure.stores.append(residue(workspace.root, value, searched))
    event = record_erasure(erasure, workspace.root)
    print(f"subject           {column} (salted hash {erasure.subject_hash[:16]})")
    for outcome in erasure.stores:
        print(
            f"{outcome.store:<17} {outcome.files_searched} file(s) searched by {outcome.searched_by}, "
            f"{outcome.rows_removed} row(s) removed from {len(outcome.rewritten)} file(s)"
        )
        for uri in outcome.unsearchable:
            print(f"  - cannot be searched by {column}: {uri}")
        for lock in outcome.locked:
            why = f"S3 Object Lock {lock.mode} until {lock.until}" if lock.until else ""
            held = "a legal hold" if lock.legal_hold else ""
            print(f"  - NOT erasable, kept by {' and '.join(w for w in (why, held) if w)}: {lock.uri}")
        for refusal in outcome.refused:
            print(f"  - NOT erased: {refusal}")
        if outcome.rows_without_key:
            print(
                f"  - {outcome.rows_without_key} row(s) have no {column}: whose they are cannot be told "
                "(e.g. requests sent as a packed tensor, which cannot carry the key)"
            )
    if not erasure.stores:
        print("stores            the workspace holds no Parquet or CSV rows")
    print(f"rows removed      {erasure.rows_removed}")
    print(f"audit record      {event.seq} ({event.action}: the salted hash and the counts, never the value)")
    print(f"status            {erasure.status}")
    return 0 if erasure.conclusive else 1
