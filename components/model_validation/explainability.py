"""Which features the model relies on: permutation importance, per-row attributions, and their stability.

Global importance of a feature is the mean absolute change in predicted
probability when that feature's column is shuffled across rows (the model's
reliance on it), with the ROC AUC lost alongside (what that reliance is worth).
Shuffling an encoded column treats numeric, categorical and missing values
alike, needs no gradients, and works on any scorer (torch or ONNX): see README.

A per-row attribution replaces one feature of the row by its value in each of
a set of reference rows and reports the average change: how much this row's
score owes to its own value of that feature, relative to the data's typical
values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from components.model_validation.checks import Violation
from components.model_validation.config import ExplainabilityPolicy

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from components.model_validation.scoring import ModelUnderCheck

METHOD = "permutation importance (mean |change in probability| when a feature is shuffled)"


@dataclass(frozen=True)
class FeatureAttribution:
    feature: str
    importance: float
    """Mean |change in probability| when the feature is shuffled."""
    importance_std: float
    """Spread of ``importance`` across the repeated shuffles."""
    auc_drop: float
    """ROC AUC lost when the feature is shuffled; NaN when the labels have one class."""
    rank: int
    """1 = most important."""


@dataclass(frozen=True)
class Contribution:
    feature: str
    value: str
    """The row's raw value of the feature, as text."""
    contribution: float
    """Probability of the row minus its mean probability with this feature taken from reference rows."""


@dataclass(frozen=True)
class ExampleExplanation:
    row: str
    """Index label of the row in the test data."""
    probability: float
    contributions: tuple[Contribution, ...]
    """Every feature, largest |contribution| first."""


@dataclass(frozen=True)
class Stability:
    spearman: float
    """Rank correlation of the importances measured on two disjoint halves of the rows."""
    kendall: float
    top_k: int
    top_k_overlap: float
    """Share of the top-k features of one half that are also top-k in the other."""
    rows_per_half: int


@dataclass(frozen=True)
class ExplainabilityResult:
    method: str
    n_rows: int
    attributions: tuple[FeatureAttribution, ...]
    """Ranked, most important first."""
    examples: tuple[ExampleExplanation, ...]
    stability: Stability
    violations: tuple[Violation, ...]


