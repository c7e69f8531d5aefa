"""The interval analysis beyond its thresholds (mutation testing): the quality verdict's place
in an interval, the figures an interval reports, each check's own wording when it has nothing to
compare, the inclusive edges, and the Wilson bound against an independent implementation."""

from __future__ import annotations

import math

import pytest
from statsmodels.stats.proportion import proportion_confint

from delivery.rollout.analysis import (
    IntervalVerdict,
    analyse,
    disagreement,
    error_rate,
    latency,
    quality_check,
    request_figures,
    score_shift,
    wilson_lower_bound,
)
from delivery.rollout.metrics_window import VersionWindow
from delivery.rollout.sequential import QualityVerdict
from mlops.gates import PROMOTE, REJECT, Decision
from serving.metrics import SCORE_BUCKETS
from tests.delivery.rollout.test_analysis import CONFIG, window

INF = math.inf
ROLLBACK = QualityVerdict(
    "rollback", "challenger AUC below the champion's by more than 0.01", {"auc_diff": -0.04}
)
PROMOTED = QualityVerdict("promote", "challenger AUC at least the champion's", {"auc_diff": 0.02})
UNDECIDED = QualityVerdict("continue", "not decided yet (40 of 100 pairs)", {"auc_pairs": 40.0})


# --- what an interval reports ----------------------------------------------------------------------


def test_a_waiting_interval_still_reports_both_versions_figures() -> None:
    champion, challenger = window("1", 1000, errors=10, p99_ms=4.0), window("2", 40, errors=2, p99_ms=8.0)
    verdict = analyse(CONFIG, "5", champion, challenger)
    assert verdict == IntervalVerdict(
        "wait",
        "the challenger (version 2) scored 42 requests in this interval, fewer than min_requests 100; "
        "waiting for more traffic",
        (),
        {
            "challenger_requests": 42.0,
            "champion_requests": 1010.0,
            "challenger_error_rate": 2 / 42,
            "champion_error_rate": 10 / 1010,
            "challenger_p99_ms": 8.0,
            "champion_p99_ms": 4.0,
        },
    )


def test_a_judged_interval_reports_every_checks_figures_in_milliseconds() -> None:
    champion, challenger = (
        window("1", 400, p99_ms=4.0),
        window("2", 200, errors=1, p99_ms=5.0, agree=150, disagree=3),
    )
    verdict = analyse(CONFIG, "shadow", champion, challenger)
    assert verdict.outcome == "pass" and verdict.final == "", verdict.reason
    assert verdict.metrics["challenger_p99_ms"] == pytest.approx(5.0)
    assert verdict.metrics["champion_p99_ms"] == pytest.approx(4.0)
    assert verdict.metrics["challenger_requests"] == 201.0 and verdict.metrics["champion_requests"] == 400.0
    assert verdict.metrics["challenger_error_rate"] == pytest.approx(1 / 201)
    assert set(verdict.metrics) == {
        *request_figures(champion, challenger),
        "score_ks",
        "score_ks_critical",
        "disagreement",
        "compared_rows",
        "disagreement_lower_bound",
    }
    for decision in verdict.decisions:
        for name, value in decision.metrics.items():
            assert verdict.metrics[name] == value, name
    assert verdict.metrics["compared_rows"] == 153.0 and verdict.metrics["disagreement"] == pytest.approx(
        3 / 153
    )


# --- the quality verdict in an interval ------------------------------------------------------------


def test_a_quality_rollback_ends_the_rollout_even_in_an_interval_with_too_little_traffic() -> None:
    champion, challenger = window("1", 1000), window("2", 3)
    verdict = analyse(CONFIG, "5", champion, challenger, ROLLBACK)
    assert verdict == IntervalVerdict(
        "fail",
        ROLLBACK.reason,
        (Decision("quality", REJECT, ROLLBACK.reason, {"auc_diff": -0.04}),),
        {**request_figures(champion, challenger), "auc_diff": -0.04},
        final="rollback",
    )


def test_a_quality_rollback_wins_over_passing_operational_checks() -> None:
    verdict = analyse(CONFIG, "50", window("1", 1000), window("2", 1000), ROLLBACK)
    assert (verdict.outcome, verdict.final, [d.gate for d in verdict.decisions]) == (
        "fail",
        "rollback",
        ["quality"],
    )


