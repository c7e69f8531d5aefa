"""One analysis interval: the challenger against the champion over the same window.

Each check returns an :class:`mlops.gates.Decision` (the platform's one decision
type); the interval passes when every check promotes. Too little challenger traffic
is neither a pass nor a failure: the interval *waits* — a rollout never advances on
evidence it does not have. Checks:

- ``error_rate``: the challenger's error rate may exceed the champion's by at most
  ``max_error_rate_increase``;
- ``latency``: the challenger's p99 scoring latency stays under ``max_p99_latency_ms``
  and within ``max_p99_latency_ratio`` of the champion's (differences under
  ``min_latency_increase_ms`` are histogram resolution and never fail);
- ``score_shift``: the Kolmogorov–Smirnov distance between the two score distributions
  stays within ``max_score_shift`` — or within the test's critical value at
  ``significance`` for the two sample sizes, when that is larger (a 5 % step gives the
  challenger few rows, and their histogram is noisy);
- ``disagreement`` (shadow stage): the share of rows on which the two predicted classes
  differ stays within ``max_disagreement`` — judged on its Wilson lower confidence bound at
  ``significance``, so 2 disagreements in 12 rows are not evidence against the challenger.

- ``quality`` (when the rollout has a quality feed): the verdict of the always-valid
  sequential test of :mod:`delivery.rollout.sequential`, whose evidence accumulates over
  the whole rollout. Its rollback is *final*: the rollout ends at once (even in an interval
  with too little traffic, the test's evidence being the rollout's, not the interval's);
  its promotion is final when every operational check of the interval passes too.

A check without a champion figure to compare with (the 100 % step sends the champion
nothing) compares against the absolute limits only and says so in its reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Literal

from delivery.rollout.config import SHADOW, RolloutConfig
from delivery.rollout.metrics_window import VersionWindow, ks_distance
from delivery.rollout.sequential import QualityVerdict
from mlops.gates import PROMOTE, REJECT, Decision, combine

Outcome = Literal["pass", "fail", "wait"]
Final = Literal["", "promote", "rollback"]


@dataclass(frozen=True)
class IntervalVerdict:
    """The outcome of one interval, why, and each check's decision."""

    outcome: Outcome
    reason: str
    decisions: tuple[Decision, ...] = ()
    metrics: dict[str, float] = field(default_factory=dict)
    final: Final = ""
    """``promote`` or ``rollback`` when the quality test decided the rollout now; empty otherwise."""


def request_figures(champion: VersionWindow, challenger: VersionWindow) -> dict[str, float]:
    """What every interval reports of both versions, judged or not: requests, error rates, p99 in ms."""
    return {
        "challenger_requests": float(challenger.scored),
        "champion_requests": float(champion.scored),
        "challenger_error_rate": challenger.error_rate,
        "champion_error_rate": champion.error_rate,
        "challenger_p99_ms": challenger.p99_s * 1000,
        "champion_p99_ms": champion.p99_s * 1000,
    }


def analyse(
    config: RolloutConfig,
    stage: str,
    champion: VersionWindow,
    challenger: VersionWindow,
    quality: QualityVerdict | None = None,
) -> IntervalVerdict:
    """Judge one interval of stage ``stage`` (``shadow`` or a canary percentage), and the quality verdict."""
    figures = request_figures(champion, challenger)
    if quality is not None:
        figures.update(quality.figures)
    if quality is not None and quality.outcome == "rollback":
        check = quality_check(quality)
        return IntervalVerdict("fail", check.reason, (check,), figures, final="rollback")
    if challenger.scored < config.min_requests:
        return IntervalVerdict(
            "wait",
            f"the challenger (version {challenger.version}) scored {challenger.scored} requests in this interval, "
            f"fewer than min_requests {config.min_requests}; waiting for more traffic",
            (),
            figures,
        )
    decisions = [
        error_rate(config, champion, challenger),
        latency(config, champion, challenger),
        score_shift(config, champion, challenger),
    ]
    if stage == SHADOW:
        decisions.append(disagreement(config, challenger))
    if quality is not None:
        decisions.append(quality_check(quality))
    for decision in decisions:
        figures.update(decision.metrics)
    overall = combine(decisions)
    final: Final = (
        "promote" if overall.promote and quality is not None and quality.outcome == "promote" else ""
    )
    return IntervalVerdict(
        "pass" if overall.promote else "fail", overall.reason, tuple(decisions), figures, final=final
    )


