"""Daily window summaries that merge: a month's check from thirty stored days, not thirty days of rows.

A window's summary is nothing but counts over the reference profile's fixed bins (per
feature: bin counts and sums, category counts, missing and row counts; the score histogram;
the performance estimate's expected positives/negatives per score bin and its (score bin,
calibration-map bin) cell counts). Counts add, so the summary of a union of days is the sum
of the days' summaries, and the drift judge and the estimate read the sum exactly as they
read a summary streamed from the raw rows (floating sums up to their rounding).

Each full UTC day of a window that ended at least :data:`SETTLE` before the check is stored
beside the request log, ``<log root>/<model>/_summaries/v<version>/<YYYY-MM-DD>.json``, with
the fingerprint of the profile it was binned against and the log files it read. A stored day
is used when its fingerprint matches the profile and no log file that may hold the day's
rows (named as written from the day's start to :data:`SETTLE` after its end: the server
writes a file within its flush interval of its rows) is missing from it and no file it counted
was removed; otherwise the day is read from the raw rows again and its summary rewritten.

Feedback labels (joined by request id) and protected groups are not summarised: they arrive
after the day. When the model has feedback labels, the days served from summaries are read
again for their ids and scores only (three columns), so realised metrics and bias figures
still cover the whole window.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from mlops import storage
from mlops.model.reference_profile import ReferenceProfile
from mlops.monitoring.request_window import (
    SCORE_BINS,
    Calibrator,
    NumericCounts,
    WindowError,
    WindowScoreBins,
    WindowSummary,
    add_table,
    check_schema,
    empty_summary,
)

SUMMARIES_DIR = "_summaries"
SUMMARY_FORMAT = 1
SETTLE = timedelta(hours=1)
"""A day is summarised once it ended this long before the check: the server has flushed its rows by then."""
DAY = timedelta(days=1)

log = logging.getLogger(__name__)


def fingerprint(profile: ReferenceProfile) -> str:
    """Identifies the bins a summary counts in: the profile's JSON, hashed."""
    return hashlib.sha256(profile.to_json().encode()).hexdigest()[:16]


def summary_uri(root: str, model_name: str, version: str, day: datetime) -> str:
    return f"{root.rstrip('/')}/{model_name}/{SUMMARIES_DIR}/v{version}/{day:%Y-%m-%d}.json"


@dataclass(frozen=True)
class Plan:
    """Which parts of a window come from stored days and which from raw rows."""

    days: list[datetime]
    """Full UTC days inside the window that are settled (may be served from summaries)."""
    raw: list[tuple[datetime, datetime]]
    """The rest of the window: ranges read from raw rows only."""


def plan_window(start: datetime, end: datetime, now: datetime) -> Plan:
    """Split [start, end) into settled full UTC days and the leftover ranges (head, tail, unsettled days)."""
    first = datetime(start.year, start.month, start.day, tzinfo=UTC)
    if first < start:
        first += DAY
    days: list[datetime] = []
    day = first
    while day + DAY <= end and day + DAY + SETTLE <= now:
        days.append(day)
        day += DAY
    raw: list[tuple[datetime, datetime]] = []
    if not days:
        return Plan([], [(start, end)])
    if start < days[0]:
        raw.append((start, days[0]))
    if days[-1] + DAY < end:
        raw.append((days[-1] + DAY, end))
    return Plan(days, raw)


def to_json(summary: WindowSummary, fingerprint_: str, files: list[str]) -> str:
    joint = summary.estimate.joint
    cells = np.flatnonzero(joint)
    return json.dumps(
        {
            "format": SUMMARY_FORMAT,
            "profile": fingerprint_,
            "version": summary.version,
            "start": summary.start.isoformat(),
            "end": summary.end.isoformat(),
            "rows": summary.rows,
            "files": sorted(files),
            "other_versions": summary.other_versions,
            "numeric": {c.profile.name: _numeric(c) for c in summary.numeric},
            "categorical": {
                c.profile.name: {"counts": c.counts, "rows": c.rows, "missing": c.missing}
                for c in summary.categorical
            },
            "score": _numeric(summary.score),
            "estimate": {
                "positives": summary.estimate.positives.tolist(),
                "negatives": summary.estimate.negatives.tolist(),
                "correct": summary.estimate.correct,
                "rows": summary.estimate.rows,
                "width": int(joint.shape[1]),
                "cells": cells.tolist(),
                "counts": joint.ravel()[cells].astype(np.int64).tolist(),
            },
        }
    )


def _numeric(counts: NumericCounts) -> dict[str, Any]:
    return {
        "counts": counts.counts.tolist(),
        "sums": counts.sums.tolist(),
        "rows": counts.rows,
        "missing": counts.missing,
    }


