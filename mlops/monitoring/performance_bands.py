"""Error bands of the performance figures a check compares: label-free estimate, realised, the version's test.

**Label-free estimate (CBPE) of ROC AUC and accuracy.** Its error has two sources, and
the band covers both with one bootstrap (``drift.bootstrap_samples`` draws, percentile
band at ``drift.confidence``):

- *the window's sampling error*: the window is a sample of the traffic. Each draw
  resamples the window's rows with replacement. The estimate depends on a row only
  through its (score bin, calibration-map bin) cell, so resampling rows is exactly a
  multinomial draw over those cells' counts (``WindowScoreBins.joint``): the same bootstrap,
  without holding a single row.
- *the calibration map's uncertainty*: CBPE turns each score into a probability with the
  map fitted on the labelled reference rows (isotonic regression, a positive rate per block;
  older profiles: histogram binning). When the reference showed the scores already calibrated
  (map ``identity``), the scores are the probabilities and each draw shifts a block's scores
  by its rate's posterior error (below) instead.
  A bin of ``n`` reference rows with ``k`` positives knows its rate only up to a binomial
  error; each draw takes the bin's rate from its Jeffreys posterior Beta(k + ½, n - k + ½)
  (well calibrated for a binomial proportion even near 0 or 1, where the normal
  approximation is not). The profile keeps rates, not counts, so ``n`` per bin is read
  from the profile's score histogram (exact when the reference scores have ≤ 100
  distinct values, else within one of its 1 % quantile bins).

The two are drawn independently in each draw (the window's traffic and the reference
rows are independent samples), so the draws' spread is that of their combined error. A
bootstrap rather than an analytic variance because the AUC estimate is a ratio of sums
over score-ordered cells: the delta method would need the covariance of every cell with
every other, the bootstrap needs none of it and costs a few milliseconds (the cells,
not the rows, are resampled).

**Realised metrics** from feedback labels: a percentile bootstrap over the labelled rows
(pairs of score and label resampled together; AUC from average ranks, ties count half).

**The checked version's test metrics** (the profile's ``metrics``, measured on ``profile.rows``
test rows): analytic bands, the test rows being gone: Hanley & McNeil's standard error
for ROC AUC (from the AUC and the numbers of positives and negatives) and the binomial
standard error for accuracy, at the same confidence.

A window's figure *leaves* the version's test band when the window's whole band lies below
the test band (:func:`left_below`): a drop the two samples' noise cannot explain.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np

from mlops.model.reference_profile import Calibration, NumericProfile
from mlops.monitoring.request_window import SCORE_BINS, WindowScoreBins

METRICS = ("roc_auc", "accuracy")
_CHUNK = 32
"""Bootstrap draws computed at once (bounds the memory of the realised bootstrap)."""


@dataclass(frozen=True)
class Band:
    """A figure and its confidence band."""

    value: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def left_below(window: Band, reference: Band) -> bool:
    """True when the window's whole band lies below the reference band (touching is not leaving)."""
    return window.high < reference.low


def _band(value: float, draws: np.ndarray, confidence: float) -> Band:
    tail = (1 - confidence) / 2
    low, high = np.quantile(draws, [tail, 1 - tail])
    return Band(float(value), float(min(low, value)), float(max(high, value)))


def calibration_counts(calibration: Calibration, scores: NumericProfile) -> np.ndarray:
    """Reference rows in each bin of the calibration map: stored with the map (isotonic), else read from the
    reference score histogram (the histogram map of older profiles)."""
    if calibration.counts is not None:
        return np.asarray(calibration.counts, dtype=float)
    counts = np.asarray(scores.counts, dtype=float)
    means = np.asarray(scores.sums) / np.maximum(counts, 1)  # the bin's own value when scores are discrete
    cell = np.searchsorted(np.asarray(calibration.edges), means, side="right")
    return np.bincount(cell, weights=counts, minlength=len(calibration.rates))


