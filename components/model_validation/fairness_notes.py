"""The fairness check's sentences: why a group's rate is not decided on, what a group cannot define,
which groups a disparity runs between, and why a disparity is not conclusive."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from components.model_validation.config import FairnessPolicy

if TYPE_CHECKING:
    import pandas as pd

RATE_NAMES = {
    "selection_rate": "selection and favourable rates",
    "true_positive_rate": "TPR",
    "false_positive_rate": "FPR",
}
"""The rates a group is decided on, each by its own denominator, as the notes name them."""


MINIMUM = {
    "selection_rate": ("rows", "min_group_size"),
    "true_positive_rate": ("positives", "min_group_positives"),
    "false_positive_rate": ("negatives", "min_group_negatives"),
}
"""Each rate's denominator and the setting that sets its minimum."""


def undecided_note(group: str, shortfalls: Mapping[str, tuple[int, int]]) -> str:
    """``group 'x' has 5 positives < min_group_positives 30: its TPR is not decided on (reported only)``."""
    have = ", ".join(
        f"{count} {MINIMUM[rate][0]} < {MINIMUM[rate][1]} {minimum}"
        for rate, (count, minimum) in shortfalls.items()
    )
    rates = " and ".join(RATE_NAMES[rate] for rate in shortfalls)
    verb = "are" if len(shortfalls) > 1 or "selection_rate" in shortfalls else "is"
    return f"group {group!r} has {have}: its {rates} {verb} not decided on (reported only)"


def group_notes(row: pd.Series) -> tuple[str, ...]:
    notes = []
    if math.isnan(row["auc"]):
        notes.append("AUC undefined: the group has only one label class")
    if math.isnan(row["true_positive_rate"]):
        notes.append("TPR undefined: no positive labels")
    if math.isnan(row["false_positive_rate"]):
        notes.append("FPR undefined: no negative labels")
    if math.isnan(row["precision"]):
        notes.append("precision undefined: no predicted positives")
    return tuple(notes)


def rate_spread(rates: Mapping[str, float], metric: str) -> str:
    """``<metric> <highest group> <rate> vs <lowest group> <rate>`` over the groups decided on."""
    values = {g: v for g, v in rates.items() if not math.isnan(v)}
    if not values:
        return ""
    top = max(values, key=lambda g: values[g])  # first of equals, in display order
    bottom = min(values, key=lambda g: values[g])
    return f"{metric.replace('_', ' ')} {top} {values[top]:.4f} vs {bottom} {values[bottom]:.4f}"


def not_conclusive_note(
    attribute: str,
    metric: str,
    value: float,
    interval: tuple[float, float] | None,
    limit: float,
    bound: Literal["max", "min"],
    policy: FairnessPolicy,
) -> str:
    """Why a disparity is not conclusive, with its figures and what would decide it."""
    if math.isnan(value):
        return (
            f"{attribute} {metric} not measured: fewer than two groups large enough to compare "
            "(min_group_size, min_group_positives, min_group_negatives); test on more rows to decide"
        )
    start, end = interval if interval is not None else (math.nan, math.nan)
    side = "beyond" if (value > limit if bound == "max" else value < limit) else "within"
    return (
        f"{attribute} {metric} {value:.4f} is {side} the {bound} {limit:.4f}, but its {policy.confidence:.0%} "
        f"interval {start:.4f}..{end:.4f} reaches across it: not conclusive on these rows; test on more rows "
        "to decide"
    )
