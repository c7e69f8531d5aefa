"""What the report and the model card chart about the scores themselves: calibration and distributions.

The fairness tables say how the groups fared at one threshold; these say whether the scores behind
that threshold mean what they claim (a 0.7 is right about 70 % of the time) and how well they separate
the two label classes. Only counts and means are kept, so the report JSON (and the card built from it)
can draw them again without the test rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from components.model_validation.intervals import rate_interval

if TYPE_CHECKING:
    import numpy as np

CALIBRATION_BINS = 10
HISTOGRAM_BINS = 20


@dataclass(frozen=True)
class CalibrationBin:
    """Test rows whose score lies in ``[low, high)`` (the last bin includes 1)."""

    low: float
    high: float
    rows: int
    mean_score: float
    observed_rate: float
    """Share of the bin's rows whose label is 1."""
    interval: tuple[float, float]
    """Wilson interval of ``observed_rate`` at the fairness ``confidence``."""


@dataclass(frozen=True)
class ScoreSummary:
    threshold: float
    """The decision threshold the fairness checks used."""
    edges: tuple[float, ...]
    """Histogram bin edges on [0, 1]."""
    negatives: tuple[int, ...]
    """Rows with label 0 per histogram bin."""
    positives: tuple[int, ...]
    """Rows with label 1 per histogram bin."""
    calibration: tuple[CalibrationBin, ...]
    """Non-empty bins only."""
    expected_calibration_error: float
    """Row-weighted mean of |observed rate - mean score| over the calibration bins."""


def _bin_of(scores: np.ndarray, bins: int) -> np.ndarray:
    import numpy as np

    return np.minimum((scores * bins).astype(np.int64), bins - 1)


def summarise_scores(y: np.ndarray, scores: np.ndarray, threshold: float, confidence: float) -> ScoreSummary:
    """Calibration bins and per-class histograms of ``scores`` (probabilities in [0, 1]) against labels ``y``."""
    import numpy as np

    y = np.asarray(y, dtype=np.int64)
    scores = np.clip(np.asarray(scores, dtype=np.float64), 0.0, 1.0)
    if len(y) != len(scores) or not len(y):
        raise ValueError(f"got {len(scores)} scores for {len(y)} labels; score every test row (at least one)")
    member = _bin_of(scores, CALIBRATION_BINS)
    calibration = []
    for k in range(CALIBRATION_BINS):
        mask = member == k
        rows = int(mask.sum())
        if not rows:
            continue
        hits = int(y[mask].sum())
        calibration.append(
            CalibrationBin(
                low=k / CALIBRATION_BINS,
                high=(k + 1) / CALIBRATION_BINS,
                rows=rows,
                mean_score=float(scores[mask].mean()),
                observed_rate=hits / rows,
                interval=rate_interval(hits, rows, confidence),
            )
        )
    ece = sum(b.rows * abs(b.observed_rate - b.mean_score) for b in calibration) / len(y)
    histogram = _bin_of(scores, HISTOGRAM_BINS)
    return ScoreSummary(
        threshold=threshold,
        edges=tuple(k / HISTOGRAM_BINS for k in range(HISTOGRAM_BINS + 1)),
        negatives=tuple(int(c) for c in np.bincount(histogram[y == 0], minlength=HISTOGRAM_BINS)),
        positives=tuple(int(c) for c in np.bincount(histogram[y == 1], minlength=HISTOGRAM_BINS)),
        calibration=tuple(calibration),
        expected_calibration_error=float(ece),
    )
