"""Labels that arrive after the fact, stored beside the request log and joined by request id.

A labels file (CSV or Parquet) has ``request_id`` and ``label`` (0/1) columns, and
``request_row`` for requests of several rows (default 0). It is validated, stored as
``<log root>/<model>/labels/labels-<time>.parquet`` through :mod:`mlops.storage`, and the
next check reports realised accuracy and ROC AUC on the window's labelled rows.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from mlops import storage
from mlops.data.dataset import load_table
from mlops.monitoring.logs import ID_COLUMNS, LABELS_DIR, log_files

if TYPE_CHECKING:
    import pandas as pd


class FeedbackError(ValueError):
    """A labels file cannot be used; the message names the problem and the fix."""


@dataclass(frozen=True)
class Stored:
    uri: str
    labels: int
    matched: int
    """Labels whose (request_id, request_row) is in the request log."""


def store_labels(labels_uri: str, log_root: str, model_name: str) -> Stored:
    """Validate and store a feedback file: ``request_id``, ``label`` (0/1), optional ``request_row``, and any
    other column as a protected attribute of the request (e.g. ``sex``), kept as text for bias drift. The
    label may be absent (or empty in a row) when such a column is given: the group alone serves selection rates."""
    frame, _ = load_table(labels_uri)
    groups = [c for c in frame.columns if c not in (*ID_COLUMNS, "label")]
    required = ("request_id",) if groups else ("request_id", "label")
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise FeedbackError(
            f"labels file {labels_uri} lacks column(s) {missing}; it needs request_id and label "
            "(0/1), and request_row for requests of several rows"
        )
    if "request_row" not in frame.columns:
        frame["request_row"] = 0
    if "label" not in frame.columns:
        frame["label"] = None
    labelled = frame["label"].notna()
    bad = frame[labelled & ~frame["label"].isin([0, 1])]
    if len(bad):
        raise FeedbackError(
            f"labels file {labels_uri} has {len(bad)} label(s) other than 0/1 "
            f"(e.g. request {bad['request_id'].iloc[0]!r}: {bad['label'].iloc[0]!r}); fix or drop those rows"
        )
    frame = frame.assign(
        request_id=frame["request_id"].astype(str),
        request_row=frame["request_row"].astype("int32"),
        label=frame["label"].astype("Int8"),
        **{g: frame[g].astype("string") for g in groups},
    )[[*ID_COLUMNS, "label", *groups]]
    logged = _logged_ids(log_root, model_name)
    matched = int(frame.merge(logged, on=list(ID_COLUMNS), how="inner").shape[0]) if len(logged) else 0
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    uri = f"{log_root.rstrip('/')}/{model_name}/{LABELS_DIR}/labels-{stamp}-{uuid.uuid4().hex[:8]}.parquet"
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    storage.write_bytes(uri, buffer.getvalue())
    return Stored(uri, len(frame), matched)


def _logged_ids(log_root: str, model_name: str) -> pd.DataFrame:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = []
    for uri in log_files(log_root, model_name, datetime.min.replace(tzinfo=UTC)):
        data = pa.BufferReader(storage.read_bytes(uri))
        if set(ID_COLUMNS) <= set(pq.read_schema(data).names):
            parts.append(pq.read_table(data, columns=list(ID_COLUMNS)).to_pandas())
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(ID_COLUMNS))
