"""The pre-run check reads an experiment's location with sqlite3 exactly as MLflow's own store reports it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mlops.tracking.sqlite_catalog import experiment_location, sqlite_path
from mlops.tracking.store import TrackingError


def test_the_location_read_with_sqlite3_is_the_one_mlflow_reports_deleted_experiments_included(
    tmp_path: Path,
) -> None:
    from mlflow.tracking import MlflowClient

    db = tmp_path / "mlflow.db"
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    kept = client.create_experiment("kept", artifact_location=(tmp_path / "kept").as_uri())
    gone = client.create_experiment("gone", artifact_location=(tmp_path / "gone").as_uri())
    client.delete_experiment(gone)
    for name in ("kept", "gone"):
        by_mlflow = client.get_experiment_by_name(name)
        assert by_mlflow is not None
        assert experiment_location(db, name) == by_mlflow.artifact_location
    assert client.get_experiment(kept).name == "kept"
    assert experiment_location(db, "never-made") is None


def test_a_store_without_tables_holds_no_experiment_and_a_foreign_file_is_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    assert experiment_location(empty, "training") is None
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE experiments (id INTEGER)")
    with pytest.raises(
        TrackingError, match=r"cannot read experiment 'training' from the MLflow store .*other\.db"
    ):
        experiment_location(other, "training")
    text = tmp_path / "notes.db"
    text.write_text("not a database at all, " * 100)
    with pytest.raises(TrackingError, match="notes.db"):
        experiment_location(text, "training")


def test_the_check_opens_nothing_but_a_sqlite_file() -> None:
    assert sqlite_path("sqlite:////tmp/w/mlflow.db") == Path("/tmp/w/mlflow.db")
    assert sqlite_path("sqlite:///relative.db") == Path("relative.db")
    for uri in ("http://localhost:5000", "postgresql://u@h/db", "sqlite:///:memory:", "sqlite:///", ""):
        assert sqlite_path(uri) is None, uri