def test_a_quality_promotion_is_final_only_when_the_interval_passes_too() -> None:
    champion = window("1", 1000)
    passing = analyse(CONFIG, "25", champion, window("2", 1000), PROMOTED)
    assert (passing.outcome, passing.final) == ("pass", "promote"), passing.reason
    assert passing.decisions[-1] == Decision("quality", PROMOTE, PROMOTED.reason, {"auc_diff": 0.02})
    assert [d.gate for d in passing.decisions] == ["error_rate", "latency", "score_shift", "quality"]
    assert passing.metrics["auc_diff"] == 0.02
    failing = analyse(CONFIG, "25", champion, window("2", 900, errors=100), PROMOTED)
    assert (failing.outcome, failing.final) == ("fail", ""), failing.reason
    assert "error_rate gate" in failing.reason
    waiting = analyse(CONFIG, "25", champion, window("2", 10), PROMOTED)
    assert (waiting.outcome, waiting.final) == ("wait", "")


@pytest.mark.parametrize("quality", [UNDECIDED, None], ids=["undecided", "no-feed"])
def test_without_a_quality_decision_a_passing_interval_is_not_final(quality: QualityVerdict | None) -> None:
    verdict = analyse(CONFIG, "25", window("1", 1000), window("2", 1000), quality)
    assert (verdict.outcome, verdict.final) == ("pass", "")
    gates = [d.gate for d in verdict.decisions]
    assert gates == ["error_rate", "latency", "score_shift"] + (["quality"] if quality else [])
    if quality is not None:
        assert verdict.decisions[-1] == Decision("quality", PROMOTE, UNDECIDED.reason, {"auc_pairs": 40.0})
        assert verdict.metrics["auc_pairs"] == 40.0


@pytest.mark.parametrize(
    ("quality", "decision"), [(ROLLBACK, REJECT), (PROMOTED, PROMOTE), (UNDECIDED, PROMOTE)]
)
def test_only_a_rollback_verdict_rejects_as_a_check(quality: QualityVerdict, decision: str) -> None:
    check = quality_check(quality)
    assert check == Decision("quality", decision, quality.reason, quality.figures)
    assert check.metrics is not quality.figures  # the interval's figures never alias the test's


# --- each check's own edges and wording ------------------------------------------------------------


def test_error_rate_reports_both_rates() -> None:
    decision = error_rate(CONFIG, window("1", 99, errors=1), window("2", 97, errors=3))
    assert decision.metrics == {"challenger_error_rate": 0.03, "champion_error_rate": 0.01}
    assert decision.reason == (
        "challenger error rate 0.0300 (3/100) vs champion 0.0100 (1/100), allowed increase 0.0100"
    )


def test_a_challenger_without_a_successful_answer_fails_latency_saying_so() -> None:
    champion, failing = window("1", 100, p99_ms=4.0), VersionWindow("2", 0, 50, (), ())
    decision = latency(CONFIG, champion, failing)
    assert (decision.gate, decision.decision) == ("latency", REJECT)
    assert decision.reason == "the challenger answered no request successfully: no latency"
    assert math.isnan(decision.metrics["challenger_p99_ms"]) and decision.metrics["champion_p99_ms"] == 4.0


def test_latency_reasons_name_both_figures_and_every_failure() -> None:
    champion = window("1", 100, p99_ms=4.0)
    ok = latency(CONFIG, champion, window("2", 100, p99_ms=5.0))
    assert ok == Decision(
        "latency",
        PROMOTE,
        "challenger p99 5.00 ms; champion p99 4.00 ms",
        {"challenger_p99_ms": 5.0, "champion_p99_ms": 4.0},
    )
    idle = latency(CONFIG, VersionWindow("1", 0, 0, (), ()), window("2", 100, p99_ms=5.0))
    assert (
        idle.reason == "challenger p99 5.00 ms; champion scored nothing in this interval, absolute limit only"
    )
    both = latency(CONFIG, window("1", 100, p99_ms=30.0), window("2", 100, p99_ms=60.0))
    assert both.decision == REJECT and both.metrics == {"challenger_p99_ms": 60.0, "champion_p99_ms": 30.0}
    assert both.reason == (
        "challenger p99 60.00 ms exceeds max_p99_latency_ms 50; "
        "challenger p99 60.00 ms is more than 1.5× the champion's 30.00 ms"
    )


