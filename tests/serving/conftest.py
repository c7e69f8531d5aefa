"""Fixtures every serving test shares: one demo model store per test session."""

from __future__ import annotations

import pytest

from tests.support.serving import DemoStore, demo_store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> DemoStore:
    """The registry with demo model versions; built once per session (the directory is cached)."""
    return demo_store(tmp_path_factory.getbasetemp() / "serving-store")
