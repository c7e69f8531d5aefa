"""Fixtures shared across test files: a real MLflow store per test, sample data files."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlops.data.sample_data import SampleDataConfig, write
from mlops.tracking.context import TRACKING_URI_ENV, TrackingContext

REGISTRY_URI_ENV = "MLFLOW_REGISTRY_URI"

# Real PostgreSQL / Ceph RGW / mlflow server fixtures (started once per session, on first use).
pytest_plugins = ["tests.services.plugin", "tests.services.kubernetes", "tests.services.node"]


@pytest.fixture(autouse=True)
def _no_inherited_tracking_uri() -> Iterator[None]:
    """Every test starts without ``MLFLOW_TRACKING_URI`` / ``MLFLOW_REGISTRY_URI`` and leaves none behind.

    ``mlflow.set_tracking_uri`` and ``mlflow.set_registry_uri`` also write those variables into
    ``os.environ`` (for subprocesses), and MLflow honours them, so one test's store would otherwise
    become the next test's: a client built with only a tracking URI reads the registry of whichever
    test last called ``TrackingContext.apply`` (the governance test failed that way in the whole suite).
    """
    names = (TRACKING_URI_ENV, REGISTRY_URI_ENV)
    before = {name: os.environ.pop(name, None) for name in names}
    yield
    if "mlflow" in sys.modules:  # and MLflow's own process-wide registry URI, which a new client inherits
        sys.modules["mlflow"].set_registry_uri(None)
    for name in names:
        os.environ.pop(name, None)
        if before[name] is not None:
            os.environ[name] = before[name]  # type: ignore[assignment]


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
