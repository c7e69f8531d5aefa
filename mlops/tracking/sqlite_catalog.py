"""Read an experiment's artifact location straight from an MLflow SQLite store, without MLflow.

Opening the store through MLflow costs seconds before a run starts (importing MLflow, SQLAlchemy's
engine and its schema check); the check before a local run needs one row of one table. The table and
column names are those of MLflow's SQL store (``experiments``: ``name``, ``artifact_location``), which
its migrations have kept since MLflow 1.x; a store whose layout does not match is reported, not guessed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mlops.tracking.uris import TrackingError


def sqlite_path(tracking_uri: str) -> Path | None:
    """The file of a ``sqlite:///`` store, else None (a server, PostgreSQL, an in-memory store)."""
    if not tracking_uri.startswith("sqlite:///"):
        return None
    path = tracking_uri.removeprefix("sqlite:///")
    return None if path in ("", ":memory:") else Path(path)


def experiment_location(db: Path, experiment: str) -> str | None:
    """The artifact location of ``experiment`` in the store ``db`` (deleted ones included, as MLflow's
    ``get_experiment_by_name`` returns them); None when the store holds no such experiment or no tables yet."""
    try:
        connection = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error as exc:
        raise TrackingError(
            f"cannot open the MLflow store {db}: {exc}; check the file and its permissions"
        ) from exc
    try:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "experiments" not in tables:
            return None
        row = connection.execute(
            "SELECT artifact_location FROM experiments WHERE name = ?", (experiment,)
        ).fetchone()
    except sqlite3.Error as exc:
        raise TrackingError(
            f"cannot read experiment {experiment!r} from the MLflow store {db}: {exc}; is it an MLflow database?"
        ) from exc
    finally:
        connection.close()
    return None if row is None else str(row[0])