def _add_numeric(counter: NumericCounts, part: dict[str, Any], source: str) -> None:
    counts = np.asarray(part["counts"], dtype=np.int64)
    if counts.shape != counter.counts.shape:
        raise WindowError(
            f"summary {source} has {len(counts)} bins for {counter.profile.name!r}, the profile "
            f"{len(counter.counts)}; delete the summary to rebuild it from the request log"
        )
    counter.counts += counts
    counter.sums += np.asarray(part["sums"], dtype=float)
    counter.rows += int(part["rows"])
    counter.missing += int(part["missing"])


def add_stored(summary: WindowSummary, stored: dict[str, Any], source: str) -> None:
    """Add a stored day's counts to ``summary`` (its bins are the same profile's: the caller checked)."""
    for counter in summary.numeric:
        _add_numeric(counter, stored["numeric"][counter.profile.name], source)
    for cat in summary.categorical:
        part = stored["categorical"][cat.profile.name]
        for key, value in part["counts"].items():
            cat.counts[key] = cat.counts.get(key, 0) + int(value)
        cat.rows += int(part["rows"])
        cat.missing += int(part["missing"])
    _add_numeric(summary.score, stored["score"], source)
    add_estimate(summary.estimate, stored["estimate"])
    summary.rows += int(stored["rows"])
    for name, count in stored["other_versions"].items():
        summary.other_versions[name] = summary.other_versions.get(name, 0) + int(count)


def add_estimate(estimate: WindowScoreBins, part: dict[str, Any]) -> None:
    estimate.positives += np.asarray(part["positives"], dtype=float)
    estimate.negatives += np.asarray(part["negatives"], dtype=float)
    estimate.correct += float(part["correct"])
    estimate.rows += int(part["rows"])
    width = int(part["width"])
    if width > estimate.joint.shape[1]:
        estimate.joint = np.pad(estimate.joint, ((0, 0), (0, width - estimate.joint.shape[1])))
    flat = np.zeros(SCORE_BINS * width)
    flat[np.asarray(part["cells"], dtype=np.int64)] = np.asarray(part["counts"], dtype=float)
    estimate.joint[:, :width] += flat.reshape(SCORE_BINS, width)


def merge(parts: list[WindowSummary], into: WindowSummary) -> WindowSummary:
    """Add summaries (same profile) into ``into`` through their stored form: what a month's check does."""
    for part in parts:
        add_stored(into, json.loads(to_json(part, "", [])), "memory")
        into.files += part.files
    return into


def load_day(
    root: str, model_name: str, version: str, day: datetime, fingerprint_: str, log_files: list[str]
) -> dict[str, Any] | None:
    """The stored summary of ``day`` when it is current: same profile, every log file that may hold the day read."""
    uri = summary_uri(root, model_name, version, day)
    if not storage.exists(uri):
        return None
    try:
        stored = json.loads(storage.read_bytes(uri))
    except (ValueError, OSError) as exc:
        log.warning("summary %s is unreadable (%s); the day is read from the request log", uri, exc)
        return None
    if stored.get("format") != SUMMARY_FORMAT or stored.get("profile") != fingerprint_:
        return None
    read = set(stored.get("files", []))
    if any(f not in read for f in files_for_day(log_files, day)):
        return None  # a log file of that day arrived after it was summarised
    if read - {uri.rsplit("/", 1)[-1] for uri in log_files}:
        return None  # a file it counted was removed
    return dict(stored)


def files_for_day(log_files: list[str], day: datetime) -> list[str]:
    """Log files that may hold rows of ``day``: written from its start to ``SETTLE`` after its end."""
    from mlops.monitoring.logs import file_stamp

    out = []
    for uri in log_files:
        stamp = file_stamp(uri)
        if stamp is None or day <= stamp < day + DAY + SETTLE:
            out.append(uri.rsplit("/", 1)[-1])
    return out


def store_day(
    root: str, model_name: str, summary: WindowSummary, fingerprint_: str, files: list[str]
) -> None:
    """Write a day's summary; a failure (read-only log store) is logged and never fails the check."""
    uri = summary_uri(root, model_name, summary.version, summary.start)
    try:
        storage.write_bytes(uri, to_json(summary, fingerprint_, files).encode())
    except Exception as exc:  # noqa: BLE001 - the check goes on without its cache
        log.warning("could not store the day summary %s (%s); the next check reads that day again", uri, exc)