def _auc_rows(y: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """ROC AUC of each row of ``scores`` [k, n] against ``y`` (Mann-Whitney U; ties share ranks).

    sklearn's ``roc_auc_score`` spends ~20 ms per call validating its inputs; this runs
    once per shuffle, hundreds of times per report.
    """
    import numpy as np
    from scipy.stats import rankdata

    positives = y == 1
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    if n_pos == 0 or n_neg == 0:
        return np.full(len(scores), np.nan)
    ranks = rankdata(scores, axis=1)
    return (ranks[:, positives].sum(axis=1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def permutation_importance(
    scorer: ModelUnderCheck, x: np.ndarray, y: np.ndarray, repeats: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Per feature and repeat [n_features, repeats]: mean |Δp| and the AUC drop."""
    import numpy as np

    n, n_features = x.shape
    base = scorer.predict_encoded(x)
    base_auc = _auc_rows(y, base[None, :])[0]
    change, auc_drop = np.zeros((n_features, repeats)), np.zeros((n_features, repeats))
    for j in range(n_features):
        shuffled = np.tile(x, (repeats, 1))
        for r in range(repeats):
            shuffled[r * n : (r + 1) * n, j] = x[rng.permutation(n), j]
        changed = scorer.predict_encoded(shuffled).reshape(repeats, n)
        change[j] = np.abs(changed - base).mean(axis=1)
        auc_drop[j] = base_auc - _auc_rows(y, changed)
    return change, auc_drop


def explain_rows(
    scorer: ModelUnderCheck, frame: pd.DataFrame, x: np.ndarray, rows: np.ndarray, references: np.ndarray
) -> tuple[ExampleExplanation, ...]:
    """Attributions for ``rows`` (positions in ``x``) against the reference rows ``references``.

    The method is :func:`mlops.model.row_attribution.attribute`, the one the model server answers
    ``:explain`` with, so the report and the served reasons agree on the same rows.
    """
    from mlops.model.row_attribution import attribute

    if len(rows) == 0:
        return ()
    found = attribute(scorer.predict_encoded, x[rows], x[references], scorer.features)
    return tuple(
        ExampleExplanation(
            str(frame.index[i]),
            float(found.scores[n]),
            tuple(
                Contribution(name, str(frame.iloc[i][name]), contribution)
                for name, contribution in found.ranked(n)
            ),
        )
        for n, i in enumerate(rows)
    )


def _stability(a: np.ndarray, b: np.ndarray, top_k: int, rows_per_half: int) -> Stability:
    import numpy as np
    from scipy.stats import kendalltau, spearmanr

    constant = np.ptp(a) == 0 or np.ptp(b) == 0
    spearman = float("nan") if constant else float(spearmanr(a, b).statistic)
    kendall = float("nan") if constant else float(kendalltau(a, b).statistic)
    k = min(top_k, len(a))
    overlap = len(set(np.argsort(-a)[:k]) & set(np.argsort(-b)[:k])) / k
    return Stability(spearman, kendall, k, overlap, rows_per_half)


def explain(
    scorer: ModelUnderCheck, frame: pd.DataFrame, label: str, policy: ExplainabilityPolicy, seed: int
) -> ExplainabilityResult:
    """Rank the model's features on ``frame``, explain a few rows, and check the ranking is stable."""
    import numpy as np

    if len(frame) < 20:
        raise ValueError(f"explanations need at least 20 rows, got {len(frame)}; use a larger test split")
    rng = np.random.default_rng(seed)
    x = scorer.spec.encode(frame)
    y = frame[label].to_numpy().astype(int)
    # Importance is measured on two disjoint halves: their agreement is the stability check, and
    # together they are the global estimate, so stability costs no extra scoring.
    order = rng.permutation(len(x))
    half = len(x) // 2
    halves = [order[:half], order[half : 2 * half]]
    measured = [permutation_importance(scorer, x[h], y[h], policy.permutation_repeats, rng) for h in halves]
    change = np.concatenate([m[0] for m in measured], axis=1)
    auc_drop = np.nanmean(np.concatenate([m[1] for m in measured], axis=1), axis=1)
    mean, std = change.mean(axis=1), change.std(axis=1)
    stability = _stability(measured[0][0].mean(axis=1), measured[1][0].mean(axis=1), policy.top_k, half)
    ranking = np.argsort(-mean, kind="stable")
    attributions = tuple(
        FeatureAttribution(scorer.features[j], float(mean[j]), float(std[j]), float(auc_drop[j]), rank + 1)
        for rank, j in enumerate(ranking)
    )
    rows = rng.choice(len(x), size=min(policy.n_examples, len(x)), replace=False)
    references = rng.choice(len(x), size=min(policy.n_references, len(x)), replace=False)
    examples = explain_rows(scorer, frame, x, rows, references)

    violations = []
    if policy.min_rank_agreement > -1 and (
        math.isnan(stability.spearman) or stability.spearman < policy.min_rank_agreement
    ):
        detail = (
            "ranking undefined: every feature has the same importance in one half"
            if math.isnan(stability.spearman)
            else f"top-{stability.top_k} overlap {stability.top_k_overlap:.2f}, "
            f"{stability.rows_per_half} rows per half"
        )
        violations.append(
            Violation(
                check="explainability",
                subject="attributions",
                metric="rank_agreement_spearman",
                value=stability.spearman,
                threshold=policy.min_rank_agreement,
                bound="min",
                detail=detail,
            )
        )
    return ExplainabilityResult(METHOD, 2 * half, attributions, examples, stability, tuple(violations))
