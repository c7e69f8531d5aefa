"""The interval analysis: every threshold at, just inside and just outside its edge; too little traffic waits."""

from __future__ import annotations

import math

import pytest

from delivery.rollout.analysis import (
    analyse,
    disagreement,
    error_rate,
    latency,
    score_shift,
    wilson_lower_bound,
)
from delivery.rollout.config import RolloutConfig
from delivery.rollout.metrics_window import VersionWindow

INF = math.inf


def window(
    version: str,
    ok: int,
    errors: int = 0,
    p99_ms: float = 1.0,
    low_scores: float = 0.5,
    agree: int = 0,
    disagree: int = 0,
) -> VersionWindow:
    """A window whose p99 is exactly ``p99_ms`` and whose scores are ``low_scores`` below 0.5, the rest above."""
    p = p99_ms / 1000
    latency_buckets = ((p, 0.99 * ok), (2 * p, float(ok)), (INF, float(ok)))
    score_buckets = ((0.5, low_scores * ok), (1.0, float(ok)), (INF, float(ok)))
    return VersionWindow(version, ok, errors, latency_buckets, score_buckets, agree, disagree)


CONFIG = RolloutConfig(
    min_requests=100,
    max_error_rate_increase=0.01,
    max_p99_latency_ratio=1.5,
    max_p99_latency_ms=50,
    min_latency_increase_ms=1.0,
    max_score_shift=0.2,
    max_disagreement=0.05,
)


def test_too_little_traffic_waits_and_never_passes() -> None:
    healthy = window("2", 99)
    verdict = analyse(CONFIG, "25", window("1", 1000), healthy)
    assert verdict.outcome == "wait" and verdict.decisions == ()
    assert "scored 99 requests in this interval, fewer than min_requests 100" in verdict.reason
    assert analyse(CONFIG, "25", window("1", 1000), window("2", 100)).outcome == "pass"
    # errors count as traffic: a challenger failing every request is judged, not waited on
    assert analyse(CONFIG, "25", window("1", 1000), window("2", 0, errors=100)).outcome == "fail"


@pytest.mark.parametrize(("errors", "verdict"), [(2, "promote"), (3, "reject")])
def test_error_rate_edge(errors: int, verdict: str) -> None:
    # champion 1 %, allowed +1 %: 2/100 is at the edge, 3/100 outside
    decision = error_rate(CONFIG, window("1", 99, errors=1), window("2", 100 - errors, errors=errors))
    assert decision.decision == verdict
    assert "allowed increase 0.0100" in decision.reason


@pytest.mark.parametrize(
    ("champion_ms", "challenger_ms", "verdict", "why"),
    [
        (4.0, 6.0, "promote", "champion p99 4.00 ms"),  # exactly 1.5×
        (4.0, 6.2, "reject", "more than 1.5× the champion's"),
        (0.2, 1.1, "promote", "champion p99 0.20 ms"),  # 5.5× but only 0.9 ms slower: resolution
        (0.2, 1.3, "reject", "more than 1.5×"),
        (40.0, 50.0, "promote", "champion p99 40.00 ms"),
        (40.0, 50.5, "reject", "exceeds max_p99_latency_ms 50"),
    ],
)
def test_latency_edges(champion_ms: float, challenger_ms: float, verdict: str, why: str) -> None:
    decision = latency(CONFIG, window("1", 100, p99_ms=champion_ms), window("2", 100, p99_ms=challenger_ms))
    assert decision.decision == verdict, decision.reason
    assert why in decision.reason


def test_latency_without_champion_traffic_uses_the_absolute_limit_only() -> None:
    idle = VersionWindow("1", 0, 0, (), ())
    assert latency(CONFIG, idle, window("2", 100, p99_ms=30)).decision == "promote"
    assert "absolute limit only" in latency(CONFIG, idle, window("2", 100, p99_ms=30)).reason
    assert latency(CONFIG, idle, window("2", 100, p99_ms=60)).decision == "reject"


