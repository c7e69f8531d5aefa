"""Group fairness of the model's decisions, per protected attribute, with fairlearn's ``MetricFrame``.

A rate is decided on only where its denominator is large enough: the selection and
favourable rates (demographic parity) need ``min_group_size`` rows, the true-positive rate
``min_group_positives`` positive labels and the false-positive rate ``min_group_negatives``
negative labels (equalised odds). A group below a minimum is kept in every table with its
counts and named in the notes and the gate's reason ("group 'x' has 5 positives <
min_group_positives 30: its TPR is not decided on"): a rate from a handful of rows is noise,
yet hiding the group would hide exactly the people a fairness check exists for. Metrics a
group cannot define (AUC with one class, TPR without positives) are reported as undefined
rather than as 0. Numeric attributes are binned (:mod:`components.model_validation.group_bins`);
the disparities' intervals are score intervals (:mod:`components.model_validation.intervals`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from components.model_validation.checks import Violation, limit_status
from components.model_validation.config import FairnessPolicy
from components.model_validation.group_bins import MISSING_GROUP, Grouping, group_rows
from components.model_validation.intervals import gap_interval, odds_interval, rate_interval, ratio_interval
from mlops.gates import FAIL, NOT_CONCLUSIVE, PASS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = ["MISSING_GROUP", "AttributeFairness", "GroupMetrics", "evaluate_fairness", "protected_groups"]

NAN = float("nan")
RATE_NAMES = {
    "selection_rate": "selection and favourable rates",
    "true_positive_rate": "TPR",
    "false_positive_rate": "FPR",
}
"""The rates a group is decided on, each by its own denominator, as the notes name them."""


@dataclass(frozen=True)
class GroupMetrics:
    """Metrics of one group of one protected attribute; NaN where undefined."""

    group: str
    size: int
    positives: int
    """Rows whose label is 1 (the TPR's denominator)."""
    negatives: int
    """Rows whose label is 0 (the FPR's denominator)."""
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
    """Below ``min_group_size`` rows: its selection and favourable rates are reported, not decided on."""
    notes: tuple[str, ...] = ()
    undecided: tuple[str, ...] = ()
    """Rates (``selection_rate``, ``true_positive_rate``, ``false_positive_rate``) whose denominator is below its minimum."""
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per rate with a non-empty denominator: its Wilson score interval at ``confidence`` (this group alone)."""


@dataclass(frozen=True)
class AttributeFairness:
    """The verdict for one protected attribute."""

    attribute: str
    groups: tuple[GroupMetrics, ...]
    checked_groups: tuple[str, ...]
    """Groups with at least ``min_group_size`` rows: the demographic-parity comparison's."""
    demographic_parity_difference: float
    demographic_parity_ratio: float
    equalized_odds_difference: float
    intervals: dict[str, tuple[float, float]]
    """Score interval (``confidence``) per disparity metric that is defined; it contains the metric."""
    notes: tuple[str, ...]
    violations: tuple[Violation, ...]
    decided_groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per rate (``selection_rate``, ``true_positive_rate``, ``false_positive_rate``): the groups decided on."""
    grouping: str = ""
    """How the groups were formed when not by value (bins of a numeric attribute)."""
    statuses: dict[str, str] = field(default_factory=dict)
    """Per disparity metric: ``pass``, ``fail`` or ``not_conclusive`` (:func:`~components.model_validation.checks.limit_status`)."""
    undecided: tuple[str, ...] = ()
    """Each disparity these rows could not decide, as a sentence with its value, interval and limit."""
    undecided_outside: tuple[str, ...] = ()
    """Those of :attr:`undecided` whose value is not within its limit: measured beyond it, or not measured."""

    def status(self, metric: str) -> str:
        """The metric's status; for a result built without statuses, from its violations and undecided."""
        if metric in self.statuses:
            return self.statuses[metric]
        if any(v.metric == metric for v in self.violations):
            return FAIL
        if any(u.startswith(f"{self.attribute} {metric} ") for u in self.undecided):
            return NOT_CONCLUSIVE
        return PASS


@dataclass(frozen=True)
class _Counts:
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


def _counts(
    y: np.ndarray, predicted: np.ndarray, groups: np.ndarray, order: Sequence[str], favourable: int
) -> _Counts:
    import numpy as np

    index = {g: k for k, g in enumerate(order)}
    member = np.array([index[g] for g in groups], dtype=np.int64)
    k = len(order)

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(member[mask], minlength=k).astype(np.int64)

    positive = y == 1
    return _Counts(
        rows=count(np.ones(len(y), bool)),
        positives=count(positive),
        negatives=count(~positive),
        selected=count(predicted),
        favoured=count(predicted == bool(favourable)),
        true_positives=count(predicted & positive),
        false_positives=count(predicted & ~positive),
    )


def _spread(rates: Mapping[str, float], metric: str) -> str:
    """``<metric> <highest group> <rate> vs <lowest group> <rate>`` over the groups decided on."""
    values = {g: v for g, v in rates.items() if not math.isnan(v)}
    if not values:
        return ""
    top = max(values, key=lambda g: values[g])  # first of equals, in display order
    bottom = min(values, key=lambda g: values[g])
    return f"{metric.replace('_', ' ')} {top} {values[top]:.4f} vs {bottom} {values[bottom]:.4f}"


_MINIMUM = {
    "selection_rate": ("rows", "min_group_size"),
    "true_positive_rate": ("positives", "min_group_positives"),
    "false_positive_rate": ("negatives", "min_group_negatives"),
}
"""Each rate's denominator and the setting that sets its minimum."""


def _undecided_note(group: str, shortfalls: Mapping[str, tuple[int, int]]) -> str:
    """``group 'x' has 5 positives < min_group_positives 30: its TPR is not decided on (reported only)``."""
    have = ", ".join(
        f"{count} {_MINIMUM[rate][0]} < {_MINIMUM[rate][1]} {minimum}"
        for rate, (count, minimum) in shortfalls.items()
    )
    rates = " and ".join(RATE_NAMES[rate] for rate in shortfalls)
    verb = "are" if len(shortfalls) > 1 or "selection_rate" in shortfalls else "is"
    return f"group {group!r} has {have}: its {rates} {verb} not decided on (reported only)"


def _group_intervals(counts: _Counts, k: int, confidence: float) -> dict[str, tuple[float, float]]:
    """Each rate's own score interval for group ``k`` (the rate charts draw them); none for an empty denominator."""
    found = {}
    for rate in ("selection_rate", "favourable_rate", "true_positive_rate", "false_positive_rate"):
        successes, trials = counts.rate(rate)
        if trials[k] > 0:
            found[rate] = rate_interval(int(successes[k]), int(trials[k]), confidence)
    return found


def _decidable(counts: _Counts, policy: FairnessPolicy) -> dict[str, np.ndarray]:
    """Per rate, which groups have enough of the rate's denominator."""
    return {
        "selection_rate": counts.rows >= policy.min_group_size,
        "true_positive_rate": counts.positives >= policy.min_group_positives,
        "false_positive_rate": counts.negatives >= policy.min_group_negatives,
    }


def _gap(counts: _Counts, rate: str, mask: np.ndarray) -> float:
    """``max - min`` of a rate over the masked groups; NaN with fewer than two."""
    import numpy as np

    if mask.sum() < 2:
        return NAN
    successes, trials = counts.rate(rate)
    values = successes[mask] / trials[mask]
    return float(np.max(values) - np.min(values))


def _rates(counts: _Counts, rate: str, mask: np.ndarray, order: Sequence[str]) -> dict[str, float]:
    successes, trials = counts.rate(rate)
    return {g: float(successes[k] / trials[k]) for k, g in enumerate(order) if mask[k]}


def _check_attribute(
    attribute: str,
    y: np.ndarray,
    scores: np.ndarray,
    grouping: Grouping,
    policy: FairnessPolicy,
    favourable: int,
) -> AttributeFairness:
    import numpy as np
    from fairlearn.metrics import MetricFrame

    groups, order = grouping.labels, grouping.order
    by_group = MetricFrame(
        metrics=_metrics(policy.decision_threshold, favourable),
        y_true=y,
        y_pred=scores,
        sensitive_features={attribute: groups},
    ).by_group.reindex(list(order))
    predicted = scores >= policy.decision_threshold
    counts = _counts(y, predicted, groups, order, favourable)
    decidable = _decidable(counts, policy)
    denominators = {
        "selection_rate": (counts.rows, policy.min_group_size),
        "true_positive_rate": (counts.positives, policy.min_group_positives),
        "false_positive_rate": (counts.negatives, policy.min_group_negatives),
    }
    rows, notes = [], []
    if grouping.description:
        notes.append(f"groups: {grouping.description}")
    for k, (group, row) in enumerate(by_group.iterrows()):
        undecided = tuple(rate for rate, mask in decidable.items() if not mask[k])
        if undecided:
            have = {r: (int(denominators[r][0][k]), denominators[r][1]) for r in undecided}
            notes.append(_undecided_note(str(group), have))
        rows.append(
            GroupMetrics(
                group=str(group),
                size=int(counts.rows[k]),
                positives=int(counts.positives[k]),
                negatives=int(counts.negatives[k]),
                base_rate=float(row["base_rate"]),
                selection_rate=float(row["selection_rate"]),
                favourable_rate=float(row["favourable_rate"]),
                true_positive_rate=float(row["true_positive_rate"]),
                false_positive_rate=float(row["false_positive_rate"]),
                precision=float(row["precision"]),
                auc=float(row["auc"]),
                too_small=not bool(decidable["selection_rate"][k]),
                notes=_group_notes(row),
                undecided=undecided,
                intervals=_group_intervals(counts, k, policy.confidence),
            )
        )
    decided = {
        rate: tuple(g for g, ok in zip(order, mask, strict=True) if ok) for rate, mask in decidable.items()
    }
    checked = decided["selection_rate"]
    parity = decidable["selection_rate"]
    intervals: dict[str, tuple[float, float]] = {}
    if len(checked) < 2:
        notes.append(
            f"{len(checked)} group(s) of at least {policy.min_group_size} rows (min_group_size): nothing to "
            "compare, so demographic parity was not decided on for this attribute"
        )
        dpd = dpr = NAN
    else:
        dpd = _gap(counts, "selection_rate", parity)
        favoured, rows_in = counts.favoured[parity], counts.rows[parity]
        top = float(np.max(favoured / rows_in))
        if top == 0:
            dpr = 1.0  # no group gets the favourable outcome: equal rates, and 0/0 is not a disparity
            notes.append(
                "no checked group gets the favourable prediction; demographic parity ratio taken as 1"
            )
        else:
            dpr = float(np.min(favoured / rows_in)) / top
        low, high = gap_interval(counts.selected[parity], rows_in, policy.confidence)
        intervals["demographic_parity_difference"] = (float(low), float(high))
        low, high = ratio_interval(favoured, rows_in, policy.confidence)
        intervals["demographic_parity_ratio"] = (float(low), float(high))

    tpr_gap = _gap(counts, "true_positive_rate", decidable["true_positive_rate"])
    fpr_gap = _gap(counts, "false_positive_rate", decidable["false_positive_rate"])
    eod = max((g for g in (tpr_gap, fpr_gap) if not math.isnan(g)), default=NAN)
    if math.isnan(eod):
        notes.append(
            f"equalized odds not decided on: fewer than two groups with at least {policy.min_group_positives} "
            f"positives (min_group_positives) and fewer than two with at least {policy.min_group_negatives} "
            "negatives (min_group_negatives)"
        )
    else:
        tpr_mask, fpr_mask = decidable["true_positive_rate"], decidable["false_positive_rate"]
        low, high = odds_interval(
            None if math.isnan(tpr_gap) else (counts.true_positives[tpr_mask], counts.positives[tpr_mask]),
            None if math.isnan(fpr_gap) else (counts.false_positives[fpr_mask], counts.negatives[fpr_mask]),
            policy.confidence,
        )
        intervals["equalized_odds_difference"] = (float(low), float(high))
    worst = "false_positive_rate" if math.isnan(tpr_gap) or fpr_gap > tpr_gap else "true_positive_rate"
    limits: tuple[tuple[str, float, float, Literal["max", "min"], str], ...] = (
        (
            "demographic_parity_difference",
            dpd,
            policy.max_demographic_parity_difference,
            "max",
            "selection_rate",
        ),
        ("demographic_parity_ratio", dpr, policy.min_demographic_parity_ratio, "min", "favourable_rate"),
        ("equalized_odds_difference", eod, policy.max_equalized_odds_difference, "max", worst),
    )
    violations: list[Violation] = []
    not_decided: list[str] = []
    outside: list[str] = []
    statuses: dict[str, str] = {}
    for metric, value, limit, bound, driver in limits:
        interval = intervals.get(metric)
        status = limit_status(value, interval, limit, bound, policy.gate_on_intervals)
        statuses[metric] = status
        if status == PASS:
            continue
        if status == NOT_CONCLUSIVE:
            message = _not_conclusive(attribute, metric, value, interval, limit, bound, policy)
            not_decided.append(message)
            if math.isnan(value) or (value > limit if bound == "max" else value < limit):
                outside.append(message)
            continue
        mask = parity if driver in ("selection_rate", "favourable_rate") else decidable[driver]
        detail = _spread(_rates(counts, driver, mask, order), driver)
        start, end = intervals[metric]
        span = f"{policy.confidence:.0%} interval {start:.4f}..{end:.4f}"
        violations.append(Violation("fairness", attribute, metric, value, limit, bound, f"{detail}; {span}"))
    return AttributeFairness(
        attribute,
        tuple(rows),
        checked,
        dpd,
        dpr,
        eod,
        intervals,
        tuple(notes),
        tuple(violations),
        decided,
        grouping.description,
        statuses,
        tuple(not_decided),
        tuple(outside),
    )


def _not_conclusive(
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
    start, end = interval if interval is not None else (NAN, NAN)
    side = "beyond" if (value > limit if bound == "max" else value < limit) else "within"
    return (
        f"{attribute} {metric} {value:.4f} is {side} the {bound} {limit:.4f}, but its {policy.confidence:.0%} "
        f"interval {start:.4f}..{end:.4f} reaches across it: not conclusive on these rows; test on more rows "
        "to decide"
    )


def protected_groups(frame: pd.DataFrame, attribute: str) -> np.ndarray:
    """Group labels as strings by value; missing values form their own visible group."""
    return group_rows(frame, attribute, max_numeric_values=len(frame) + 1).labels


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
    favourable_class: Literal["positive", "negative"] = "negative",
    protected_bins: Mapping[str, Sequence[float]] | None = None,
) -> tuple[AttributeFairness, ...]:
    """Check every protected attribute of ``frame`` against ``policy``; ``scores`` are probabilities.

    ``favourable_class`` is the dataset schema's (``DatasetSchema.favourable_class``, whose default
    this repeats); ``policy.favourable_outcome`` overrides it unless it is ``"schema"``.
    ``protected_bins`` are the schema's declared bin edges per numeric attribute
    (``DatasetSchema.protected_bins``); other numeric attributes get quantile bins.
    """
    import numpy as np

    check_columns(frame, label, protected_attributes)
    if len(scores) != len(frame):
        raise ValueError(f"got {len(scores)} scores for {len(frame)} rows; score every row of the frame")
    y = frame[label].to_numpy().astype(int)
    scores = np.asarray(scores, dtype=np.float64)
    bins = protected_bins or {}
    return tuple(
        _check_attribute(
            attr,
            y,
            scores,
            group_rows(frame, attr, bins.get(attr), policy.quantile_bins, policy.max_numeric_values),
            policy,
            policy.favourable_prediction(favourable_class),
        )
        for attr in protected_attributes
    )
