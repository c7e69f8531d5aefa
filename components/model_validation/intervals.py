"""Bootstrap confidence intervals for the group-disparity metrics.

On a test split of a few hundred rows per group, a true-positive rate rests on
a few dozen positives and moves by ±0.1 from sampling alone: a gate comparing
point estimates with a 0.1 threshold would reject fair models at random. The
interval says whether a measured disparity is evidence or noise. Resampling
is done within each group (group sizes stay fixed, no group can vanish) with
plain numpy, because fairlearn's own bootstrap rebuilds a ``MetricFrame`` per
resample and took ~6 s for 200 resamples of 1,000 rows here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

DISPARITIES = ("demographic_parity_difference", "demographic_parity_ratio", "equalized_odds_difference")


def _rates(y: np.ndarray, predicted: np.ndarray) -> tuple[float, float, float]:
    """Selection rate, TPR and FPR; NaN where the denominator is empty."""
    import numpy as np

    positives = y == 1
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    tpr = float(predicted[positives].sum() / n_pos) if n_pos else np.nan
    fpr = float(predicted[~positives].sum() / n_neg) if n_neg else np.nan
    return float(predicted.mean()), tpr, fpr


def _range(values: np.ndarray) -> float:
    import numpy as np

    finite = values[~np.isnan(values)]
    return float(finite.max() - finite.min()) if len(finite) >= 2 else float("nan")


def disparities(rates: np.ndarray, favourable_prediction: int) -> dict[str, float]:
    """Rates [groups, 3] (selection, TPR, FPR) -> the three disparity metrics."""
    import numpy as np

    selection = rates[:, 0]
    favourable = selection if favourable_prediction == 1 else 1.0 - selection
    top = float(np.nanmax(favourable))
    eod = np.array([_range(rates[:, 1]), _range(rates[:, 2])])
    return {
        "demographic_parity_difference": _range(selection),
        "demographic_parity_ratio": float(np.nanmin(favourable)) / top if top > 0 else 1.0,
        "equalized_odds_difference": float(np.nanmax(eod)) if not np.isnan(eod).all() else float("nan"),
    }


def disparity_intervals(
    y: np.ndarray,
    predicted: np.ndarray,
    groups: np.ndarray,
    checked: Sequence[str],
    favourable_prediction: int,
    resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, tuple[float, float]]:
    """Percentile interval of each disparity metric over ``resamples`` within-group bootstrap draws."""
    import numpy as np

    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(groups == g) for g in checked]
    draws: dict[str, list[float]] = {name: [] for name in DISPARITIES}
    for _ in range(resamples):
        rates = np.empty((len(members), 3))
        for k, index in enumerate(members):
            sample = index[rng.integers(0, len(index), len(index))]
            rates[k] = _rates(y[sample], predicted[sample])
        for name, value in disparities(rates, favourable_prediction).items():
            draws[name].append(value)
    tail = (1.0 - confidence) / 2
    out = {}
    for name, values in draws.items():
        finite = np.asarray(values)[~np.isnan(values)]
        if len(finite) == 0:
            out[name] = (float("nan"), float("nan"))
        else:
            out[name] = (float(np.quantile(finite, tail)), float(np.quantile(finite, 1 - tail)))
    return out
