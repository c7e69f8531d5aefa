"""Bias drift on live traffic and attribution drift: is the model still fair, and still using what it used?

**Bias drift**, per protected attribute and group, against the figures the model-validation
gate measured on the test split (the reference):

- *without labels*: each group's selection rate (share of rows scored at or above the
  threshold). A group breaches when its Wilson interval at ``confidence`` lies wholly outside
  the reference rate ± ``tolerance``: a change the window's sample size cannot explain, and
  larger than the tolerance. Small groups (fewer than ``min_group_rows``) are reported only.
- *with feedback labels*: the equalised-odds gap (the larger of the spread of true-positive
  rates and of false-positive rates across the groups large enough in both label classes).
  It breaches when it exceeds the reference gap by more than ``tolerance``.

**Attribution drift**: feature importance measured on the window (label-free: the mean
absolute change of the score when a feature is shuffled) against the reference ranking;
their agreement is Spearman's rank correlation over the features, and the ranking is
flagged as changed when the agreement falls below ``min_agreement``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class GroupRate:
    attribute: str
    group: str
    rows: int
    selection_rate: float
    low: float
    high: float
    reference: float
    breach: bool


@dataclass(frozen=True)
class OddsGap:
    attribute: str
    gap: float
    reference: float
    groups: tuple[str, ...]
    breach: bool


@dataclass(frozen=True)
class AttributionDrift:
    agreement: float
    """Spearman rank correlation of the window's and the reference's feature importances."""
    changed: bool
    window: dict[str, float]
    reference: dict[str, float]

    @property
    def movers(self) -> list[str]:
        """Features whose rank moved most, largest move first."""
        names = sorted(self.reference)
        before = _ranks([self.reference[n] for n in names])
        after = _ranks([self.window[n] for n in names])
        moves = sorted(zip(np.abs(after - before), names, strict=True), reverse=True)
        return [name for move, name in moves if move > 0]


@dataclass(frozen=True)
class GateReference:
    """The model-validation gate's figures on the test split, as the monitor compares live traffic with them."""

    selection_rates: dict[str, dict[str, float]]
    """Per protected attribute, each group's selection rate (share predicted positive)."""
    odds_gaps: dict[str, float]
    """Per protected attribute, the equalised-odds difference."""
    importance: dict[str, float]
    """Per feature, the mean |change in probability| when it is shuffled (the gate's permutation importance)."""


def reference_from_gate_report(report: Mapping[str, object]) -> GateReference:
    """Read a model-validation gate's ``report.json`` (the artifact it logs with every version it judges)."""
    fairness = report.get("fairness")
    explained = report.get("explainability")
    if not isinstance(fairness, list) or not isinstance(explained, dict):
        raise ValueError(
            "the gate report has no 'fairness' list or 'explainability' object: it is not a model-validation "
            "report.json (model_validation/report.json in the gate's MLflow run)"
        )
    rates = {
        str(a["attribute"]): {str(g["group"]): float(g["selection_rate"]) for g in a["groups"]}
        for a in fairness
    }
    gaps = {str(a["attribute"]): float(a["equalized_odds_difference"]) for a in fairness}
    importance = {str(f["feature"]): float(f["importance"]) for f in explained.get("attributions", [])}
    return GateReference(rates, gaps, importance)


def wilson(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """Two-sided Wilson score interval of a proportion."""
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    margin = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - margin), min(1.0, centre + margin)


def selection_rate_drift(
    attribute: str,
    groups: np.ndarray,
    scores: np.ndarray,
    reference: Mapping[str, float],
    threshold: float = 0.5,
    tolerance: float = 0.05,
    confidence: float = 0.95,
    min_group_rows: int = 30,
) -> list[GroupRate]:
    """Each reference group's selection rate on the window, against its reference rate (module docstring)."""
    selected = scores >= threshold
    out = []
    for group, expected in sorted(reference.items()):
        mask = groups == group
        rows = int(mask.sum())
        if rows == 0:
            out.append(GroupRate(attribute, group, 0, math.nan, 0.0, 1.0, expected, False))
            continue
        hits = int(selected[mask].sum())
        low, high = wilson(hits, rows, confidence)
        outside = high < expected - tolerance or low > expected + tolerance
        out.append(
            GroupRate(
                attribute, group, rows, hits / rows, low, high, expected, outside and rows >= min_group_rows
            )
        )
    return out