def cbpe_draws(
    positives: np.ndarray, negatives: np.ndarray, rows: int, predicted_positive: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """ROC AUC and accuracy of each draw from expected positives / negatives per score bin (draws × bins).

    Bins in increasing score order. AUC: the chance an expected positive outranks an expected
    negative, a tie (same score bin) counting half. Accuracy: expected positives in the bins
    predicted positive (``predicted_positive``, scores at or above 0.5) plus expected negatives in the others.
    """
    below = np.cumsum(negatives, axis=1) - negatives
    total = positives.sum(axis=1) * negatives.sum(axis=1)
    auc = (positives * (below + negatives / 2)).sum(axis=1) / np.where(total > 0, total, np.nan)
    right = np.where(predicted_positive, positives, negatives).sum(axis=1)
    return auc, right / max(rows, 1)


def estimated_bands(
    summary: WindowScoreBins,
    estimate: dict[str, float],
    calibration: Calibration | None,
    scores: NumericProfile,
    confidence: float,
    samples: int,
    seed: int = 0,
) -> dict[str, Band]:
    """Bands of the label-free estimate ``estimate`` (window sampling and calibration error; module docstring).

    Only the window's occupied cells are drawn (a 1000-bin score axis is mostly empty), so a draw
    costs the number of distinct (score bin, map bin) cells, not the rows.
    """
    if not estimate or summary.rows == 0:
        return {}
    rng = np.random.default_rng(seed)
    width = summary.joint.shape[1]
    cells = summary.joint.ravel()
    occupied = np.flatnonzero(cells)
    score_bin, group = occupied // width, occupied % width
    drawn = rng.multinomial(summary.rows, cells[occupied] / cells.sum(), size=samples).astype(float)
    counts = summary.joint.sum(axis=1)
    mean_score = (summary.positives / np.maximum(counts, 1))[score_bin][None, :]
    if calibration is None:  # scores are the probabilities: each score bin's mean score
        rates = mean_score
    else:
        n = calibration_counts(calibration, scores)
        rate = np.asarray(calibration.rates)
        posterior = rng.beta(rate * n + 0.5, (1 - rate) * n + 0.5, size=(samples, len(rate)))
        drawn_rate = np.where(n > 0, posterior, rate)  # a bin no reference row fell in: no error to draw
        if calibration.method == "identity":  # the scores are the probabilities, shifted by the block's error
            rates = np.clip(mean_score + (drawn_rate - rate)[:, group], 0.0, 1.0)
        else:
            rates = drawn_rate[:, group]
    starts = np.flatnonzero(np.diff(score_bin, prepend=-1))  # cells of one score bin are adjacent
    positives = np.add.reduceat(drawn * rates, starts, axis=1)
    negatives = np.add.reduceat(drawn * (1 - rates), starts, axis=1)
    auc, accuracy = cbpe_draws(positives, negatives, summary.rows, score_bin[starts] >= SCORE_BINS // 2)
    bands = {"accuracy": _band(estimate["accuracy"], accuracy, confidence)}
    if "roc_auc" in estimate:
        bands["roc_auc"] = _band(estimate["roc_auc"], auc[np.isfinite(auc)], confidence)
    return bands


def rank_auc(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """ROC AUC of each row of ``scores``/``labels`` (draws × rows) from average ranks: ties count half."""
    from scipy.stats import rankdata

    ranks = rankdata(scores, axis=1)
    positives = labels.sum(axis=1)
    negatives = labels.shape[1] - positives
    rank_sum = (ranks * labels).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def realised_bands(
    scores: np.ndarray, labels: np.ndarray, confidence: float, samples: int, seed: int = 0
) -> dict[str, Band]:
    """Bands of accuracy (threshold 0.5) and ROC AUC on labelled rows: percentile bootstrap over the rows."""
    if len(labels) == 0:
        return {}
    rng = np.random.default_rng(seed)
    correct = (scores >= 0.5) == labels
    aucs, accuracies = [], []
    for start in range(0, samples, _CHUNK):
        index = rng.integers(0, len(labels), size=(min(_CHUNK, samples - start), len(labels)))
        accuracies.append(correct[index].mean(axis=1))
        aucs.append(rank_auc(scores[index], labels[index]))
    bands = {"accuracy": _band(float(correct.mean()), np.concatenate(accuracies), confidence)}
    if len(np.unique(labels)) == 2:
        value = float(rank_auc(scores[None, :], labels[None, :])[0])
        drawn = np.concatenate(aucs)
        bands["roc_auc"] = _band(value, drawn[np.isfinite(drawn)], confidence)
    return bands


def hanley_mcneil_se(auc: float, positives: int, negatives: int) -> float:
    """Standard error of an ROC AUC measured on ``positives`` and ``negatives`` (Hanley & McNeil, 1982)."""
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    variance = (auc * (1 - auc) + (positives - 1) * (q1 - auc * auc) + (negatives - 1) * (q2 - auc * auc)) / (
        positives * negatives
    )
    return math.sqrt(max(variance, 0.0))


def reference_bands(metrics: dict[str, float], rows: int, confidence: float) -> dict[str, Band]:
    """Bands of the checked version's test metrics, measured on ``rows`` test rows (analytic; module docstring)."""
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    bands: dict[str, Band] = {}
    if "accuracy" in metrics and rows > 0:
        a = metrics["accuracy"]
        half = z * math.sqrt(a * (1 - a) / rows)
        bands["accuracy"] = Band(a, a - half, a + half)
    rate = metrics.get("positive_rate")
    if "roc_auc" in metrics and rate is not None:
        positives = round(rate * rows)
        if 0 < positives < rows:
            auc = metrics["roc_auc"]
            half = z * hanley_mcneil_se(auc, positives, rows - positives)
            bands["roc_auc"] = Band(auc, auc - half, auc + half)
    return bands
