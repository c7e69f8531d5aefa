"""The common currency of every check: a violated threshold, phrased for a person."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal


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
