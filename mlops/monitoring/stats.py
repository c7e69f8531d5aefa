"""Drift distances computed from bin counts (the reference profile's and the window's).

Each follows Evidently's definition: Wasserstein-1 distance divided by the reference
standard deviation (floored at 0.001), Jensen-Shannon *distance* with the natural log
(scipy's ``jensenshannon``), and PSI with Evidently's zero-count fill. The Wasserstein
distance uses each bin's count *and sum of values*, which give the exact integral of the
CDF over the bin; the result is exact unless the two CDFs cross inside a bin (the
benchmark reports the error against scipy on the raw values).

The two small-sample tests (Evidently's choice for a reference of at most 1000 rows) are
computed from the same counts: the two-sample Kolmogorov-Smirnov test on the binned CDFs
(:func:`ks_binned`) and the chi-squared test of homogeneity on category or value counts
(:func:`chi_square`), each returning its statistic and p-value from scipy.
"""

from __future__ import annotations

import numpy as np

from mlops.model.reference_profile import NumericProfile
from mlops.monitoring.request_window import NumericCounts


def _bin_integrals(edges: np.ndarray, counts: np.ndarray, sums: np.ndarray, rows: int) -> np.ndarray:
    """``∫ F`` over each inner bin ``(e_j, e_j+1]``, exactly: ``b F(b) - a F(a) - (sum of values in the bin) / n``."""
    n = max(rows, 1)
    cdf = np.cumsum(counts)[: len(edges)] / n
    return edges[1:] * cdf[1:] - edges[:-1] * cdf[:-1] - sums[1 : len(edges)] / n


def wasserstein_norm(reference: NumericProfile, window: NumericCounts) -> float:
    """W1 = ∫|F_window - F_reference|, summed bin by bin from exact per-bin integrals, over the reference std.

    Exact wherever the two CDFs do not cross inside a bin (with ~100 quantile bins, almost
    everywhere) and for the window's values outside the reference range.
    """
    edges = np.asarray(reference.edges)
    ref = _bin_integrals(edges, np.asarray(reference.counts), np.asarray(reference.sums), reference.rows)
    cur = _bin_integrals(edges, window.counts, window.sums, window.rows)
    tails = (window.below + window.above) / max(window.rows, 1)
    return (float(np.sum(np.abs(cur - ref))) + tails) / max(reference.std, 0.001)


EXACT_KS_ROWS = 10_000
"""scipy's limit for the exact two-sample KS distribution (``ks_2samp``'s ``MAX_AUTO_N``)."""


def ks_binned(reference: np.ndarray, current: np.ndarray) -> tuple[float, float]:
    """Two-sample Kolmogorov-Smirnov statistic and p-value from counts over the same ordered bins.

    ``D`` is the largest gap between the two empirical CDFs at the bin edges. When the
    reference profile is ``discrete`` the edges are every distinct reference value, so the
    reference's CDF is exact; in general ``D`` is a lower bound of the raw statistic, short
    by at most the larger share of one bin (the window's values inside a bin, or the
    reference's inside a quantile bin), which errs towards no drift. The p-value is scipy's
    for that ``D`` and the two sample sizes: ``ks_2samp``'s exact distribution when both
    samples hold at most :data:`EXACT_KS_ROWS` values (scipy's own rule; the samples passed
    are the bin indices repeated by their counts, whose CDFs are the binned ones), else the
    asymptotic one ``ks_2samp`` uses for large samples, ``kstwo.sf(D, round(n m / (n + m)))``.
    ``(nan, nan)`` when either side has no value.
    """
    from scipy import stats as scipy_stats

    reference = np.asarray(reference, dtype=np.int64)
    current = np.asarray(current, dtype=np.int64)
    n, m = int(reference.sum()), int(current.sum())
    if n == 0 or m == 0:
        return float("nan"), float("nan")
    if max(n, m) <= EXACT_KS_ROWS:
        bins = np.arange(len(reference))
        result = scipy_stats.ks_2samp(np.repeat(bins, reference), np.repeat(bins, current), method="auto")
        return float(result.statistic), float(result.pvalue)
    d = float(np.max(np.abs(np.cumsum(reference) / n - np.cumsum(current) / m)))
    return d, float(scipy_stats.kstwo.sf(d, np.round(n * m / (n + m))))


def chi_square(reference: np.ndarray, current: np.ndarray) -> tuple[float, float]:
    """Chi-squared test of homogeneity of two count vectors over the same categories: statistic, p-value.

    Both sides are samples, so the test is the two-sample one (scipy's ``chi2_contingency`` on
    the 2 x k table, no continuity correction): with two categories it is the two-proportion
    z-test Evidently uses for binary columns (chi² = z²). Evidently's ``chisquare`` instead takes
    the reference shares as exact, which overstates drift when the reference is a few dozen
    rows. Categories empty on both sides are dropped; a single category left is no evidence of
    drift (statistic 0, p-value 1). ``(nan, nan)`` when either side has no value.
    """
    from scipy import stats as scipy_stats

    table = np.vstack([np.asarray(reference, dtype=float), np.asarray(current, dtype=float)])
    if table[0].sum() == 0 or table[1].sum() == 0:
        return float("nan"), float("nan")
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return 0.0, 1.0
    result = scipy_stats.chi2_contingency(table, correction=False)
    return float(result.statistic), float(result.pvalue)


def jensenshannon(reference: np.ndarray, current: np.ndarray) -> float:
    from scipy.spatial import distance

    if reference.sum() == 0 or current.sum() == 0:
        return float("nan")
    return float(distance.jensenshannon(reference / reference.sum(), current / current.sum()))


def _fill_zeros(p: np.ndarray) -> np.ndarray:
    """Evidently's fill: a zero share becomes 1e-4, or 1e-6 of the smallest share when that is ≤ 1e-4."""
    smallest = p[p > 0].min()
    return np.where(p == 0, smallest / 1e6 if smallest <= 1e-4 else 1e-4, p)


def psi(reference: np.ndarray, current: np.ndarray) -> float:
    if reference.sum() == 0 or current.sum() == 0:
        return float("nan")
    r = _fill_zeros(reference / reference.sum())
    c = _fill_zeros(current / current.sum())
    return float(np.sum((r - c) * np.log(r / c)))


def deciles(reference: np.ndarray, current: np.ndarray, groups: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Merge fine quantile bins into ~``groups`` equal-mass groups of the reference (PSI's usual bins)."""
    before = np.concatenate([[0.0], np.cumsum(reference)[:-1]]) / max(reference.sum(), 1)
    group = np.minimum((before * groups).astype(int), groups - 1)
    return (
        np.bincount(group, weights=reference, minlength=groups),
        np.bincount(group, weights=current, minlength=groups),
    )


def categorical_vectors(
    categories: tuple[str, ...], ref_counts: tuple[int, ...], window: dict[str, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Reference and window counts over the reference's categories, then any the window adds."""
    keys = list(categories) + sorted(set(window) - set(categories))
    reference = np.array(list(ref_counts) + [0] * (len(keys) - len(categories)), dtype=float)
    current = np.array([window.get(k, 0) for k in keys], dtype=float)
    return reference, current
