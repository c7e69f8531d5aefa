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
The per-group counts and which groups are decided on are :mod:`components.model_validation.group_counts`;
the notes' and reasons' sentences :mod:`components.model_validation.fairness_notes`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from components.model_validation.checks import Violation, limit_status
from components.model_validation.config import FairnessPolicy
from components.model_validation.fairness_notes import (
    group_notes,
    not_conclusive_note,
    rate_spread,
    undecided_note,
)
from components.model_validation.group_bins import Grouping, group_rows
from components.model_validation.group_counts import (
    NAN,
    count_groups,
    decidable_groups,
    gap,
    group_intervals,
    metric_functions,
    rates_of,
)
from components.model_validation.intervals import gap_interval, odds_interval, ratio_interval
from mlops.gates import FAIL, NOT_CONCLUSIVE, PASS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = ["AttributeFairness", "GroupMetrics", "evaluate_fairness", "protected_groups"]


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
        metrics=metric_functions(policy.decision_threshold, favourable),
        y_true=y,
        y_pred=scores,
        sensitive_features={attribute: groups},
    ).by_group.reindex(list(order))
    predicted = scores >= policy.decision_threshold
    counts = count_groups(y, predicted, groups, order, favourable)
    decidable = decidable_groups(counts, policy)
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
            notes.append(undecided_note(str(group), have))
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
                notes=group_notes(row),
                undecided=undecided,
                intervals=group_intervals(counts, k, policy.confidence),
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
        dpd = gap(counts, "selection_rate", parity)
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

    tpr_gap = gap(counts, "true_positive_rate", decidable["true_positive_rate"])
    fpr_gap = gap(counts, "false_positive_rate", decidable["false_positive_rate"])
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
            message = not_conclusive_note(attribute, metric, value, interval, limit, bound, policy)
            not_decided.append(message)
            if math.isnan(value) or (value > limit if bound == "max" else value < limit):
                outside.append(message)
            continue
        mask = parity if driver in ("selection_rate", "favourable_rate") else decidable[driver]
        detail = rate_spread(rates_of(counts, driver, mask, order), driver)
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
