"""Fixtures the delivery tests share with the serving tests: one demo model store per module."""

from __future__ import annotations

from tests.serving.conftest import store

__all__ = ["store"]
