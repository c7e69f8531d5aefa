"""One interval's figures per version, from two scrapes of the server's Prometheus metrics.

The server counts what every version scored (:class:`serving.metrics.ServingMetrics`:
requests by role and outcome, scoring-latency and score histograms, shadow agreement).
Counters only grow, so an interval is the difference of two scrapes; champion and
challenger are read from the same two scrapes, so they are judged over the same window.
The same text comes from a local server or a KServe predictor running this server.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

SCORED = "mlops_serving_scored_requests_total"
LATENCY = "mlops_serving_scoring_latency_seconds_bucket"
SCORES = "mlops_serving_scores_bucket"
SHADOW_ROWS = "mlops_serving_shadow_rows_total"
_KEPT = frozenset({SCORED, LATENCY, SCORES, SHADOW_ROWS})
CHALLENGER_ROLES = ("challenger", "shadow")
CHAMPION_ROLES = ("champion",)

Key = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class Snapshot:
    """The rollout counters of one model at one scrape: (sample name, labels without model) → value."""

    values: dict[Key, float]

    @classmethod
    def parse(cls, text: str, model: str) -> Snapshot:
        from prometheus_client.parser import text_string_to_metric_families

        values: dict[Key, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in _KEPT and sample.labels.get("model") == model:
                    labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "model"))
                    values[(sample.name, labels)] = sample.value
        return cls(values)

    def minus(self, earlier: Snapshot) -> Snapshot:
        """What happened between ``earlier`` and this scrape (a restarted server counts from zero)."""
        diff = {}
        for key, value in self.values.items():
            before = earlier.values.get(key, 0.0)
            diff[key] = value - before if value >= before else value
        return Snapshot(diff)

    def window(self, version: str, roles: Iterable[str]) -> VersionWindow:
        """``version``'s figures in ``roles`` (e.g. challenger and shadow)."""
        roles = tuple(roles)
        ok = errors = agree = disagree = 0.0
        latency: dict[float, float] = {}
        scores: dict[float, float] = {}
        for (name, labels), value in self.values.items():
            label = dict(labels)
            if label.get("version") != version:
                continue
            if name == SHADOW_ROWS and "shadow" in roles:
                if label["agreement"] == "agree":
                    agree += value
                else:
                    disagree += value
            elif label.get("role") not in roles:
                continue
            elif name == SCORED:
                if label["outcome"] == "ok":
                    ok += value
                else:
                    errors += value
            elif name in (LATENCY, SCORES):
                buckets = latency if name == LATENCY else scores
                bound = float(label["le"])
                buckets[bound] = buckets.get(bound, 0.0) + value
        return VersionWindow(
            version,
            int(ok),
            int(errors),
            tuple(sorted(latency.items())),
            tuple(sorted(scores.items())),
            int(agree),
            int(disagree),
        )


@dataclass(frozen=True)
class VersionWindow:
    """What one version did in one interval."""

    version: str
    ok: int
    """Requests it scored successfully."""
    errors: int
    """Requests it failed to score (raised, or returned a non-finite score)."""
    latency_buckets: tuple[tuple[float, float], ...]
    """Cumulative scoring-latency histogram: (upper bound in seconds, count)."""
    score_buckets: tuple[tuple[float, float], ...]
    """Cumulative histogram of its predicted probabilities: (upper bound, count)."""
    agree: int = 0
    """Shadow rows whose predicted class matched the champion's."""
    disagree: int = 0
    """Shadow rows whose predicted class differed from the champion's."""

    @property
    def scored(self) -> int:
        return self.ok + self.errors

    @property
    def error_rate(self) -> float:
        return self.errors / self.scored if self.scored else 0.0

    @property
    def p99_s(self) -> float:
        return quantile(self.latency_buckets, 0.99)

    @property
    def compared(self) -> int:
        return self.agree + self.disagree

    @property
    def disagreement(self) -> float:
        return self.disagree / self.compared if self.compared else math.nan


def quantile(buckets: tuple[tuple[float, float], ...], q: float) -> float:
    """The ``q`` quantile of a cumulative histogram, interpolated inside its bucket (as PromQL does).

    NaN for an empty histogram; a quantile in the ``+Inf`` bucket is the largest finite bound.
    """
    if not buckets or buckets[-1][1] <= 0:
        return math.nan
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower
            if count == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower


def ks_distance(a: tuple[tuple[float, float], ...], b: tuple[tuple[float, float], ...]) -> float:
    """Largest gap between two cumulative histograms on the same bounds, as CDFs (0 = same, 1 = disjoint)."""
    total_a, total_b = (a[-1][1] if a else 0.0), (b[-1][1] if b else 0.0)
    if total_a <= 0 or total_b <= 0:
        return math.nan
    cdf_b = dict(b)
    return max(abs(count / total_a - cdf_b.get(bound, total_b) / total_b) for bound, count in a)
