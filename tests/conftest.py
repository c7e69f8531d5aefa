"""Fixtures shared across test files: a real MLflow store per test, sample data files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlops.sample_data import SampleDataConfig, write
from mlops.tracking import TRACKING_URI_ENV, TrackingContext

# Real PostgreSQL / Ceph RGW / mlflow server fixtures (started once per session, on first use).
pytest_plugins = ["tests.services.plugin", "tests.services.kubernetes", "tests.services.node"]


@pytest.fixture(autouse=True)
def _no_inherited_tracking_uri() -> Iterator[None]:
    """Every test starts without ``MLFLOW_TRACKING_URI`` and leaves none behind.

    ``mlflow.set_tracking_uri`` also writes ``MLFLOW_TRACKING_URI`` into ``os.environ`` (for
    subprocesses), and the platform's commands honour that variable, so one test's store
    would otherwise become the next in-process command's tracking store.
    """
    before = os.environ.pop(TRACKING_URI_ENV, None)
    yield
    os.environ.pop(TRACKING_URI_ENV, None)
    if before is not None:
        os.environ[TRACKING_URI_ENV] = before


@pytest.fixture
def tracking(tmp_path: Path) -> Iterator[TrackingContext]:
    """A real MLflow SQLite store in ``tmp_path``; the global tracking URI is restored afterwards."""
    import mlflow

    previous = mlflow.get_tracking_uri()
    context = TrackingContext(
        tracking_uri=f"sqlite:///{tmp_path}/mlflow.db",
        experiment="tests",
        pipeline_run_id="test-run",
        artifact_root=(tmp_path / "artifacts").as_uri(),
    )
    yield context
    mlflow.set_tracking_uri(previous)


@pytest.fixture
def sample_csv(tmp_path: Path) -> Path:
    return Path(write(str(tmp_path / "sample.csv"), SampleDataConfig(sample_rows=1500, sample_seed=3)))
