"""The instant the drift-judge tests' windows end at (test_drift_judge_windows.py,
test_drift_judge_verdicts.py and test_drift_judge_decisions.py): a fixed UTC time, so every bound is exact."""

from __future__ import annotations

from datetime import UTC, datetime

NOW = datetime(2026, 11, 23, 15, 0, tzinfo=UTC)
