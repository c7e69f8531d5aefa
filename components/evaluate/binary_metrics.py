"""Binary-classification metrics computed the same way for every model the gate compares.

Thresholded metrics use probability >= :data:`THRESHOLD` as "positive". Expected
calibration error is implemented here (sklearn has none) with equal-width bins, the
usual definition, so its value is comparable with published numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

THRESHOLD = 0.5
ECE_BINS = 10


class EvaluationError(ValueError):
    """The model or the test data cannot be evaluated; the message says what to fix."""


@dataclass(frozen=True)
class BinaryMetrics:
    """Threshold-free and thresholded quality of probabilities against 0/1 labels."""

    roc_auc: float
    """Area under the ROC curve."""
    pr_auc: float
    """Average precision (area under the precision-recall curve, step-wise)."""
    accuracy: float
    """Share of rows classified correctly at the threshold."""
    f1: float
    """F1 of the positive class at the threshold."""
    log_loss: float
    """Mean binary cross-entropy of the probabilities."""
    ece: float
    """Expected calibration error over equal-width probability bins."""
    n_rows: int
    """Rows scored."""
    positive_rate: float
    """Share of label 1 in the data (context for PR AUC)."""

    def as_dict(self, prefix: str = "") -> dict[str, float]:
        return {f"{prefix}{key}": float(value) for key, value in asdict(self).items()}


@dataclass(frozen=True)
class EvaluationResult:
    metrics: BinaryMetrics
    confusion_matrix: tuple[tuple[int, int], tuple[int, int]]
    """``((tn, fp), (fn, tp))`` at :data:`THRESHOLD`."""
    roc_fpr: tuple[float, ...]
    roc_tpr: tuple[float, ...]
    roc_thresholds: tuple[float, ...]
    """Score thresholds of the ROC points; the first is ``inf`` (nothing predicted positive)."""


def expected_calibration_error(y_true: np.ndarray, probability: np.ndarray, n_bins: int = ECE_BINS) -> float:
    """Weighted mean |observed positive rate - mean probability| over equal-width bins of [0, 1].

    Bin ``i`` holds probabilities in ``[i/n, (i+1)/n)``; the last bin also holds 1.0.
    """
    import numpy as np

    y = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(probability, dtype=np.float64)
    if y.shape != p.shape or y.ndim != 1 or len(y) == 0:
        raise ValueError(
            f"labels and probabilities must be equal-length non-empty 1-D, got {y.shape}, {p.shape}"
        )
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    bins = np.clip(np.floor(p * n_bins).astype(np.int64), 0, n_bins - 1)
    counts = np.bincount(bins, minlength=n_bins)
    gaps = np.abs(
        np.bincount(bins, weights=y, minlength=n_bins) - np.bincount(bins, weights=p, minlength=n_bins)
    )
    # Per bin |sum(y) - sum(p)| / N equals (n_b / N) * |mean(y) - mean(p)|; empty bins add 0.
    return float(gaps.sum() / counts.sum())


def score_probabilities(y_true: np.ndarray, probability: np.ndarray) -> EvaluationResult:
    """All metrics, the confusion matrix and the ROC points for one model's probabilities."""
    import numpy as np
    from sklearn import metrics as sk

    y = np.asarray(y_true, dtype=np.int64)
    p = np.asarray(probability, dtype=np.float64)
    bad = int((~np.isfinite(p)).sum())
    if bad:
        raise EvaluationError(f"the model produced {bad} non-finite probabilities; the weights are broken")
    predicted = (p >= THRESHOLD).astype(np.int64)
    (tn, fp), (fn, tp) = sk.confusion_matrix(y, predicted, labels=[0, 1]).tolist()
    fpr, tpr, thresholds = sk.roc_curve(y, p)
    metrics = BinaryMetrics(
        roc_auc=float(sk.roc_auc_score(y, p)),
        pr_auc=float(sk.average_precision_score(y, p)),
        accuracy=float(sk.accuracy_score(y, predicted)),
        f1=float(sk.f1_score(y, predicted, zero_division=0.0)),
        log_loss=float(sk.log_loss(y, p, labels=[0, 1])),
        ece=expected_calibration_error(y, p),
        n_rows=len(y),
        positive_rate=float(y.mean()),
    )
    return EvaluationResult(
        metrics=metrics,
        confusion_matrix=((tn, fp), (fn, tp)),
        roc_fpr=tuple(fpr.tolist()),
        roc_tpr=tuple(tpr.tolist()),
        roc_thresholds=tuple(thresholds.tolist()),
    )
