"""The quality test of a canary, by simulation: error rates at equal quality, and how soon a worse model goes.

Scores are binormal (negatives N(0, 1), positives N(d, 1): AUC = Φ(d / √2)), 30 % positives,
a canary: each analysis interval the challenger answers 500 requests and 1000 of the champion's
are read (more would only queue: a pair takes one unit of each), every request's label arrives, and the verdict is asked after every interval (the
peeking an always-valid test must survive).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist

import numpy as np
import pytest

from delivery.rollout.sequential import (
    AucUnits,
    BettingTest,
    CanaryQuality,
    PairedQuality,
    QualityVerdict,
    accuracy_units,
)

PREVALENCE = 0.3
CHAMPION_AUC = 0.80
PER_INTERVAL = (500, 1000)
INTERVALS = 60
"""Horizon: 30,000 challenger requests."""
REPLICATES = 200


def traffic(rng: np.random.Generator, auc: float, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores, labels, and each score's calibrated probability (the model is calibrated)."""
    d = math.sqrt(2) * NormalDist().inv_cdf(auc)
    labels = (rng.random(rows) < PREVALENCE).astype(int)
    scores = rng.normal(0, 1, rows) + d * labels
    odds = PREVALENCE / (1 - PREVALENCE) * np.exp(d * scores - d * d / 2)
    return scores, labels, odds / (1 + odds)


def rollout(challenger_auc: float, seed: int) -> tuple[str, int]:
    """Run one canary until its quality verdict decides or the horizon ends: (outcome, challenger requests)."""
    rng = np.random.default_rng(seed)
    quality = CanaryQuality(alpha=0.05, auc_margin=0.01, accuracy_margin=0.01, min_units=100)
    for interval in range(1, INTERVALS + 1):
        cs, cy, cp = traffic(rng, challenger_auc, PER_INTERVAL[0])
        hs, hy, hp = traffic(rng, CHAMPION_AUC, PER_INTERVAL[1])
        quality.add_estimated(accuracy_units(cp, cp), accuracy_units(hp, hp))
        quality.add_labelled((cs, cy), (hs, hy))
        verdict = quality.verdict()
        if verdict.outcome != "continue":
            return verdict.outcome, interval * PER_INTERVAL[0]
    return "continue", INTERVALS * PER_INTERVAL[0]


@pytest.fixture(scope="module")
def equal() -> list[tuple[str, int]]:
    return [rollout(CHAMPION_AUC, seed) for seed in range(REPLICATES)]


@pytest.fixture(scope="module")
def worse() -> list[tuple[str, int]]:
    return [rollout(CHAMPION_AUC - 0.03, 10_000 + seed) for seed in range(REPLICATES)]


def test_equal_models_are_falsely_rolled_back_at_most_five_percent_of_the_time(
    equal: list[tuple[str, int]],
) -> None:
    rollbacks = sum(outcome == "rollback" for outcome, _ in equal)
    assert rollbacks <= 0.05 * REPLICATES, f"{rollbacks} of {REPLICATES} equal challengers rolled back"