def quality_check(quality: QualityVerdict) -> Decision:
    """The quality test as a check: only a rollback verdict rejects; not decided yet passes the interval."""
    verdict = REJECT if quality.outcome == "rollback" else PROMOTE
    return Decision("quality", verdict, quality.reason, dict(quality.figures))


def error_rate(config: RolloutConfig, champion: VersionWindow, challenger: VersionWindow) -> Decision:
    limit = champion.error_rate + config.max_error_rate_increase
    figures = {"challenger_error_rate": challenger.error_rate, "champion_error_rate": champion.error_rate}
    text = (
        f"challenger error rate {challenger.error_rate:.4f} ({challenger.errors}/{challenger.scored}) vs champion "
        f"{champion.error_rate:.4f} ({champion.errors}/{champion.scored}), allowed increase "
        f"{config.max_error_rate_increase:.4f}"
    )
    return Decision("error_rate", PROMOTE if challenger.error_rate <= limit else REJECT, text, figures)


def latency(config: RolloutConfig, champion: VersionWindow, challenger: VersionWindow) -> Decision:
    ours, theirs = challenger.p99_s * 1000, champion.p99_s * 1000
    figures = {"challenger_p99_ms": ours, "champion_p99_ms": theirs}
    if math.isnan(ours):
        return Decision(
            "latency", REJECT, "the challenger answered no request successfully: no latency", figures
        )
    failures = []
    if ours > config.max_p99_latency_ms:
        failures.append(
            f"challenger p99 {ours:.2f} ms exceeds max_p99_latency_ms {config.max_p99_latency_ms:g}"
        )
    if math.isnan(theirs):
        versus = "champion scored nothing in this interval, absolute limit only"
    else:
        versus = f"champion p99 {theirs:.2f} ms"
        too_slow = (
            ours > config.max_p99_latency_ratio * theirs and ours - theirs > config.min_latency_increase_ms
        )
        if too_slow:
            failures.append(
                f"challenger p99 {ours:.2f} ms is more than {config.max_p99_latency_ratio:g}× the champion's "
                f"{theirs:.2f} ms"
            )
    if failures:
        return Decision("latency", REJECT, "; ".join(failures), figures)
    return Decision("latency", PROMOTE, f"challenger p99 {ours:.2f} ms; {versus}", figures)


def score_shift(config: RolloutConfig, champion: VersionWindow, challenger: VersionWindow) -> Decision:
    distance = ks_distance(challenger.score_buckets, champion.score_buckets)
    figures = {"score_ks": distance}
    if math.isnan(distance):
        return Decision(
            "score_shift", PROMOTE, "not compared: the champion scored no rows in this interval", figures
        )
    n, m = challenger.score_buckets[-1][1], champion.score_buckets[-1][1]
    critical = math.sqrt(-math.log(config.significance / 2) / 2) * math.sqrt((n + m) / (n * m))
    figures["score_ks_critical"] = critical
    limit = max(config.max_score_shift, critical)
    verdict = PROMOTE if distance <= limit else REJECT
    text = (
        f"score distribution KS distance {distance:.3f} over {n:.0f} vs {m:.0f} rows, limit {limit:.3f} "
        f"(max_score_shift {config.max_score_shift:g}, critical value {critical:.3f} at alpha "
        f"{config.significance:g})"
    )
    return Decision("score_shift", verdict, text, figures)


def disagreement(config: RolloutConfig, challenger: VersionWindow) -> Decision:
    share = challenger.disagreement
    figures = {"disagreement": share, "compared_rows": float(challenger.compared)}
    if challenger.compared == 0:
        return Decision(
            "disagreement", REJECT, "no shadow row could be compared with the champion's", figures
        )
    lower = wilson_lower_bound(challenger.disagree, challenger.compared, config.significance)
    figures["disagreement_lower_bound"] = lower
    verdict = PROMOTE if lower <= config.max_disagreement else REJECT
    text = (
        f"predicted class differs from the champion's on {share:.3f} of {challenger.compared} rows "
        f"(threshold {config.agreement_threshold:g}; at least {lower:.3f} at significance {config.significance:g}), "
        f"limit max_disagreement {config.max_disagreement:g}"
    )
    return Decision("disagreement", verdict, text, figures)


def wilson_lower_bound(successes: int, trials: int, significance: float) -> float:
    """One-sided lower confidence bound of a proportion (Wilson score interval)."""
    z = NormalDist().inv_cdf(1 - significance)
    p, n = successes / trials, trials
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - margin) / (1 + z * z / n))
