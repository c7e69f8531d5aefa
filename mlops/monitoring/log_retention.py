"""The request log's retention limit: raw rows older than ``window.request_log_retention_days`` are deleted
on each monitor run, while the day summaries keep month-long windows working.

The cutoff is a UTC midnight: the start of the day ``retention_days`` days before today, so today and the
``retention_days`` full days before it keep their rows; a row at the cutoff instant is kept, one a
microsecond earlier is not. 0 keeps every row (the default).

Before any row goes, every settled day before the cutoff gets its summary for the checked version
(:func:`mlops.monitoring.day_summaries.summarise_window` stores the days it lacks); only then are
files written before the cutoff deleted (with every stored version on S3) and files written a little after
it (a file holds rows of up to :data:`~mlops.monitoring.day_summaries.SETTLE` before its name's
time) rewritten without their older rows, atomically. Summaries that counted a deleted file name it under
``expired`` instead of ``files``, so the check that a day's files are all still there keeps holding and the
stored day keeps answering. Beyond the cutoff a window is answered in whole UTC days: a window starting
inside a day whose rows are gone counts none of that day (start it at a midnight). Rows of other versions before the cutoff go without a summary of their own
(the monitor checks one version at a time; summarise them by checking that version before they expire).

An object S3 Object Lock keeps is not deleted: it is named with its date in the ``request_log.retention``
audit record, beside the cutoff and the counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from mlops import storage
from mlops.governance.erasure import StoreOutcome, read_rows, remove_rows
from mlops.model.reference_profile import ReferenceProfile
from mlops.monitoring.day_summaries import DAY, SETTLE, SUMMARIES_DIR, summarise_window, summary_uri
from mlops.monitoring.logs import file_stamp, log_files
from mlops.monitoring.request_window import Calibrator, empty_summary
from mlops.storage import object_lock

RETENTION_ACTION = "request_log.retention"
"""Audit action of one retention pass: the cutoff, the counts, what a lock kept."""


def cutoff_of(now: datetime, retention_days: int) -> datetime | None:
    """The first instant whose rows are kept (a UTC midnight); None when ``retention_days`` is 0 (keep all)."""
    if retention_days < 0:
        raise ValueError(f"retention_days is {retention_days}; use 0 (keep every row) or a number of days")
    if retention_days == 0:
        return None
    today = datetime(now.year, now.month, now.day, tzinfo=UTC)
    return today - timedelta(days=retention_days)


@dataclass
class Retained:
    """What one retention pass did."""

    model_name: str
    cutoff: datetime
    retention_days: int
    files_deleted: list[str] = field(default_factory=list)
    files_rewritten: list[str] = field(default_factory=list)
    rows_deleted: int = 0
    days_summarised: list[str] = field(default_factory=list)
    """Days before the cutoff whose summary was stored by this pass (they had none yet)."""
    kept: StoreOutcome = field(default_factory=lambda: StoreOutcome("request log"))
    """Files a lock kept (named with their date) or whose older versions S3 refused to delete."""

    def details(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "cutoff": self.cutoff.isoformat(),
            "retention_days": self.retention_days,
            "files_deleted": len(self.files_deleted),
            "files_rewritten": len(self.files_rewritten),
            "rows_deleted": self.rows_deleted,
            "days_summarised": self.days_summarised,
            "locked": [
                {"uri": r.uri, "until": r.until, "legal_hold": r.legal_hold} for r in self.kept.locked
            ],
            "refused": self.kept.refused,
        }


def apply_retention(
    root: str,
    model_name: str,
    profile: ReferenceProfile,
    version: str,
    retention_days: int,
    now: datetime,
) -> Retained | None:
    """Summarise, then delete the model's request-log rows older than the cutoff; None when retention is off."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cutoff = cutoff_of(now, retention_days)
    if cutoff is None:
        return None
    retained = Retained(model_name, cutoff, retention_days)
    files = log_files(root, model_name, datetime.min.replace(tzinfo=UTC))
    stamps = {uri: file_stamp(uri) for uri in files}
    older = [uri for uri, stamp in stamps.items() if stamp is not None and stamp < cutoff]
    if not older and all(stamp is not None and stamp >= cutoff + SETTLE for stamp in stamps.values()):
        return retained
    first = min((s for s in stamps.values() if s is not None), default=cutoff) - SETTLE
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    if start < cutoff:
        summary = empty_summary(profile, start, cutoff, version)
        summarise_window(root, model_name, summary, profile, Calibrator(profile.calibration), now)
        retained.days_summarised = _stored_days(start, cutoff, summary.summarised_days)
    kept = retained.kept
    unsummarised = [
        d for d in _days(start, cutoff) if not storage.exists(summary_uri(root, model_name, version, d))
    ]
    if unsummarised:
        kept.refused.append(
            f"no row was deleted: the summaries of {len(unsummarised)} day(s) from {unsummarised[0]:%Y-%m-%d} could "
            f"not be stored under {root}; make the log store writable, the next check deletes them"
        )
        return retained
    for uri in older:
        lock = object_lock.retention(uri)
        if lock is not None:
            kept.locked.append(lock)
            continue
        retained.rows_deleted += read_rows(uri).num_rows
        storage.delete(uri)
        kept.refused += [
            f"{v}: S3 refused to delete this earlier version" for v in object_lock.purge_versions(uri, False)
        ]
        retained.files_deleted.append(uri)
    for uri, stamp in stamps.items():
        if stamp is not None and not cutoff <= stamp < cutoff + SETTLE:
            continue
        table = read_rows(uri)
        if "timestamp" not in table.column_names:
            continue
        mask = pc.fill_null(
            pc.less(table.column("timestamp"), pa.scalar(cutoff, pa.timestamp("us", tz="UTC"))), False
        )
        before = kept.rows_removed
        remove_rows(uri, table, mask, kept, lambda _: "", lambda *_: None)
        if kept.rows_removed > before:
            retained.rows_deleted += kept.rows_removed - before
            retained.files_rewritten.append(uri)
    expire_in_summaries(root, model_name, {uri.rsplit("/", 1)[-1] for uri in retained.files_deleted})
    return retained