def summarise_window(
    root: str,
    model_name: str,
    summary: WindowSummary,
    profile: ReferenceProfile,
    calibrate: Calibrator,
    now: datetime,
    on_table: Callable[[Any], None] = lambda table: None,
) -> WindowSummary:
    """Fill ``summary`` from stored days where they are current and from the raw rows for the rest.

    Days read from raw rows are stored for the next check. ``summary.summarised_rows`` and
    ``summary.summarised_days`` say what came from stored summaries.
    """
    from mlops.monitoring.logs import (
        ID_COLUMNS,
        file_stamp,
        in_range,
        join_labels,
        log_files,
        of_version,
        read_labels,
        read_range,
    )

    plan = plan_window(summary.start, summary.end, now)
    files = log_files(root, model_name, summary.start)
    mark = fingerprint(profile)
    version = summary.version
    missing: dict[datetime, WindowSummary] = {}
    names: dict[datetime, list[str]] = {}
    for day in plan.days:
        stored = load_day(root, model_name, version, day, mark, files)
        if stored is None:
            missing[day] = empty_summary(profile, day, day + DAY, version)
            names[day] = []
            continue
        add_stored(summary, stored, summary_uri(root, model_name, version, day))
        summary.summarised_rows += int(stored["rows"])
        summary.summarised_days.append(f"{day:%Y-%m-%d}")
    raw = sorted([*plan.raw, *((d, d + DAY) for d in missing)])
    labels = read_labels(root, model_name)
    if not raw and labels is None:
        return summary
    first = raw[0][0] if raw and labels is None else summary.start
    by_micros = {int(d.timestamp() * 1_000_000): d for d in missing}
    label_columns = [*ID_COLUMNS, "prediction", "timestamp", "model_version"]
    for uri in files:
        stamp = file_stamp(uri)
        if stamp is not None and stamp < first:
            continue
        name = uri.rsplit("/", 1)[-1]
        # a file written before the first range still to read holds only stored days' rows: ids and scores
        only_labels = stamp is not None and (not raw or stamp < raw[0][0])
        table = read_range(uri, profile, first, summary.end, label_columns if only_labels else None)
        for start, end in raw:
            part = in_range(table, start, end)
            if not part.num_rows:
                continue
            stored_day = by_micros.get(int(start.timestamp() * 1_000_000))
            target = summary
            if stored_day is not None and end - start == DAY:
                target = missing[stored_day]
                names[stored_day].append(name)
            mine = of_version(part, version, target.other_versions)
            if not mine.num_rows:
                continue
            check_schema(mine, profile, uri)
            add_table(target, mine, calibrate)
            target.files += 1
            on_table(mine)
        if labels is not None:
            for day_text in summary.summarised_days:
                day = datetime.fromisoformat(day_text).replace(tzinfo=UTC)
                part = in_range(
                    table.select([c for c in label_columns if c in table.column_names]), day, day + DAY
                )
                mine = of_version(part, version, {})
                if mine.num_rows:
                    join_labels(summary, mine, labels)
            for start, end in raw:
                mine = of_version(in_range(table, start, end), version, {})
                if mine.num_rows:
                    join_labels(summary, mine, labels)
    for day, part in missing.items():
        for name in files_for_day(files, day):
            if name not in names[day]:
                names[day].append(name)
        store_day(root, model_name, part, mark, names[day])
        add_stored(summary, json.loads(to_json(part, mark, [])), "memory")
        summary.files += part.files
    return summary


def sample_stored_days(
    root: str,
    model_name: str,
    summary: WindowSummary,
    profile: ReferenceProfile,
    rows: int,
    on_table: Callable[[Any], None],
) -> int:
    """Rows of the stored days for the HTML report's sample (newest files first, until ``rows`` are read).

    The summaries hold counts, not rows; the report's picture needs rows, so the newest log files of
    the stored days are read until ``rows`` of them have been offered. Returns the rows offered.
    """
    from mlops.monitoring.logs import file_stamp, in_range, log_files, of_version, read_range

    days = [datetime.fromisoformat(d).replace(tzinfo=UTC) for d in summary.summarised_days]
    if not days or rows <= 0:
        return 0
    first, last = min(days), max(days) + DAY
    files = log_files(root, model_name, first)
    files.sort(key=lambda uri: file_stamp(uri) or datetime.max.replace(tzinfo=UTC), reverse=True)
    offered = 0
    for uri in files:
        table = read_range(uri, profile, first, last)
        for day in days:
            mine = of_version(in_range(table, day, day + DAY), summary.version, {})
            if mine.num_rows:
                check_schema(mine, profile, uri)
                on_table(mine)
                offered += mine.num_rows
        if offered >= rows:
            break
    return offered
