"""Settings of the drift check (``window``, ``drift``): the step's sections, defined beside the judge that reads
them (:mod:`mlops.monitoring.drift_settings`), so the library and the step validate one model."""

from __future__ import annotations

from mlops.monitoring.drift_settings import METHODS, TESTS, DriftSettings, Method, Trigger, WindowSettings

__all__ = ["METHODS", "TESTS", "DriftSettings", "Method", "Trigger", "WindowSettings"]
