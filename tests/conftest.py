"""Fixtures shared across test files: a real MLflow store per test, sample data files."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from mlops.data.sample_data import SampleDataConfig, write
from mlops.tracking.store import (
    EXPERIMENT_ID_ENV,
    REGISTRY_URI_ENV,
    TRACKING_URI_ENV,
    TrackingStore,
    fluent_state,
)
from tests.services import docker_engine, kubernetes, node, plugin

# Real PostgreSQL / Ceph RGW / mlflow server fixtures (started once per session, on first use).
pytest_plugins = [
    "tests.services.plugin",
    "tests.services.kubernetes",
    "tests.services.node",
    "tests.services.docker_engine",
    "tests.support.feast_store",
]

SERVICE_GROUPS = [  # the node first: its tests also use S3
    (node.MARKER, node.FIXTURES),
    (docker_engine.MARKER, docker_engine.FIXTURES),
    (kubernetes.MARKER, kubernetes.FIXTURES),
    (plugin.MARKER, plugin.SERVICE_FIXTURES),
]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist with ``--dist loadgroup`` (as ./test.sh runs it), the tests of one real service
    run on one worker, so each service starts once per run instead of once per worker; the rest spread."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        group = next((marker for marker, fixtures in SERVICE_GROUPS if fixtures & names), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_configure(config: pytest.Config) -> None:
    """Refuses ``--dist loadgroup`` where it would not group: the tests of one real service would spread
    over the workers and start that service twice on one machine (two nodes on one pod bridge undo each
    other). xdist groups a test by assigning ``item._nodeid``; pytest 9.2's ``nodeid`` no longer reads it."""
    grouping = config.getoption("dist", "no") == "loadgroup" or getattr(config.option, "loadgroup", False)
    probe = SimpleNamespace(_nodeid="probe@group", _id="probe")
    if grouping and pytest.Item.nodeid.fget(probe) != "probe@group":  # type: ignore[attr-defined]
        raise pytest.UsageError(
            f"--dist loadgroup cannot group tests under pytest {pytest.__version__} with this pytest-xdist "
            "(groups would be silently ignored); install the versions pyproject.toml pins: "
            ".venv/bin/pip install -e '.[dev]'"
        )


_FLUENT_ENV = (TRACKING_URI_ENV, REGISTRY_URI_ENV, EXPERIMENT_ID_ENV)


def _mlflow_globals() -> dict[str, str | None]:
    if "mlflow" not in sys.modules:  # never imported: MLflow's defaults, and whatever the shell exported
        return {"tracking_uri": None, "registry_uri": None, "experiment_id": None} | {
            name: os.environ.get(name) for name in _FLUENT_ENV
        }
    return fluent_state()


@pytest.fixture(autouse=True)
def _mlflow_globals_untouched() -> Iterator[None]:
    """Fails a test that leaves MLflow's process-wide tracking state changed (reads it, never resets it).

    Only :meth:`TrackingStore.fluent` sets that state, and it restores it on the way out; a leak here
    is a bug in the seam (or code going around it), so the next test would log into this one's store.
    """
    before = _mlflow_globals()
    yield
    after = _mlflow_globals()
    changed = {key: (before[key], after[key]) for key in before if before[key] != after[key]}
    if changed:
        pytest.fail(
            f"MLflow's process-wide tracking state leaked out of this test (before, after): {changed}"
        )


@pytest.fixture
def tracking(tmp_path: Path) -> TrackingStore:
    """A real MLflow SQLite store in ``tmp_path``, as a task builds it (explicit URIs, its own experiment)."""
    return TrackingStore(
        tracking_uri=f"sqlite:///{tmp_path}/mlflow.db",
        experiment="tests",
        pipeline_run_id="test-run",
        artifact_root=(tmp_path / "artifacts").as_uri(),
    )


@pytest.fixture
def sample_csv(tmp_path: Path) -> Path:
    return Path(write(str(tmp_path / "sample.csv"), SampleDataConfig(rows=1500, seed=3)))
