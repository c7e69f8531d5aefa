"""The common currency of every check: a violated threshold, phrased for a person."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from mlops.gates import FAIL, NOT_CONCLUSIVE, PASS, Status


@dataclass(frozen=True)
class Violation:
    """One threshold a check found broken; its message names metric, subject, value and threshold."""

    check: Literal["fairness", "behavioural", "explainability"]
    """Which family of checks found it; also the version-tag namespace."""
    subject: str
    """What was measured: a protected attribute, a behavioural test or ``attributions``."""
    metric: str
    """Metric name, e.g. ``demographic_parity_difference``."""
    value: float
    """Measured value."""
    threshold: float
    """The configured limit it broke."""
    bound: Literal["max", "min"]
    """``max``: value must not exceed threshold; ``min``: value must not fall below it."""
    detail: str = ""
    """Which groups or rows drove the value, e.g. ``selection rate female 0.41 vs male 0.22``."""

    @property
    def message(self) -> str:
        op = ">" if self.bound == "max" else "<"
        text = f"{self.subject}: {self.metric} {self.value:.4f} {op} {self.bound} {self.threshold:.4f}"
        return f"{text} ({self.detail})" if self.detail else text

    @property
    def tag_key(self) -> str:
        """Version-tag key suffix: MLflow allows only letters, digits, ``_-. /`` in keys."""
        return f"{slug(self.subject)}.{slug(self.metric)}"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-/ ]+", "_", text).strip("_") or "_"


def finite_or_none(value: float | None) -> float | None:
    """JSON has no NaN: undefined metrics are written as ``null``."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def limit_status(
    value: float,
    interval: tuple[float, float] | None,
    limit: float,
    bound: Literal["max", "min"],
    on_interval: bool,
) -> Status:
    """``pass``, ``fail`` or ``not_conclusive`` for one measured value against one limit.

    With ``on_interval`` the whole interval decides: beyond the limit is a fail, within it (the limit
    itself allowed) a pass, and an interval reaching across the limit is not conclusive, whichever side
    the point estimate lies on: these rows cannot tell a fair model from an unfair one. Without it the
    point estimate decides. An undefined value (NaN, no interval) is never a pass: not conclusive.
    """
    if not math.isfinite(value):
        return NOT_CONCLUSIVE
    if not on_interval:
        beyond = value > limit if bound == "max" else value < limit
        return FAIL if beyond else PASS
    if interval is None or not all(math.isfinite(end) for end in interval):
        return NOT_CONCLUSIVE
    low, high = interval
    if (low > limit) if bound == "max" else (high < limit):
        return FAIL
    if (high <= limit) if bound == "max" else (low >= limit):
        return PASS
    return NOT_CONCLUSIVE