def _days(start: datetime, cutoff: datetime) -> list[datetime]:
    days, day = [], start
    while day + DAY <= cutoff:
        days.append(day)
        day += DAY
    return days


def _stored_days(start: datetime, cutoff: datetime, served: list[str]) -> list[str]:
    """The days in [start, cutoff) a summarising pass stored (those not already served from a summary)."""
    return [f"{day:%Y-%m-%d}" for day in _days(start, cutoff) if f"{day:%Y-%m-%d}" not in served]


def expire_in_summaries(root: str, model_name: str, names: set[str]) -> int:
    """Move deleted log files from each day summary's ``files`` to its ``expired``; the summaries rewritten."""
    if not names:
        return 0
    changed = 0
    for uri in storage.list_prefix(f"{root.rstrip('/')}/{model_name}/{SUMMARIES_DIR}/"):
        if not uri.endswith(".json"):
            continue
        stored = json.loads(storage.read_bytes(uri))
        gone = [name for name in stored.get("files", []) if name in names]
        if not gone:
            continue
        stored["files"] = [name for name in stored["files"] if name not in names]
        stored["expired"] = sorted({*stored.get("expired", []), *gone})
        storage.write_bytes(uri, json.dumps(stored).encode())
        changed += 1
    return changed


def record_retention(retained: Retained, workspace_root: str, version: str) -> None:
    """The pass on the audit trail (``request_log.retention``): cutoff, counts, what a lock kept."""
    from mlops.governance import audit

    audit.record(
        RETENTION_ACTION,
        f"{retained.model_name}/{version}",
        retained.details(),
        links={"model_version": version},
        workspace_root=workspace_root or None,
    )


def retain_after_check(
    root: str,
    model_name: str,
    profile: ReferenceProfile,
    version: str,
    retention_days: int,
    workspace_root: str,
) -> Retained | None:
    """A monitor run's retention pass, now, recorded on the audit trail; None when retention is off."""
    retained = apply_retention(root, model_name, profile, version, retention_days, datetime.now(UTC))
    if retained is not None:
        record_retention(retained, workspace_root, version)
    return retained
