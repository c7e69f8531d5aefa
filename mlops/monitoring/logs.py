"""Read one model's request log (``<root>/<model>/requests-*.parquet``) for a time window.

Files go through :mod:`mlops.storage` (local paths or ``s3://``). A file's name carries
the time it was written, which is after every row it holds, so files written before the
window starts are skipped unopened.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np

from mlops import storage
from mlops.model.reference_profile import ReferenceProfile
from mlops.monitoring.request_window import (
    LOG_COLUMNS,
    WindowError,
    WindowSummary,
    add_table,
    check_schema,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

_STAMP = re.compile(r"requests-(\d{8}T\d{12})Z-")
LABELS_DIR = "labels"
ID_COLUMNS = ("request_id", "request_row")


def file_stamp(uri: str) -> datetime | None:
    """When a log file was written (after every row it holds), from its name; None for a name without one."""
    match = _STAMP.match(uri.rsplit("/", 1)[-1])
    return datetime.strptime(match.group(1), "%Y%m%dT%H%M%S%f").replace(tzinfo=UTC) if match else None


def log_files(root: str, model_name: str, start: datetime) -> list[str]:
    """The model's request-log files that may hold rows at or after ``start``."""
    directory = f"{root.rstrip('/')}/{model_name}/"
    files = []
    for uri in storage.list_prefix(directory):
        name = uri.rsplit("/", 1)[-1]
        if not (name.startswith("requests-") and name.endswith(".parquet")):
            continue
        match = _STAMP.match(name)
        if match and datetime.strptime(match.group(1), "%Y%m%dT%H%M%S%f").replace(tzinfo=UTC) < start:
            continue
        files.append(uri)
    return files


def read_labels(root: str, model_name: str) -> pd.DataFrame | None:
    """Labels stored by ``mlops feedback`` (request_id, request_row, label); None when there are none."""
    import pandas as pd

    files = [
        u
        for u in storage.list_prefix(f"{root.rstrip('/')}/{model_name}/{LABELS_DIR}/")
        if u.endswith(".parquet")
    ]
    if not files:
        return None
    frame = pd.concat([pd.read_parquet(io.BytesIO(storage.read_bytes(u))) for u in files], ignore_index=True)
    return frame.drop_duplicates(list(ID_COLUMNS), keep="last")


def read_range(
    uri: str, profile: ReferenceProfile, start: datetime, end: datetime, columns: list[str] | None = None
) -> pa.Table:
    """The file's rows (every version) inside [start, end): the profile's columns, or only ``columns``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = pa.BufferReader(storage.read_bytes(uri))
    try:
        schema = pq.read_schema(data)
    except pa.ArrowInvalid as exc:
        raise WindowError(f"request log {uri} is not a readable Parquet file: {exc}") from exc
    absent = [c for c in ("timestamp", "model_version") if c not in schema.names]
    if absent:
        raise WindowError(
            f"{uri} is not a request log: it lacks column(s) {absent}; remove it from {uri.rsplit('/', 1)[0]}"
        )
    wanted = columns or [*profile.feature_names, *LOG_COLUMNS, *ID_COLUMNS]
    table = pq.read_table(data, columns=[c for c in wanted if c in schema.names])
    return in_range(table, start, end)


def read_log(uri: str, since: datetime | None = None) -> pa.Table:
    """Every column of one request-log file (what was served, as logged), its rows at or after ``since``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(storage.read_bytes(uri)))
    except pa.ArrowInvalid as exc:
        raise WindowError(f"request log {uri} is not a readable Parquet file: {exc}") from exc
    if "timestamp" not in table.column_names:
        raise WindowError(f"{uri} is not a request log: it has no timestamp column")
    if since is None:
        return table
    import pyarrow.compute as pc

    stamps = table.column("timestamp")
    return table.filter(pc.greater_equal(stamps, pa.scalar(since, stamps.type)))


def in_range(table: pa.Table, start: datetime, end: datetime) -> pa.Table:
    import pyarrow as pa
    import pyarrow.compute as pc

    stamps = table.column("timestamp")
    return table.filter(
        pc.and_(
            pc.greater_equal(stamps, pa.scalar(start, pa.timestamp("us", tz="UTC"))),
            pc.less(stamps, pa.scalar(end, pa.timestamp("us", tz="UTC"))),
        )
    )


def of_version(table: pa.Table, version: str, other: dict[str, int]) -> pa.Table:
    """The rows of ``version``; the others are counted per version in ``other``."""
    import pyarrow.compute as pc

    mine = pc.equal(table.column("model_version"), version)
    versions = table.filter(pc.invert(mine)).column("model_version").to_numpy(zero_copy_only=False)
    for name, count in zip(*np.unique(versions, return_counts=True), strict=True):
        other[str(name)] = other.get(str(name), 0) + int(count)
    return table.filter(mine)


def window_tables(
    files: list[str],
    profile: ReferenceProfile,
    version: str,
    start: datetime,
    end: datetime,
    other: dict[str, int],
) -> Iterator[pa.Table]:
    """Each file's rows of ``version`` inside [start, end); rows of other versions are counted in ``other``."""
    for uri in files:
        table = of_version(read_range(uri, profile, start, end), version, other)
        if table.num_rows:  # a file of another schema matters when it holds rows of this window
            check_schema(table, profile, uri)
            yield table


def join_labels(summary: WindowSummary, table: pa.Table, labels: pd.DataFrame | None) -> None:
    """Feedback labels (and protected groups) of ``table``'s rows, joined by request id, into ``summary``."""
    if labels is None or "request_id" not in table.column_names:
        return
    logged = table.select([*ID_COLUMNS, "prediction"]).to_pandas()
    joined = logged.merge(labels, on=list(ID_COLUMNS), how="inner")
    labelled = joined[joined["label"].notna()]
    if len(labelled):
        summary.labelled.append((labelled["prediction"].to_numpy(float), labelled["label"].to_numpy(int)))
    groups = [c for c in joined.columns if c not in (*ID_COLUMNS, "prediction", "label")]
    if groups and joined[groups].notna().to_numpy().any():  # feedback named protected groups
        summary.grouped.append(joined.drop(columns=list(ID_COLUMNS)))


def summarise(
    root: str,
    model_name: str,
    summary: WindowSummary,
    profile: ReferenceProfile,
    calibrate: Callable[[np.ndarray], np.ndarray],
    on_table: Callable[[pa.Table], None] = lambda table: None,
) -> WindowSummary:
    """Stream the window into ``summary``; join feedback labels by request id where there are any."""
    labels = read_labels(root, model_name)
    files = log_files(root, model_name, summary.start)
    for table in window_tables(
        files, profile, summary.version, summary.start, summary.end, summary.other_versions
    ):
        summary.files += 1
        add_table(summary, table, calibrate)
        on_table(table)
        join_labels(summary, table, labels)
    return summary
