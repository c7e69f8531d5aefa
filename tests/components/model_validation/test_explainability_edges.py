"""The attribution-stability gate at its threshold, and the attribution arithmetic on stub scorers.

Stub scorers are linear in the encoded features with powers-of-two weights, so
per-row contributions and importances of ignored features are exact.
"""

import math

import numpy as np
import pandas as pd
import pytest

from components.model_validation.config import ExplainabilityPolicy
from components.model_validation.explainability import (
    METHOD,
    _auc_rows,
    _stability,
    explain,
    explain_rows,
    permutation_importance,
)
from tests.support.gate_inputs import numeric_spec, stub_scorer

FEATURES = ("a", "b", "c", "d")
SPEC = numeric_spec(*FEATURES)


def below(value: float) -> float:
    return float(np.nextafter(value, -math.inf))


def above(value: float) -> float:
    return float(np.nextafter(value, math.inf))


def rows(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    data = pd.DataFrame(rng.integers(0, 8, size=(n, len(FEATURES))).astype(float), columns=list(FEATURES))
    data["y"] = np.arange(n) % 2
    return data


# Equal weights: which feature looks most important depends on the rows, so the halves disagree.
EQUAL_WEIGHTS = stub_scorer(SPEC, lambda m: (m @ np.ones(4)) / 64)
# Strictly ordered weights a > b > c, d ignored.
ORDERED = stub_scorer(SPEC, lambda m: (m @ np.array([8.0, 4.0, 2.0, 0.0])) / 256)


def _policy(min_rank_agreement: float, **rest: int) -> ExplainabilityPolicy:
    return ExplainabilityPolicy(**{"min_rank_agreement": min_rank_agreement, "n_examples": 0, **rest})


def test_rank_agreement_exactly_at_the_minimum_passes() -> None:
    measured = explain(EQUAL_WEIGHTS, rows(60), "y", _policy(-1.0), seed=0).stability.spearman
    assert -1.0 < measured < 1.0  # the halves disagree somewhat: the threshold can sit on either side
    assert explain(EQUAL_WEIGHTS, rows(60), "y", _policy(measured), seed=0).violations == ()


def test_rank_agreement_inside_the_minimum_passes() -> None:
    measured = explain(EQUAL_WEIGHTS, rows(60), "y", _policy(-1.0), seed=0).stability.spearman
    assert explain(EQUAL_WEIGHTS, rows(60), "y", _policy(below(measured)), seed=0).violations == ()


def test_rank_agreement_just_under_the_minimum_is_a_violation_naming_value_threshold_and_overlap() -> None:
    result = explain(EQUAL_WEIGHTS, rows(60), "y", _policy(-1.0, top_k=2), seed=0)
    measured = result.stability.spearman
    limit = above(measured)
    (violation,) = explain(EQUAL_WEIGHTS, rows(60), "y", _policy(limit, top_k=2), seed=0).violations
    assert (violation.check, violation.subject, violation.metric, violation.bound) == (
        "explainability",
        "attributions",
        "rank_agreement_spearman",
        "min",
    )
    assert violation.value == measured and violation.threshold == limit
    assert violation.detail == f"top-2 overlap {result.stability.top_k_overlap:.2f}, 30 rows per half"


def test_a_stable_ranking_meets_the_strictest_minimum() -> None:
    result = explain(ORDERED, rows(40), "y", _policy(1.0), seed=0)
    assert result.stability.spearman == pytest.approx(1.0)
    assert result.violations == ()
    assert [a.feature for a in result.attributions] == ["a", "b", "c", "d"]
    assert [a.rank for a in result.attributions] == [1, 2, 3, 4]
    assert result.method == METHOD


def test_an_undefined_ranking_is_a_violation_unless_the_check_is_disabled() -> None:
    constant = stub_scorer(SPEC, lambda m: np.full(len(m), 0.25))
    (violation,) = explain(constant, rows(40), "y", _policy(-0.99), seed=0).violations
    assert math.isnan(violation.value)
    assert violation.detail == "ranking undefined: every feature has the same importance in one half"
    assert explain(constant, rows(40), "y", _policy(-1.0), seed=0).violations == ()


def test_a_negative_agreement_fails_any_minimum_above_it() -> None:
    measured = explain(EQUAL_WEIGHTS, rows(60), "y", _policy(-1.0), seed=0).stability.spearman
    assert [
        v.metric
        for v in explain(EQUAL_WEIGHTS, rows(60), "y", _policy(min(1.0, measured + 0.5)), seed=0).violations
    ] == ["rank_agreement_spearman"]


def test_explanations_need_twenty_rows() -> None:
    result = explain(ORDERED, rows(21), "y", _policy(-1.0, n_examples=2), seed=0)
    assert result.n_rows == 20 and result.stability.rows_per_half == 10
    assert len(result.examples) == 2
    with pytest.raises(
        ValueError, match="explanations need at least 20 rows, got 19; use a larger test split"
    ):
        explain(ORDERED, rows(19), "y", _policy(-1.0), seed=0)
    assert explain(ORDERED, rows(20), "y", _policy(-1.0), seed=0).n_rows == 20


# --- stability measures on hand-built importances ---


def test_stability_of_one_swapped_pair() -> None:
    stability = _stability(np.array([5.0, 4, 3, 2, 1]), np.array([5.0, 4, 3, 1, 2]), top_k=4, rows_per_half=7)
    assert stability.spearman == pytest.approx(0.9)  # 1 - 6 * 2 / (5 * 24)
    assert stability.kendall == pytest.approx(0.8)  # (9 - 1) / 10
    assert stability.top_k == 4 and stability.top_k_overlap == 0.75  # {0,1,2,3} vs {0,1,2,4}
    assert stability.rows_per_half == 7


def test_stability_top_k_is_capped_at_the_feature_count() -> None:
    stability = _stability(np.array([3.0, 2, 1]), np.array([1.0, 2, 3]), top_k=10, rows_per_half=5)
    assert stability.top_k == 3 and stability.top_k_overlap == 1.0
    assert stability.spearman == pytest.approx(-1.0)


def test_stability_top_one_disagreement() -> None:
    stability = _stability(np.array([3.0, 2, 1]), np.array([2.0, 3, 1]), top_k=1, rows_per_half=5)
    assert stability.top_k_overlap == 0.0


def test_constant_importances_in_either_half_leave_the_ranking_undefined() -> None:
    for a, b in ((np.zeros(3), np.array([1.0, 2, 3])), (np.array([1.0, 2, 3]), np.ones(3))):
        stability = _stability(a, b, top_k=2, rows_per_half=5)
        assert math.isnan(stability.spearman) and math.isnan(stability.kendall)


# --- AUC, importances and per-row contributions ---


def test_fast_auc_of_hand_built_scores() -> None:
    y = np.array([0, 0, 1, 1])
    scores = np.array(
        [[0.1, 0.4, 0.35, 0.8], [0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.5, 0.5], [0.4, 0.3, 0.2, 0.1]]
    )
    assert _auc_rows(y, scores).tolist() == [0.75, 1.0, 0.5, 0.0]
    assert np.isnan(_auc_rows(np.array([1, 1]), np.array([[0.1, 0.2]]))).all()
    assert np.isnan(_auc_rows(np.array([0, 0]), np.array([[0.1, 0.2]]))).all()


def test_an_ignored_feature_has_zero_importance_and_zero_auc_drop() -> None:
    data = rows(16)
    change, auc_drop = permutation_importance(
        ORDERED, SPEC.encode(data), data["y"].to_numpy(), repeats=3, rng=np.random.default_rng(0)
    )
    assert change.shape == (4, 3) and auc_drop.shape == (4, 3)
    assert (change[3] == 0).all() and (auc_drop[3] == 0).all()
    assert (change[0] > change[2]).all()  # weight 8 vs weight 2 on the same kind of values


def test_shuffling_a_feature_changes_scores_by_its_weight_times_the_value_change() -> None:
    data = pd.DataFrame({"a": [0.0, 4.0], "b": [0.0, 0.0], "c": [0.0, 0.0], "d": [0.0, 0.0], "y": [0, 1]})
    x = SPEC.encode(data)
    # With two rows, a permutation either keeps or swaps them; over repeats some swap.
    change, auc_drop = permutation_importance(ORDERED, x, data["y"].to_numpy(), 8, np.random.default_rng(1))
    assert set(change[0].tolist()) <= {0.0, 4 * 8 / 256}
    assert set(auc_drop[0].tolist()) <= {0.0, 1.0}
    assert change[0].max() == 4 * 8 / 256 and auc_drop[0].max() == 1.0


def test_a_row_contribution_is_its_weight_times_its_distance_from_the_references() -> None:
    data = pd.DataFrame(
        {
            "a": [4.0, 0.0, 2.0],
            "b": [0.0, 2.0, 2.0],
            "c": [1.0, 1.0, 1.0],
            "d": [3.0, 5.0, 7.0],
            "y": [0, 1, 0],
        },
        index=["first", "second", "third"],
    )
    (example,) = explain_rows(
        ORDERED, data, SPEC.encode(data), rows=np.array([0]), references=np.array([1, 2])
    )
    assert example.row == "first"
    assert example.probability == (4 * 8 + 1 * 2) / 256
    contributions = {c.feature: c.contribution for c in example.contributions}
    assert contributions == {
        "a": 8 * (4 - 1) / 256,  # references' a: 0 and 2 -> mean 1
        "b": 4 * (0 - 2) / 256,
        "c": 0.0,
        "d": 0.0,
    }
    assert [c.feature for c in example.contributions][:2] == ["a", "b"]  # largest |contribution| first
    assert next(c for c in example.contributions if c.feature == "a").value == "4.0"


def test_attributions_carry_importance_spread_and_auc_drop() -> None:
    result = explain(ORDERED, rows(40), "y", _policy(-1.0), seed=0)
    ignored = next(a for a in result.attributions if a.feature == "d")
    assert (ignored.importance, ignored.importance_std, ignored.auc_drop) == (0.0, 0.0, 0.0)
    top = result.attributions[0]
    assert top.feature == "a" and top.importance > 0.0 and top.importance_std >= 0.0
    assert isinstance(top.auc_drop, float) and not math.isnan(top.auc_drop)


def test_explained_rows_are_distinct_and_references_are_every_row_when_asked_for_more() -> None:
    data = rows(20)
    result = explain(ORDERED, data, "y", _policy(-1.0, n_examples=20, n_references=1000), seed=0)
    assert sorted(e.row for e in result.examples) == sorted(str(i) for i in data.index)
    column_means = data[list(FEATURES)].mean()
    for example in result.examples:
        own = data.loc[int(example.row)]
        contribution = {c.feature: c.contribution for c in example.contributions}
        assert contribution["a"] == pytest.approx(8 * (own["a"] - column_means["a"]) / 256)
        assert contribution["b"] == pytest.approx(4 * (own["b"] - column_means["b"]) / 256)


def test_the_two_halves_are_disjoint_and_equal_sized() -> None:
    batch_sizes: list[int] = []

    def recording(m: np.ndarray) -> np.ndarray:
        batch_sizes.append(len(m))
        return (m @ np.array([8.0, 4.0, 2.0, 0.0])) / 256

    explain(stub_scorer(SPEC, recording), rows(21), "y", _policy(-1.0, permutation_repeats=1), seed=0)
    # Per half: one unshuffled batch, then one shuffled batch per feature; 21 rows -> halves of 10.
    assert batch_sizes == [10] * (1 + len(FEATURES)) * 2


def test_stability_of_importances_spanning_exactly_one() -> None:
    stability = _stability(np.array([1.0, 0.0, 0.5]), np.array([1.0, 0.0, 0.5]), top_k=2, rows_per_half=5)
    assert stability.spearman == pytest.approx(1.0) and stability.kendall == pytest.approx(1.0)