def test_a_challenger_003_auc_worse_is_rolled_back_within_a_bounded_number_of_requests(
    worse: list[tuple[str, int]],
) -> None:
    outcomes = [outcome for outcome, _ in worse]
    assert outcomes.count("promote") <= 0.05 * REPLICATES  # false promotion
    assert outcomes.count("rollback") >= 0.95 * REPLICATES
    requests = sorted(n for outcome, n in worse if outcome == "rollback")
    median, p95 = requests[len(requests) // 2], requests[int(0.95 * len(requests)) - 1]
    print(f"rollback after {median} challenger requests (median), {p95} (95th percentile)")
    assert p95 <= 20_000


def test_nothing_is_decided_on_too_little_traffic() -> None:
    rng = np.random.default_rng(1)
    quality = CanaryQuality(min_units=100)
    cs, cy, _ = traffic(rng, 0.55, 300)  # a much worse challenger, but only ~90 AUC pairs
    hs, hy, _ = traffic(rng, 0.95, 300)
    quality.add_labelled((cs, cy), (hs, hy))
    assert quality.realised.pairs < 100 and quality.verdict().outcome == "continue"


def test_the_wealth_needs_evidence_bounded_by_the_bet() -> None:
    """Each unit can at most multiply the wealth by 1.5: 2/alpha = 40 needs at least log(40)/log(1.5) ≈ 9.1 units."""
    test = BettingTest(-1.0, 1.0)
    test.update(np.ones(9))
    assert not test.rejected(0.025)
    test.update(np.ones(20))
    assert test.rejected(0.025)


def test_auc_units_pair_positives_with_negatives_and_count_ties_half() -> None:
    units = AucUnits()
    out = units.add(np.array([0.9, 0.2, 0.5, 0.5, 0.1]), np.array([1, 0, 1, 0, 0]))
    assert out.tolist() == [1.0, 0.5]  # (0.9 > 0.2), (0.5 tie 0.5); 0.1 waits for a positive
    assert units.add(np.array([0.05]), np.array([1])).tolist() == [0.0]  # 0.05 < 0.1


def test_paired_quality_pairs_in_arrival_order_and_keeps_the_surplus() -> None:
    paired = PairedQuality(margin=0.01)
    paired.add(np.array([1.0, 0.0]), np.array([0.0, 0.0, 1.0]))
    assert paired.pairs == 2 and paired.mean_difference == 0.5 and paired.waiting_champion == [1.0]


# --- the decision threshold itself: each of the two tests spends alpha / 2 --------------------------------
#
# The evidence is fed one pair at a time, in steps too small to jump over the band [1/alpha, 2/alpha)
# (a unit multiplies the wealth by at most 1.5: log 1.5 < log 2), so every stream passes through a state
# where the wealth has crossed 1/alpha (the full alpha) but not 2/alpha (the alpha each test spends). The
# verdict must decide exactly when the wealth first reaches 2/alpha: not in the band, not a pair later.

Feed = Callable[[CanaryQuality, float, float], PairedQuality]


def estimated_pair(quality: CanaryQuality, challenger: float, champion: float) -> PairedQuality:
    quality.add_estimated(np.array([challenger]), np.array([champion]))
    return quality.estimated


def realised_pair(quality: CanaryQuality, challenger: float, champion: float) -> PairedQuality:
    """One labelled (positive, negative) couple per model: its AUC unit is 1 when ordered right, else 0."""
    right, wrong, labels = np.array([0.9, 0.1]), np.array([0.1, 0.9]), np.array([1, 0])
    quality.add_labelled((right if challenger else wrong, labels), (right if champion else wrong, labels))
    return quality.realised


def walk(
    alpha: float, feed: Feed, outcome: str, pattern: list[tuple[float, float]]
) -> tuple[list[float], QualityVerdict]:
    """The deciding test's wealth after each pair, until the verdict decides; and that verdict."""
    quality = CanaryQuality(alpha=alpha, min_units=1)
    wealth: list[float] = []
    for step in range(2000):
        paired = feed(quality, *pattern[step % len(pattern)])
        test = paired.harm if outcome == "rollback" else paired.non_inferior
        verdict = quality.verdict()
        assert verdict.figures["quality_decision_log_wealth"] == pytest.approx(math.log(2 / alpha))
        wealth.append(math.exp(test.log_wealth))
        if verdict.outcome != "continue":
            assert verdict.outcome == outcome, verdict.reason
            return wealth, verdict
    raise AssertionError(f"no {outcome} in 2000 pairs: the last wealth was {wealth[-1]:.2f}")


WORSE = [(0.0, 1.0), (1.0, 1.0), (1.0, 1.0), (1.0, 1.0)]
"""The challenger loses every fourth pair and ties the others: harm, in small steps."""
BETTER = [(1.0, 0.0), (1.0, 1.0), (1.0, 1.0), (1.0, 1.0)]
"""The challenger wins every fourth pair and ties the others: non-inferiority, in small steps."""


@pytest.mark.parametrize("alpha", [0.05, 0.2])
@pytest.mark.parametrize(
    ("feed", "outcome", "pattern"),
    [
        pytest.param(estimated_pair, "rollback", WORSE, id="estimated-harm"),
        pytest.param(realised_pair, "rollback", WORSE, id="realised-harm"),
        pytest.param(estimated_pair, "promote", BETTER, id="estimated-non-inferior"),
        pytest.param(realised_pair, "promote", BETTER, id="realised-non-inferior"),
    ],
)
def test_a_decision_needs_evidence_2_over_alpha_and_comes_the_pair_it_is_reached(
    alpha: float, feed: Feed, outcome: str, pattern: list[tuple[float, float]]
) -> None:
    wealth, _ = walk(alpha, feed, outcome, pattern)
    *undecided, decided = wealth
    assert max(undecided) < 2 / alpha, "undecided with evidence at 2/alpha: the threshold is stricter"
    assert decided >= 2 / alpha, "decided below 2/alpha: the threshold is looser (the full alpha?)"
    assert [w for w in undecided if 1 / alpha <= w < 2 / alpha], (
        "the stream never sat between 1/alpha and 2/alpha"
    )


def test_the_reason_names_the_evidence_and_the_bound_each_test_spends() -> None:
    wealth, verdict = walk(0.05, estimated_pair, "rollback", WORSE)
    assert (
        f"evidence {wealth[-1]:.0f} >= 40 (always-valid test, false-rollback bound 0.025)" in verdict.reason
    )
    wealth, verdict = walk(0.05, realised_pair, "promote", BETTER)
    assert verdict.reason.startswith("challenger not worse on realised AUC by 0.01 or more")
    assert verdict.reason.endswith("(always-valid test, false-promotion bound 0.025)")


@pytest.mark.parametrize(("pairs", "outcome"), [(99, "continue"), (100, "rollback")])
def test_min_units_is_a_floor_on_pairs_not_on_evidence(pairs: int, outcome: str) -> None:
    """Evidence far past 2/alpha after a few pairs: the verdict still waits for ``min_units`` pairs."""
    quality = CanaryQuality(alpha=0.05, min_units=100)
    quality.add_estimated(np.zeros(pairs), np.ones(pairs))
    assert quality.estimated.harm.log_wealth > math.log(40) and quality.verdict().outcome == outcome
