"""A training set from the feature store: an entity table joined point-in-time with a feature service.

Each entity row (ids, an event timestamp, labels) gets, per feature view, the latest feature values dated at
or before its timestamp and no older than the view's TTL (Feast's ``get_historical_features``, run in the
Feast venv by ``feast_entry.py``): a value recorded after the label's time is never joined. A row that finds
no value of a view within the TTL is refused by name (entity id, time, view and its features) unless
``allow_missing``, which keeps it with nulls and counts it in the record. The record written beside the
training set (``<out>.features.json``) is its lineage: the service, each view's features, TTL and
definition hash, and the entity table's and training set's sha256.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlops.data.dataset import load_table
from mlops.features.config import FeastSettings
from mlops.features.environment import FeastEnvironment, FeastError
from mlops.features.feast_cli import check_repo
from mlops.features.repository import to_utc

if TYPE_CHECKING:
    import pandas as pd

ENTRY_SCRIPT = Path(__file__).with_name("feast_entry.py")
FEAST_TIMESTAMP = "event_timestamp"
"""The column name Feast's historical retrieval reads the entity rows' times from."""
SHOWN = 5


@dataclass(frozen=True)
class TrainingSet:
    out: Path
    record_path: Path
    record: dict[str, Any]
    frame: pd.DataFrame


def record_path_for(out: Path) -> Path:
    return out.with_name(out.name.removesuffix(".parquet") + ".features.json")


def build_training_set(
    env: FeastEnvironment,
    repo: Path,
    settings: FeastSettings,
    *,
    service: str,
    entities_uri: str,
    out: Path,
    timestamp: str = FEAST_TIMESTAMP,
    allow_missing: bool = False,
    keep_hint: str = "or keep these rows with null features with --allow-missing",
) -> TrainingSet:
    """``keep_hint`` ends the refusal of rows without values: how the caller's user keeps or drops them."""

    repo = check_repo(repo)
    table, entities_sha256 = load_table(entities_uri)
    if timestamp not in table.columns:
        raise FeastError(
            f"the entity table {entities_uri} has no timestamp column {timestamp!r} (its columns: "
            f"{list(table.columns)}); name it with --timestamp"
        )
    if FEAST_TIMESTAMP in table.columns and timestamp != FEAST_TIMESTAMP:
        raise FeastError(f"the entity table has both {timestamp!r} and {FEAST_TIMESTAMP!r}; rename one")
    frame = table.rename(columns={timestamp: FEAST_TIMESTAMP})
    try:
        frame[FEAST_TIMESTAMP] = to_utc(frame[FEAST_TIMESTAMP])
    except (ValueError, TypeError) as exc:
        raise FeastError(
            f"timestamp column {timestamp!r} of {entities_uri} does not read as times: {exc}"
        ) from exc
    joined, description = historical_join(env, repo, settings, service=service, frame=frame)
    joined = joined.rename(columns={FEAST_TIMESTAMP: timestamp})
    missing = missing_rows(joined, description, timestamp)
    if missing and not allow_missing:
        raise FeastError(missing_message(missing, timestamp, keep_hint))
    out.parent.mkdir(parents=True, exist_ok=True)
    joined.to_parquet(out, index=False)
    record = {
        "feature_service": description["service"],
        "project": description["project"],
        "feature_views": description["feature_views"],
        "entity_table": {"uri": entities_uri, "sha256": entities_sha256, "rows": len(table)},
        "training_set": {
            "path": str(out),
            "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
            "rows": len(joined),
        },
        "rows_without_features": len(missing),
    }
    record_path = record_path_for(out)
    record_path.write_text(json.dumps(record, indent=2) + "\n")
    return TrainingSet(out, record_path, record, joined)


def historical_join(
    env: FeastEnvironment, repo: Path, settings: FeastSettings, *, service: str, frame: pd.DataFrame
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Feast's point-in-time join of ``frame`` (join keys and ``event_timestamp`` as UTC times) with
    ``service``, every row kept in its order; and the service's description (views, features, TTLs, hashes)."""
    import pandas as pd

    with tempfile.TemporaryDirectory(prefix="mlops-feast-") as scratch:
        work = Path(scratch)
        frame.to_parquet(work / "entities.parquet", index=False)
        request = {
            "action": "historical",
            "repo": str(repo),
            "service": service,
            "entities": str(work / "entities.parquet"),
            "out": str(work / "joined.parquet"),
            "description": str(work / "description.json"),
        }
        (work / "request.json").write_text(json.dumps(request))
        env.run(
            [str(env.python), str(ENTRY_SCRIPT), str(work / "request.json")],
            cwd=repo,
            timeout_s=settings.command_timeout_s,
            what=f"the point-in-time join of feature service {service!r}",
        )
        joined = pd.read_parquet(work / "joined.parquet")
        description: dict[str, Any] = json.loads((work / "description.json").read_text())
    return joined, description


def missing_rows(
    joined: pd.DataFrame, description: dict[str, Any], timestamp: str
) -> list[tuple[dict[str, Any], str, list[str], int]]:
    """Rows where every feature of a view is null: no value of that view at or before the row's time within
    its TTL. (A view whose source holds a row of all nulls is indistinguishable, and reads the same.)"""
    found = []
    for view, spec in description["feature_views"].items():
        features = [f for f in spec["features"] if f in joined.columns]
        if not features:
            continue
        empty = joined[features].isna().all(axis=1)
        for index in empty[empty].index:
            row = joined.loc[index]
            ids = {key: row[key] for key in spec["join_keys"]}
            ids[timestamp] = row[timestamp]
            found.append((ids, view, features, spec["ttl_seconds"]))
    return found


def missing_message(
    missing: list[tuple[dict[str, Any], str, list[str], int]], timestamp: str, keep_hint: str
) -> str:
    lines = []
    for ids, view, features, ttl in missing[:SHOWN]:
        who = ", ".join(f"{k}={v!r}" if k != timestamp else f"at {v}" for k, v in ids.items())
        window = f"within its TTL ({ttl} s)" if ttl else "at or before that time"
        lines.append(f"{who}: no value of feature view {view!r} ({', '.join(features)}) {window}")
    more = f" (and {len(missing) - SHOWN} more)" if len(missing) > SHOWN else ""
    return (
        f"{len(missing)} entity row(s) have no feature values{more}: "
        + "; ".join(lines)
        + ". Values dated after a row's time are never joined (point-in-time); check the entity ids and "
        f"times, lengthen the view's ttl in features.py (then `mlops features apply`), {keep_hint}"
    )