def equalised_odds_gap(
    attribute: str,
    groups: np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
    reference_gap: float,
    threshold: float = 0.5,
    tolerance: float = 0.05,
    min_group_rows: int = 30,
) -> OddsGap:
    """The larger spread of TPR and FPR across groups with ``min_group_rows`` of each label class."""
    predicted = scores >= threshold
    tpr, fpr, kept = [], [], []
    for group in np.unique(groups):
        mask = groups == group
        positives, negatives = mask & (labels == 1), mask & (labels == 0)
        if positives.sum() < min_group_rows or negatives.sum() < min_group_rows:
            continue
        tpr.append(predicted[positives].mean())
        fpr.append(predicted[negatives].mean())
        kept.append(str(group))
    if len(kept) < 2:
        return OddsGap(attribute, math.nan, reference_gap, tuple(kept), False)
    gap = float(max(max(tpr) - min(tpr), max(fpr) - min(fpr)))
    return OddsGap(attribute, gap, reference_gap, tuple(kept), gap > reference_gap + tolerance)


def _ranks(values: list[float]) -> np.ndarray:
    from scipy.stats import rankdata

    return np.asarray(rankdata(values), dtype=float)


def shuffle_importance(
    score: Callable[[dict[str, np.ndarray]], np.ndarray],
    columns: dict[str, np.ndarray],
    seed: int = 0,
) -> dict[str, float]:
    """Label-free importance: mean |change in score| when one column is shuffled, the others kept."""
    rng = np.random.default_rng(seed)
    base = score(columns)
    out = {}
    for name, values in columns.items():
        shuffled = dict(columns)
        shuffled[name] = values[rng.permutation(len(values))]
        out[name] = float(np.mean(np.abs(score(shuffled) - base)))
    return out


def attribution_drift(
    window: Mapping[str, float], reference: Mapping[str, float], min_agreement: float = 0.8
) -> AttributionDrift:
    """Rank agreement of the window's importances with the reference's, over the features both rank."""
    names = sorted(set(window) & set(reference))
    if len(names) < 3:
        raise ValueError(
            f"attribution drift needs at least 3 features ranked in both the window and the reference; "
            f"they share {names}"
        )
    before, after = _ranks([reference[n] for n in names]), _ranks([window[n] for n in names])
    agreement = float(np.corrcoef(before, after)[0, 1])  # Pearson on ranks: Spearman's rho
    return AttributionDrift(
        agreement,
        agreement < min_agreement - 1e-9,  # rho from floats: 0.9 computes as 0.8999999999999998
        {n: window[n] for n in names},
        {n: reference[n] for n in names},
    )


def bias_figures(
    grouped: list[pd.DataFrame],
    reference: GateReference,
    tolerance: float,
    min_group_rows: int,
    confidence: float,
    threshold: float = 0.5,
) -> tuple[list[dict[str, object]], list[str]]:
    """Selection rates per group (every grouped row) and equalised-odds gaps (labelled rows), against the
    gate's figures, for each protected attribute both the feedback and the gate name; the breaches as text."""
    import pandas as pd

    frame = pd.concat(grouped, ignore_index=True)
    figures: list[dict[str, object]] = []
    findings: list[str] = []
    for attribute, rates in sorted(reference.selection_rates.items()):
        if attribute not in frame.columns:
            continue
        rows = frame[frame[attribute].notna()]
        groups = rows[attribute].astype(str).to_numpy()
        scores = rows["prediction"].to_numpy(float)
        unknown = sorted(set(groups.tolist()) - set(rates))
        if unknown:
            findings.append(
                f"bias drift: feedback names {attribute} group(s) {unknown} the gate did not see "
                f"(its groups: {sorted(rates)}); send the gate's group names"
            )
        for rate in selection_rate_drift(
            attribute, groups, scores, rates, threshold, tolerance, confidence, min_group_rows
        ):
            figures.append({"kind": "selection_rate", **asdict(rate)})
            if rate.breach:
                findings.append(
                    f"bias drift: {attribute}={rate.group} selection rate {rate.selection_rate:.3f} "
                    f"[{rate.low:.3f}, {rate.high:.3f}] on {rate.rows} rows vs the gate's {rate.reference:.3f} "
                    f"(tolerance {tolerance:g})"
                )
        labelled = rows[rows["label"].notna()]
        if attribute in reference.odds_gaps and len(labelled):
            gap = equalised_odds_gap(
                attribute,
                labelled[attribute].astype(str).to_numpy(),
                labelled["prediction"].to_numpy(float),
                labelled["label"].to_numpy(int),
                reference.odds_gaps[attribute],
                threshold,
                tolerance,
                min_group_rows,
            )
            figures.append({"kind": "equalised_odds_gap", **asdict(gap)})
            if gap.breach:
                findings.append(
                    f"bias drift: {attribute} equalised-odds gap {gap.gap:.3f} over groups {', '.join(gap.groups)} "
                    f"vs the gate's {gap.reference:.3f} (tolerance {tolerance:g})"
                )
    return figures, findings
