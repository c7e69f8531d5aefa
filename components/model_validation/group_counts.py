"""Per group of one protected attribute, the counts behind every rate (rows, positives, negatives, the
selected, the favoured, true and false positives), which groups have enough of each rate's denominator to
be decided on, and the spread of a rate over the groups decided on. Also the per-group metrics fairlearn's
``MetricFrame`` computes, each NaN where its denominator is empty."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from components.model_validation.config import FairnessPolicy
from components.model_validation.intervals import rate_interval

if TYPE_CHECKING:
    import numpy as np

NAN = float("nan")


@dataclass(frozen=True)
class GroupCounts:
    """Per-group counts in display order: the numerators and denominators of every rate."""

    rows: np.ndarray
    positives: np.ndarray
    negatives: np.ndarray
    selected: np.ndarray
    favoured: np.ndarray
    true_positives: np.ndarray
    false_positives: np.ndarray

    def rate(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(successes, trials) of a rate, per group."""
        return {
            "selection_rate": (self.selected, self.rows),
            "favourable_rate": (self.favoured, self.rows),
            "true_positive_rate": (self.true_positives, self.positives),
            "false_positive_rate": (self.false_positives, self.negatives),
        }[name]


def metric_functions(
    threshold: float, favourable: int
) -> dict[str, Callable[[np.ndarray, np.ndarray], float]]:
    """MetricFrame metrics over (labels, scores); each returns NaN when its denominator is empty."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    def rate(mask: np.ndarray, predicted: np.ndarray) -> float:
        return float(predicted[mask].mean()) if mask.any() else NAN

    def auc(y: np.ndarray, s: np.ndarray) -> float:
        return float(roc_auc_score(y, s)) if 0 < y.sum() < len(y) else NAN

    return {
        "size": lambda y, s: float(len(y)),
        "positives": lambda y, s: float(np.sum(y == 1)),
        "base_rate": lambda y, s: float(np.mean(y)) if len(y) else NAN,
        "selection_rate": lambda y, s: rate(np.ones(len(y), bool), s >= threshold),
        "favourable_rate": lambda y, s: rate(np.ones(len(y), bool), (s >= threshold) == bool(favourable)),
        "true_positive_rate": lambda y, s: rate(y == 1, s >= threshold),
        "false_positive_rate": lambda y, s: rate(y == 0, s >= threshold),
        "precision": lambda y, s: rate(s >= threshold, y == 1),
        "auc": auc,
    }


def count_groups(
    y: np.ndarray, predicted: np.ndarray, groups: np.ndarray, order: Sequence[str], favourable: int
) -> GroupCounts:
    import numpy as np

    index = {g: k for k, g in enumerate(order)}
    member = np.array([index[g] for g in groups], dtype=np.int64)
    k = len(order)

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(member[mask], minlength=k).astype(np.int64)

    positive = y == 1
    return GroupCounts(
        rows=count(np.ones(len(y), bool)),
        positives=count(positive),
        negatives=count(~positive),
        selected=count(predicted),
        favoured=count(predicted == bool(favourable)),
        true_positives=count(predicted & positive),
        false_positives=count(predicted & ~positive),
    )


def group_intervals(counts: GroupCounts, k: int, confidence: float) -> dict[str, tuple[float, float]]:
    """Each rate's own score interval for group ``k`` (the rate charts draw them); none for an empty denominator."""
    found = {}
    for rate in ("selection_rate", "favourable_rate", "true_positive_rate", "false_positive_rate"):
        successes, trials = counts.rate(rate)
        if trials[k] > 0:
            found[rate] = rate_interval(int(successes[k]), int(trials[k]), confidence)
    return found


def decidable_groups(counts: GroupCounts, policy: FairnessPolicy) -> dict[str, np.ndarray]:
    """Per rate, which groups have enough of the rate's denominator."""
    return {
        "selection_rate": counts.rows >= policy.min_group_size,
        "true_positive_rate": counts.positives >= policy.min_group_positives,
        "false_positive_rate": counts.negatives >= policy.min_group_negatives,
    }


def gap(counts: GroupCounts, rate: str, mask: np.ndarray) -> float:
    """``max - min`` of a rate over the masked groups; NaN with fewer than two."""
    import numpy as np

    if mask.sum() < 2:
        return NAN
    successes, trials = counts.rate(rate)
    values = successes[mask] / trials[mask]
    return float(np.max(values) - np.min(values))


def rates_of(counts: GroupCounts, rate: str, mask: np.ndarray, order: Sequence[str]) -> dict[str, float]:
    successes, trials = counts.rate(rate)
    return {g: float(successes[k] / trials[k]) for k, g in enumerate(order) if mask[k]}