@pytest.mark.parametrize(("low", "verdict"), [(0.3, "promote"), (0.29, "reject")])
def test_score_shift_edge(low: float, verdict: str) -> None:
    # champion: half its scores below 0.5; challenger: `low` of them → KS distance 0.5 - low.
    # 10 000 rows each: the critical value (~0.023) is far below max_score_shift.
    decision = score_shift(CONFIG, window("1", 10_000, low_scores=0.5), window("2", 10_000, low_scores=low))
    assert decision.decision == verdict
    assert decision.metrics["score_ks"] == pytest.approx(0.5 - low)
    assert "limit 0.200" in decision.reason


@pytest.mark.parametrize(("low", "verdict"), [(0.14, "promote"), (0.13, "reject")])
def test_score_shift_on_few_rows_is_held_to_the_critical_value(low: float, verdict: str) -> None:
    # 20 challenger rows vs 1000: critical value sqrt(ln(200)/2)·sqrt(1020/20000) ≈ 0.368 at alpha 0.01
    decision = score_shift(CONFIG, window("1", 1000, low_scores=0.5), window("2", 20, low_scores=low))
    assert decision.metrics["score_ks_critical"] == pytest.approx(0.3678, abs=1e-3)
    assert decision.decision == verdict, decision.reason


@pytest.mark.parametrize(
    ("disagree", "rows", "verdict"),
    [
        (1600, 10_000, "reject"),  # 16 % of 10 000 rows: lower bound ≈ 0.152 > 0.15
        (1580, 10_000, "promote"),  # 15.8 %: lower bound ≈ 0.1497, within the limit
        (2, 12, "promote"),  # 16.7 % of 12 rows: noise, not evidence
        (30, 100, "reject"),  # 30 % of 100: lower bound ≈ 0.20
    ],
)
def test_disagreement_is_judged_on_its_lower_confidence_bound(disagree: int, rows: int, verdict: str) -> None:
    config = CONFIG.model_copy(update={"max_disagreement": 0.15})
    decision = disagreement(config, window("2", rows, agree=rows - disagree, disagree=disagree))
    assert decision.decision == verdict, decision.reason


@pytest.mark.parametrize(("disagree", "verdict"), [(550, "promote"), (551, "reject")])
def test_disagreement_edge(disagree: int, verdict: str) -> None:
    # 10 000 rows at significance 0.01: the lower bound crosses max_disagreement 0.05 between 550 and 551
    decision = disagreement(CONFIG, window("2", 10_000, agree=10_000 - disagree, disagree=disagree))
    assert decision.decision == verdict, decision.reason
    assert decision.metrics["disagreement_lower_bound"] == pytest.approx(
        wilson_lower_bound(disagree, 10_000, 0.01)
    )


def test_shadow_judges_disagreement_and_canary_steps_do_not() -> None:
    champion, challenger = window("1", 200), window("2", 200, agree=50, disagree=50)
    shadow = analyse(CONFIG, "shadow", champion, challenger)
    assert shadow.outcome == "fail"
    assert [d.gate for d in shadow.decisions] == ["error_rate", "latency", "score_shift", "disagreement"]
    assert (
        "disagreement gate: predicted class differs from the champion's on 0.500 of 100 rows" in shadow.reason
    )
    assert analyse(CONFIG, "50", champion, challenger).outcome == "pass"
    no_rows = analyse(CONFIG, "shadow", champion, window("2", 200))
    assert no_rows.outcome == "fail" and "no shadow row could be compared" in no_rows.reason


def test_a_failing_interval_names_every_failed_check() -> None:
    verdict = analyse(CONFIG, "5", window("1", 500), window("2", 80, errors=20, p99_ms=90))
    assert verdict.outcome == "fail"
    assert "error_rate gate" in verdict.reason and "latency gate" in verdict.reason
    assert verdict.metrics["challenger_error_rate"] == pytest.approx(0.2)
