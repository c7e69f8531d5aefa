"""The audit trail: one append-only, hash-chained record per state change, the one function every layer calls.

Every state change the platform makes — validation result, registration, signing, alias
move, gate decision, rollout step, rollback, retrain trigger — is recorded through
:func:`record`, so an auditor reads one trail instead of MLflow tags scattered over
versions. Each record carries its sequence number, the previous record's hash and its
own (SHA-256 over its canonical JSON), and a separate *head* (last sequence number and
hash) is rewritten with every append, so :func:`verify` names a record that was edited,
reordered or deleted, the last one included.

Where it lives: ``MLOPS_AUDIT_URI`` (a local ``.jsonl`` path, or an ``s3://bucket/prefix``
under which each record is its own object ``<seq>.json``, created only if absent (``If-None-Match: *``:
two writers racing for one number never overwrite each other; the loser chains to the winner's
record) — on a bucket created with S3 Object Lock and a default retention, no record can be
overwritten or deleted), else
``audit.jsonl`` in the workspace the caller names, else the workspace of a
``sqlite:///…/mlflow.db`` tracking store. Secrets never enter a record
(:func:`mlops.governance.secrets.redact`).
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

AUDIT_URI_ENV = "MLOPS_AUDIT_URI"
"""Where the trail lives on a cluster (``s3://bucket/audit/<name>``) or when a caller has no workspace."""
ACTOR_ENV = "MLOPS_ACTOR"
"""Who acts: a person's name or the pod's service account; defaults to the OS user."""
AUDIT_FILE = "audit.jsonl"
HEAD_SUFFIX = ".head"
"""Local: ``audit.jsonl.head``; S3: ``<prefix>/HEAD.json``: the last record's sequence number and hash."""
GENESIS = "0" * 64
"""The previous hash of the first record."""


class AuditError(ValueError):
    """The trail cannot be written or read; the message says where and how to fix it."""


APPEND_ATTEMPTS = 50
"""Writers racing for one sequence number on S3: each lost race re-reads the tip and tries the next."""


class _Taken(Exception):
    """The record's sequence number was stored by another writer between reading the tip and writing."""


@dataclass(frozen=True)
class AuditEvent:
    """One state change: what happened, to what, by whom, when, and the ids that link it."""

    action: str
    """What happened, e.g. ``alias.moved``, ``gate.decided``, ``rollout.step``, ``retrain.triggered``."""
    subject: str
    """What it happened to, e.g. ``credit-default/3`` or ``deployment/credit-default``."""
    details: dict[str, Any] = field(default_factory=dict)
    """What changed (from/to, decision, reasons); never a secret."""
    links: dict[str, str] = field(default_factory=dict)
    """Ids that tie the record to the rest: ``pipeline_run_id``, ``mlflow_run_id``, ``model_version``, ``deployment``."""
    actor: str = ""
    at: str = ""
    seq: int = 0
    """Position in the trail, from 1."""
    prev_hash: str = ""
    """``hash`` of record ``seq - 1`` (:data:`GENESIS` for the first)."""
    hash: str = ""
    """SHA-256 of this record's canonical JSON without this field."""


def default_actor() -> str:
    return os.environ.get(ACTOR_ENV) or getpass.getuser()


def audit_location(workspace_root: str | Path | None = None, tracking_uri: str = "") -> str:
    """``MLOPS_AUDIT_URI`` > ``<workspace>/audit.jsonl`` > beside a ``sqlite:///`` tracking store."""
    configured = os.environ.get(AUDIT_URI_ENV, "")
    if configured:
        return configured
    if workspace_root is None and tracking_uri:
        from mlops.workspace import workspace_of

        workspace_root = workspace_of(tracking_uri)
    if workspace_root is None:
        raise AuditError(f"no audit trail location: set {AUDIT_URI_ENV} or pass the workspace directory")
    return str(Path(workspace_root) / AUDIT_FILE)


def content_hash(entry: Mapping[str, Any]) -> str:
    """SHA-256 of a record's canonical JSON (sorted keys, no spaces), its ``hash`` field left out."""
    body = {k: v for k, v in entry.items() if k != "hash"}
    return hashlib.sha256(
        json.dumps(body, sort_keys=True, separators=(",", ":"), default=str).encode()
    ).hexdigest()


def record(
    action: str,
    subject: str,
    details: Mapping[str, Any] | None = None,
    *,
    links: Mapping[str, str] | None = None,
    actor: str | None = None,
    workspace_root: str | Path | None = None,
    tracking_uri: str = "",
) -> AuditEvent:
    """Append one event to the trail (chained to the last one) and return it."""
    from mlops.governance.secrets import redact

    location = audit_location(workspace_root, tracking_uri)
    trail = _trail(location)
    for _ in range(APPEND_ATTEMPTS):
        with trail.locked():
            last = trail.tip()
            entry = {
                **asdict(AuditEvent(action=action, subject=subject)),
                "details": redact(json.loads(json.dumps(dict(details or {}), default=str))),
                "links": redact({key: str(value) for key, value in (links or {}).items()}),
                "actor": actor or default_actor(),
                "at": datetime.now(UTC).isoformat(),
                "seq": (last[0] if last else 0) + 1,
                "prev_hash": last[1] if last else GENESIS,
            }
            entry["hash"] = content_hash(entry)
            event = AuditEvent(**entry)
            try:
                trail.append(event)
            except _Taken:
                continue  # another writer stored this sequence number first: chain to its record instead
        return event
    raise AuditError(
        f"could not append to {location}: {APPEND_ATTEMPTS} attempts in a row lost the race to other writers; "
        "record again"
    )


def record_in_run(
    action: str,
    subject: str,
    details: Mapping[str, Any] | None = None,
    *,
    pipeline_run_id: str = "",
    run_id: str | None = None,
    tracking_uri: str | None = None,
    **links: str,
) -> AuditEvent:
    """:func:`record` from inside a task's MLflow run: the trail follows its tracking store, and the
    links name the pipeline run and the MLflow run besides ``links``.

    ``run_id`` and ``tracking_uri`` name the run and its store when the caller holds them (a task
    recording over REST, :meth:`mlops.tracking.store.TrackingStore.recording_run`): then MLflow is not
    imported; left out, they are MLflow's active run and tracking URI."""
    if run_id is None or tracking_uri is None:
        import mlflow

        if run_id is None:
            run = mlflow.active_run()
            run_id = run.info.run_id if run else ""
        tracking_uri = mlflow.get_tracking_uri() if tracking_uri is None else tracking_uri
    ids = {"pipeline_run_id": pipeline_run_id, "mlflow_run_id": run_id, **links}
    return record(
        action,
        subject,
        details,
        links={k: v for k, v in ids.items() if v},
        tracking_uri=tracking_uri,
    )


def read_events(workspace_root: str | Path | None = None, tracking_uri: str = "") -> list[AuditEvent]:
    """Every event in the trail, in stored order (empty when nothing was recorded yet)."""
    trail = _trail(audit_location(workspace_root, tracking_uri))
    return [AuditEvent(**entry) for _, entry in trail.entries() if isinstance(entry, dict)]


@dataclass(frozen=True)
class Verification:
    """What :func:`verify` found: the records read and every problem, each naming its record."""

    location: str
    records: int
    problems: list[str]
    protection: str
    """How the store protects the records (e.g. S3 Object Lock mode and retention), or why it does not."""

    @property
    def intact(self) -> bool:
        return not self.problems


def verify(workspace_root: str | Path | None = None, tracking_uri: str = "") -> Verification:
    """Check every record's hash, the chain between records and the head; name each broken record."""
    location = audit_location(workspace_root, tracking_uri)
    trail = _trail(location)
    problems: list[str] = []
    previous: dict[str, Any] | None = None
    hashes: dict[int, str] = {}
    count = 0
    for where, entry in trail.entries():
        if not isinstance(entry, dict) or not {"seq", "hash", "prev_hash"} <= set(entry):
            problems.append(f"{where} is not an audit record (edited or corrupted)")
            continue
        count += 1
        hashes.setdefault(entry["seq"], entry["hash"])
        name = f"record {entry['seq']} ({where}: {entry.get('action')} {entry.get('subject')} at {entry.get('at')})"
        if content_hash(entry) != entry["hash"]:
            problems.append(f"{name} was edited: its content no longer matches its hash {entry['hash'][:12]}")
        expected = previous["seq"] + 1 if previous else 1
        if entry["seq"] < expected:
            problems.append(f"{name} is out of order: it comes after record {expected - 1} (reordered)")
        elif entry["seq"] > expected:
            missing = f"{expected}" if entry["seq"] == expected + 1 else f"{expected}-{entry['seq'] - 1}"
            problems.append(f"record(s) {missing} before {name} are missing (deleted)")
        elif entry["prev_hash"] != (previous["hash"] if previous else GENESIS):
            problems.append(f"{name} does not chain to the record before it (that record was replaced)")
        previous = entry
    head = trail.head()
    # The head may lag behind the last record (an S3 writer stopped, or overtaken, between storing its
    # record and moving the head); it must never be ahead of it, and the record it names must carry its hash.
    if head is not None and (previous is None or head[0] > previous["seq"] or hashes.get(head[0]) != head[1]):
        last = previous["seq"] if previous else 0
        problems.append(
            f"the trail ends at record {last} but its head records record {head[0]} (hash {head[1][:12]}): "
            f"the last record(s) after {last} were deleted or replaced"
        )
    return Verification(location, count, problems, trail.protection())


def _trail(location: str) -> _LocalTrail | _S3Trail:
    return _S3Trail(location) if location.startswith("s3://") else _LocalTrail(Path(location))


@dataclass(frozen=True)
class _LocalTrail:
    """A JSON-lines file appended under an exclusive ``flock``; the head beside it."""

    path: Path

    @property
    def head_path(self) -> Path:
        return self.path.with_name(self.path.name + HEAD_SUFFIX)

    @contextmanager
    def locked(self) -> Iterator[None]:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.with_name(self.path.name + ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def entries(self) -> Iterator[tuple[str, Any]]:
        if not self.path.is_file():
            return
        with self.path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield f"line {number}", _parse(line)

    def tip(self) -> tuple[int, str] | None:
        """Sequence number and hash the next record chains to: the head (a trail cut short keeps its gap)."""
        head = self.head()
        if head is not None or not self.path.is_file():
            return head
        entry = _last_line(self.path)
        return (
            (int(entry["seq"]), str(entry["hash"])) if isinstance(entry, dict) and "hash" in entry else None
        )

    def append(self, event: AuditEvent) -> None:
        line = json.dumps(asdict(event), sort_keys=True, default=str) + "\n"
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        from mlops.storage import write_bytes

        write_bytes(str(self.head_path), json.dumps({"seq": event.seq, "hash": event.hash}).encode())

    def head(self) -> tuple[int, str] | None:
        if not self.head_path.is_file():
            return None
        head = json.loads(self.head_path.read_text())
        return int(head["seq"]), str(head["hash"])

    def protection(self) -> str:
        return "local file: the head detects a deleted last record; nothing stops a rewrite of both"


@dataclass(frozen=True)
class _S3Trail:
    """One object per record under a prefix (Object Lock makes each immutable); ``HEAD.json`` beside them."""

    prefix: str

    @property
    def root(self) -> str:
        return self.prefix.rstrip("/")

    @contextmanager
    def locked(self) -> Iterator[None]:
        yield  # one writer per record key: a second writer of the same seq is refused in append

    def entries(self) -> Iterator[tuple[str, Any]]:
        from mlops import storage

        for uri in storage.list_prefix(self.root + "/"):
            name = uri.rsplit("/", 1)[-1]
            if name.endswith(".json") and name != "HEAD.json":
                yield f"object {name}", _parse(storage.read_bytes(uri).decode())

    def tip(self) -> tuple[int, str] | None:
        """The last record: the head, unless records were stored after it (a writer that lost the
        race to rewrite the head, or one stopped between the record and the head)."""
        head = self.head()
        if head is not None:
            later = self._entry(head[0] + 1)
            while later is not None:
                head, later = (int(later["seq"]), str(later["hash"])), self._entry(int(later["seq"]) + 1)
            return head
        entries = [entry for _, entry in self.entries() if isinstance(entry, dict) and "hash" in entry]
        return (int(entries[-1]["seq"]), str(entries[-1]["hash"])) if entries else None

    def append(self, event: AuditEvent) -> None:
        """Store the record only if its sequence number is free (S3 ``If-None-Match: *``): two writers
        never both store record N; the loser raises :class:`_Taken` and chains to the winner's record."""
        from mlops import storage

        target = self._key(event.seq)
        try:
            storage.create_bytes(target, json.dumps(asdict(event), sort_keys=True, default=str).encode())
        except storage.AlreadyExists as exc:
            raise _Taken(target) from exc
        # The head only moves forward: a slower writer never puts back an older one.
        current = self.head()
        if current is None or current[0] < event.seq:
            storage.write_bytes(
                f"{self.root}/HEAD.json", json.dumps({"seq": event.seq, "hash": event.hash}).encode()
            )

    def _entry(self, seq: int) -> dict[str, Any] | None:
        from mlops import storage

        uri = self._key(seq)
        if not storage.exists(uri):
            return None
        entry = _parse(storage.read_bytes(uri).decode())
        return entry if isinstance(entry, dict) and "hash" in entry else None

    def head(self) -> tuple[int, str] | None:
        from mlops import storage

        uri = f"{self.root}/HEAD.json"
        if not storage.exists(uri):
            return None
        head = json.loads(storage.read_bytes(uri))
        return int(head["seq"]), str(head["hash"])

    def protection(self) -> str:
        from mlops import storage
        from mlops.storage import s3

        location = storage.parse(self.root, need_key=False)
        try:
            config = s3.s3_client().get_object_lock_configuration(Bucket=location.bucket)
        except Exception as exc:  # ObjectLockConfigurationNotFoundError on a bucket created without it
            return f"no S3 Object Lock on bucket {location.bucket!r} ({type(exc).__name__}); records can be deleted"
        rule = config.get("ObjectLockConfiguration", {}).get("Rule", {}).get("DefaultRetention", {})
        if not rule:
            return f"S3 Object Lock enabled on {location.bucket!r} without a default retention"
        span = f"{rule['Days']} day(s)" if "Days" in rule else f"{rule.get('Years')} year(s)"
        return f"S3 Object Lock {rule.get('Mode')} for {span} on bucket {location.bucket!r}"

    def _key(self, seq: int) -> str:
        return f"{self.root}/{seq:010d}.json"


def _parse(line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        return None


def _last_line(path: Path) -> Any:
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - (1 << 16)))
        tail = handle.read().rstrip()  # all trailing whitespace: entries() skips blank lines too
    if b"\n" not in tail and size > (1 << 16):
        tail = path.read_bytes().rstrip()
    return _parse(tail.rsplit(b"\n", 1)[-1].decode())
