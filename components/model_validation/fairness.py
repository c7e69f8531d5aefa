"""Group fairness of the model's decisions, per protected attribute, with fairlearn's ``MetricFrame``.

Groups smaller than ``min_group_size`` are kept in every table with their size
and a ``too_small`` flag, and only the threshold checks skip them: a rate from a
dozen rows is noise, yet hiding the group would hide exactly the people a
fairness check exists for. Metrics a group cannot define (AUC with one class,
TPR without positives) are reported as undefined rather than as 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from components.model_validation.checks import Violation
from components.model_validation.config import FairnessPolicy
from components.model_validation.intervals import disparity_intervals

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

MISSING_GROUP = "<missing>"
NAN = float("nan")


@dataclass(frozen=True)
class GroupMetrics:
    """Metrics of one group of one protected attribute; NaN where undefined."""

    group: str
    size: int
    positives: int
    """Rows whose label is 1."""
    base_rate: float
    selection_rate: float
    """Share predicted positive (label 1)."""
    favourable_rate: float
    """Share given the favourable prediction (``FairnessPolicy.favourable_outcome``, by default the schema's)."""
    true_positive_rate: float
    false_positive_rate: float
    precision: float
    auc: float
    too_small: bool
    """Below ``min_group_size``: reported, but left out of the threshold checks."""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class AttributeFairness:
    """The verdict for one protected attribute."""

    attribute: str
    groups: tuple[GroupMetrics, ...]
    checked_groups: tuple[str, ...]
    """Groups large enough to enter the difference/ratio checks."""
    demographic_parity_difference: float
    demographic_parity_ratio: float
    equalized_odds_difference: float
    intervals: dict[str, tuple[float, float]]
    """Bootstrap interval per disparity metric; empty when bootstrapping is off."""
    notes: tuple[str, ...]
    violations: tuple[Violation, ...]


def _metrics(threshold: float, favourable: int) -> dict[str, Callable[[np.ndarray, np.ndarray], float]]:
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


def _group_notes(row: pd.Series) -> tuple[str, ...]:
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


def _spread(by_group: pd.DataFrame, metric: str) -> str:
    values = by_group[metric].dropna()
    if values.empty:
        return ""
    return (
        f"{metric.replace('_', ' ')} {values.idxmax()} {float(values.max()):.4f} "
        f"vs {values.idxmin()} {float(values.min()):.4f}"
    )


def _worst_rate(difference: pd.Series) -> str:
    """The rate (TPR or FPR) whose gap sets the equalised-odds difference."""
    tpr, fpr = float(difference["true_positive_rate"]), float(difference["false_positive_rate"])
    return "false_positive_rate" if math.isnan(tpr) or fpr > tpr else "true_positive_rate"


def _check_attribute(
    attribute: str,
    y: np.ndarray,
    scores: np.ndarray,
    groups: np.ndarray,
    policy: FairnessPolicy,
    seed: int,
    favourable: int,
) -> AttributeFairness:
    import numpy as np
    from fairlearn.metrics import MetricFrame

    metrics = _metrics(policy.decision_threshold, favourable)
    by_group = MetricFrame(
        metrics=metrics, y_true=y, y_pred=scores, sensitive_features={attribute: groups}
    ).by_group
    rows = []
    for group, row in by_group.iterrows():
        size = int(row["size"])
        rows.append(
            GroupMetrics(
                group=str(group),
                size=size,
                positives=int(row["positives"]),
                base_rate=float(row["base_rate"]),
                selection_rate=float(row["selection_rate"]),
                favourable_rate=float(row["favourable_rate"]),
                true_positive_rate=float(row["true_positive_rate"]),
                false_positive_rate=float(row["false_positive_rate"]),
                precision=float(row["precision"]),
                auc=float(row["auc"]),
                too_small=size < policy.min_group_size,
                notes=_group_notes(row),
            )
        )
    checked = tuple(g.group for g in rows if not g.too_small)
    notes = [
        f"group {g.group!r} has {g.size} rows < min_group_size {policy.min_group_size}: "
        "reported but not checked against the thresholds"
        for g in rows
        if g.too_small
    ]
    if len(checked) < 2:
        notes.append(
            f"{len(checked)} group(s) of at least {policy.min_group_size} rows: nothing to compare, "
            "so no fairness threshold was checked for this attribute"
        )
        return AttributeFairness(attribute, tuple(rows), checked, NAN, NAN, NAN, {}, tuple(notes), ())

    mask = np.isin(groups, checked)
    frame = MetricFrame(
        metrics={
            k: metrics[k]
            for k in ("selection_rate", "favourable_rate", "true_positive_rate", "false_positive_rate")
        },
        y_true=y[mask],
        y_pred=scores[mask],
        sensitive_features={attribute: groups[mask]},
    )
    difference, ratio = frame.difference(), frame.ratio()
    # fairlearn takes max - min over the groups that define a rate, so one defined group gives a gap
    # of 0; a gap needs two groups, as in intervals._range.
    defined = frame.by_group.notna().sum()
    for rate in ("true_positive_rate", "false_positive_rate"):
        if defined[rate] < 2:
            difference[rate] = NAN
    dpd = float(difference["selection_rate"])
    if frame.group_max()["favourable_rate"] == 0:
        dpr = 1.0  # no group gets the favourable outcome: equal rates, and 0/0 is not a disparity
        notes.append("no checked group gets the favourable prediction; demographic parity ratio taken as 1")
    else:
        dpr = float(ratio["favourable_rate"])
    gaps = [float(difference[m]) for m in ("true_positive_rate", "false_positive_rate")]
    eod = max((g for g in gaps if not math.isnan(g)), default=NAN)

    intervals: dict[str, tuple[float, float]] = {}
    if policy.bootstrap_resamples:
        predicted = scores >= policy.decision_threshold
        intervals = disparity_intervals(
            y,
            predicted,
            groups,
            checked,
            favourable,
            policy.bootstrap_resamples,
            policy.confidence,
            seed,
        )
    limits: tuple[tuple[str, float, float, Literal["max", "min"], str], ...] = (
        (
            "demographic_parity_difference",
            dpd,
            policy.max_demographic_parity_difference,
            "max",
            "selection_rate",
        ),
        ("demographic_parity_ratio", dpr, policy.min_demographic_parity_ratio, "min", "favourable_rate"),
        (
            "equalized_odds_difference",
            eod,
            policy.max_equalized_odds_difference,
            "max",
            _worst_rate(difference),
        ),
    )
    violations = []
    for metric, value, limit, bound, driver in limits:
        if not (value > limit if bound == "max" else value < limit):
            continue
        detail = _spread(frame.by_group, driver)
        if metric in intervals:
            low, high = intervals[metric]
            span = f"{policy.confidence:.0%} interval {low:.4f}..{high:.4f}"
            if not (low > limit if bound == "max" else high < limit):
                notes.append(
                    f"{metric} {value:.4f} is beyond the {bound} {limit:.4f} but its {span} reaches it: "
                    "not conclusive on this many rows, so not a violation; test on more data to decide"
                )
                continue
            detail = f"{detail}; {span}"
        violations.append(Violation("fairness", attribute, metric, value, limit, bound, detail))
    if math.isnan(eod):
        notes.append("equalized odds undefined: no checked group has both label classes")
    return AttributeFairness(
        attribute, tuple(rows), checked, dpd, dpr, eod, intervals, tuple(notes), tuple(violations)
    )


def protected_groups(frame: pd.DataFrame, attribute: str) -> np.ndarray:
    """Group labels as strings; missing values form their own visible group."""
    column = frame[attribute]
    return column.astype(object).where(column.notna(), MISSING_GROUP).astype(str).to_numpy()


def check_columns(frame: pd.DataFrame, label: str, protected_attributes: Sequence[str]) -> None:
    missing = [a for a in protected_attributes if a not in frame.columns]
    if missing:
        raise ValueError(
            f"protected attribute(s) {missing} not in the test data; available columns: "
            f"{sorted(map(str, frame.columns))}. Fix protected_attributes or keep the column in the test split."
        )
    if label not in frame.columns:
        raise ValueError(
            f"label column {label!r} not in the test data; available columns: {sorted(map(str, frame.columns))}"
        )


def evaluate_fairness(
    frame: pd.DataFrame,
    scores: np.ndarray,
    label: str,
    protected_attributes: Sequence[str],
    policy: FairnessPolicy,
    seed: int = 0,
    favourable_class: Literal["positive", "negative"] = "negative",
) -> tuple[AttributeFairness, ...]:
    """Check every protected attribute of ``frame`` against ``policy``; ``scores`` are probabilities.

    ``favourable_class`` is the dataset schema's (``DatasetSchema.favourable_class``, whose default
    this repeats); ``policy.favourable_outcome`` overrides it unless it is ``"schema"``.
    """
    import numpy as np

    check_columns(frame, label, protected_attributes)
    if len(scores) != len(frame):
        raise ValueError(f"got {len(scores)} scores for {len(frame)} rows; score every row of the frame")
    y = frame[label].to_numpy().astype(int)
    scores = np.asarray(scores, dtype=np.float64)
    return tuple(
        _check_attribute(
            attr,
            y,
            scores,
            protected_groups(frame, attr),
            policy,
            seed,
            policy.favourable_prediction(favourable_class),
        )
        for attr in protected_attributes
    )