def test_a_latency_increase_of_exactly_min_latency_increase_ms_is_resolution_not_a_failure() -> None:
    # 1 ms → 2 ms is 2× the champion (over 1.5×) but exactly min_latency_increase_ms slower: not slower.
    champion, challenger = window("1", 100, p99_ms=1.0), window("2", 100, p99_ms=2.0)
    decision = latency(CONFIG, champion, challenger)
    assert decision.metrics == {"challenger_p99_ms": 2.0, "champion_p99_ms": 1.0}
    assert decision.decision == PROMOTE, decision.reason
    slower = latency(CONFIG, champion, window("2", 100, p99_ms=2.1))
    assert slower.decision == REJECT, slower.reason


def _histogram(ok: int, above_095: int) -> tuple[tuple[float, float], ...]:
    """Cumulative score buckets as the server exports them (0.05 … 0.95, +Inf): ``above_095`` rows in +Inf only."""
    below = ok - above_095
    return tuple((bound, float(round(below * bound / 0.95))) for bound in SCORE_BUCKETS) + ((INF, float(ok)),)


def test_score_shift_counts_every_row_including_those_above_the_last_finite_bucket() -> None:
    champion = VersionWindow("1", 1000, 0, (), _histogram(1000, 600))
    challenger = VersionWindow("2", 20, 0, (), _histogram(20, 12))
    decision = score_shift(CONFIG, champion, challenger)
    assert "over 20 vs 1000 rows" in decision.reason, decision.reason
    critical = math.sqrt(-math.log(CONFIG.significance / 2) / 2) * math.sqrt((20 + 1000) / (20 * 1000))
    assert decision.metrics["score_ks_critical"] == pytest.approx(critical)


def test_score_shift_without_champion_rows_is_not_compared_and_passes() -> None:
    decision = score_shift(CONFIG, VersionWindow("1", 0, 0, (), ()), window("2", 100))
    assert (decision.gate, decision.decision) == ("score_shift", PROMOTE)
    assert decision.reason == "not compared: the champion scored no rows in this interval"
    assert list(decision.metrics) == ["score_ks"] and math.isnan(decision.metrics["score_ks"])


def test_disagreement_without_compared_rows_fails_saying_so() -> None:
    decision = disagreement(CONFIG, window("2", 100))
    assert (decision.gate, decision.decision) == ("disagreement", REJECT)
    assert decision.reason == "no shadow row could be compared with the champion's"
    assert decision.metrics["compared_rows"] == 0.0 and math.isnan(decision.metrics["disagreement"])


def test_a_disagreement_lower_bound_exactly_at_the_limit_passes() -> None:
    at_limit = CONFIG.model_copy(
        update={"max_disagreement": wilson_lower_bound(30, 200, CONFIG.significance)}
    )
    decision = disagreement(at_limit, window("2", 200, agree=170, disagree=30))
    assert decision.metrics["disagreement_lower_bound"] == at_limit.max_disagreement
    assert decision.decision == PROMOTE, decision.reason
    assert (
        decision.metrics["disagreement"] == pytest.approx(0.15) and decision.metrics["compared_rows"] == 200.0
    )
    never = CONFIG.model_copy(update={"max_disagreement": 0.0})
    assert disagreement(never, window("2", 200, agree=200)).decision == PROMOTE  # bound 0: at a zero limit
    assert disagreement(never, window("2", 200, agree=199, disagree=1)).decision == REJECT


@pytest.mark.parametrize(
    ("successes", "trials", "significance"),
    [(2, 12, 0.01), (550, 10_000, 0.01), (30, 100, 0.05), (1, 3, 0.2), (9, 10, 0.1), (50, 50, 0.01)],
)
def test_wilson_lower_bound_matches_statsmodels(successes: int, trials: int, significance: float) -> None:
    # A one-sided bound at `significance` is the lower end of the two-sided interval at twice it.
    expected, _ = proportion_confint(successes, trials, alpha=2 * significance, method="wilson")
    assert wilson_lower_bound(successes, trials, significance) == pytest.approx(expected, rel=1e-9)


def test_wilson_lower_bound_of_no_successes_is_zero_not_negative() -> None:
    assert wilson_lower_bound(0, 50, 0.01) == 0.0
