"""Per-slice evaluation: every metric on every declared slice of the test split, with intervals and sizes.

A model that is good on average can fail one customer segment. The dataset declares its
slices (:class:`mlops.data.slice_spec.SliceSpec`); this module assigns each test row to its
slice of every declaration, computes the metrics of :data:`SLICE_METRICS` on each slice with a
percentile bootstrap interval (:data:`RESAMPLES` draws within the slice, seed
:data:`SEED`), and names the smallest slices, so a reader (and the slice-floor gate, which
leaves slices under its minimum size undecided and says so) sees which figures rest on few rows.
Metrics undefined on a slice (ROC AUC on a slice holding one class) are ``None`` with a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from components.evaluate.binary_metrics import THRESHOLD, expected_calibration_error
from mlops.data.slice_spec import SliceSpec

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

SLICE_METRICS = ("roc_auc", "pr_auc", "accuracy", "f1", "log_loss", "ece", "positive_rate")
"""The overall evaluation's metrics (:class:`components.evaluate.binary_metrics.BinaryMetrics`), per slice."""
RESAMPLES = 200
CONFIDENCE = 0.95
SEED = 0
SMALLEST_NAMED = 3
MISSING = "(missing)"
OUTSIDE = "(outside)"


def _auc(y: np.ndarray, p: np.ndarray) -> float:
    """ROC AUC by the rank-sum (Mann-Whitney) formula, ties averaged; NaN when one class is absent."""
    from scipy.stats import rankdata

    positives = int(y.sum())
    negatives = len(y) - positives
    if positives == 0 or negatives == 0:
        return float("nan")
    ranks = rankdata(p)
    return float((ranks[y == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def point_metrics(y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    """The slice metrics of labels ``y`` (0/1) and probabilities ``p`` (thresholded at THRESHOLD)."""
    import numpy as np
    from sklearn.metrics import average_precision_score

    predicted = p >= THRESHOLD
    tp = float(np.sum(predicted & (y == 1)))
    fp = float(np.sum(predicted & (y == 0)))
    fn = float(np.sum(~predicted & (y == 1)))
    clipped = np.clip(p, 1e-15, 1 - 1e-15)
    return {
        "roc_auc": _auc(y, p),
        "pr_auc": float(average_precision_score(y, p)) if y.any() else float("nan"),
        "accuracy": float(np.mean(predicted == (y == 1))),
        "f1": 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else 0.0,
        "log_loss": float(-np.mean(y * np.log(clipped) + (1 - y) * np.log(1 - clipped))),
        "ece": expected_calibration_error(y, p),
        "positive_rate": float(np.mean(y)),
    }


def _labels(frame: pd.DataFrame, spec: SliceSpec) -> pd.Series:
    """Each row's slice name under ``spec`` (``col=value`` joined by `` & ``)."""
    import numpy as np
    import pandas as pd

    parts = []
    for column in spec.columns:
        values = frame[column]
        if column in spec.bins:
            edges = list(spec.bins[column])
            numeric = pd.to_numeric(values, errors="coerce")
            index = np.searchsorted(edges, numeric.to_numpy(dtype=float), side="right") - 1
            index = np.where(
                numeric.to_numpy(dtype=float) == edges[-1], len(edges) - 2, index
            )  # top edge closed
            names = [
                f"[{edges[i]:g}, {edges[i + 1]:g}{']' if i == len(edges) - 2 else ')'}"
                if 0 <= i < len(edges) - 1
                else OUTSIDE
                for i in index
            ]
            text = pd.Series(names, index=frame.index).where(numeric.notna(), MISSING)
        else:
            text = values.astype(object).where(values.notna(), MISSING).astype(str)
        parts.append(column + "=" + text)
    label = parts[0]
    for part in parts[1:]:
        label = label + " & " + part
    return label


def _interval(y: np.ndarray, p: np.ndarray, rng: np.random.Generator) -> dict[str, tuple[float, float]]:
    import numpy as np

    draws: dict[str, list[float]] = {name: [] for name in SLICE_METRICS}
    for _ in range(RESAMPLES):
        index = rng.integers(0, len(y), len(y))
        for name, value in point_metrics(y[index], p[index]).items():
            draws[name].append(value)
    tail = (1 - CONFIDENCE) / 2
    out = {}
    for name, values in draws.items():
        finite = np.asarray(values)[np.isfinite(values)]
        out[name] = (
            (float(np.quantile(finite, tail)), float(np.quantile(finite, 1 - tail)))
            if len(finite)
            else (float("nan"),) * 2
        )
    return out


def _clean(value: float) -> float | None:
    import math

    return value if math.isfinite(value) else None


def slice_report(
    frame: pd.DataFrame, labels: np.ndarray, probability: np.ndarray, specs: Sequence[SliceSpec]
) -> dict[str, Any]:
    """Every slice of every spec: its size, positives, and each metric's value and interval."""
    import numpy as np

    missing = sorted({c for spec in specs for c in spec.columns} - set(map(str, frame.columns)))
    if missing:
        raise ValueError(
            f"slice column(s) {missing} are not in the test data (columns: {sorted(map(str, frame.columns))}); "
            "slice on a declared feature or protected attribute"
        )
    rng = np.random.default_rng(SEED)
    y = np.asarray(labels, dtype=np.int64)
    p = np.asarray(probability, dtype=np.float64)
    slices = []
    for spec in specs:
        names = _labels(frame, spec).to_numpy()
        for name in sorted(set(names)):
            rows = names == name
            ys, ps = y[rows], p[rows]
            values = point_metrics(ys, ps)
            intervals = _interval(ys, ps, rng)
            notes = []
            if not 0 < ys.sum() < len(ys):
                notes.append("one class only: roc_auc undefined")
            slices.append(
                {
                    "spec": spec.name,
                    "slice": str(name),
                    "size": int(rows.sum()),
                    "positives": int(ys.sum()),
                    "metrics": {
                        k: {
                            "value": _clean(values[k]),
                            "lower": _clean(intervals[k][0]),
                            "upper": _clean(intervals[k][1]),
                        }
                        for k in SLICE_METRICS
                    },
                    "note": "; ".join(notes),
                }
            )
    smallest = sorted(slices, key=lambda s: (s["size"], s["slice"]))[:SMALLEST_NAMED]
    return {
        "declared": [spec.model_dump(mode="json") for spec in specs],
        "threshold": THRESHOLD,
        "resamples": RESAMPLES,
        "confidence": CONFIDENCE,
        "slices": slices,
        "smallest": [{"slice": s["slice"], "size": s["size"]} for s in smallest],
    }
