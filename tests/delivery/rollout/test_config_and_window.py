"""RolloutConfig validation and the per-version window read from real Prometheus text."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from delivery.rollout.config import RolloutConfig
from delivery.rollout.metrics_window import CHALLENGER_ROLES, CHAMPION_ROLES, Snapshot, ks_distance, quantile
from serving.metrics import ServingMetrics


def test_stages_list_shadow_then_each_step() -> None:
    assert RolloutConfig().stages == ("shadow", "5", "25", "50", "100")
    assert RolloutConfig(shadow=False, canary_steps=(10, 100)).stages == ("10", "100")


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ((), "canary_steps is empty"),
        ((5, 50), r"must end at 100"),
        ((50, 25, 100), "must increase strictly"),
        ((0, 100), r"within 1\.\.100"),
        ((5, 101), r"within 1\.\.100"),
    ],
)
def test_bad_canary_steps_are_refused_with_the_fix(steps: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        RolloutConfig(canary_steps=steps)


def test_unknown_setting_and_out_of_range_threshold_are_refused() -> None:
    with pytest.raises(ValidationError, match="bake_interval"):
        RolloutConfig(bake_interval=3)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="max_disagreement"):
        RolloutConfig(max_disagreement=1.5)


def scrape(metrics: ServingMetrics) -> Snapshot:
    return Snapshot.parse(metrics.render().decode(), "m")


def test_a_window_is_the_difference_of_two_scrapes_per_version_and_role() -> None:
    metrics = ServingMetrics()
    metrics.scored("m", "1", "champion", 0.001, np.array([0.1]))
    metrics.scored("other", "2", "challenger", 0.001, np.array([0.1]))  # another model: ignored
    before = scrape(metrics)
    for _ in range(9):
        metrics.scored("m", "1", "champion", 0.0004, np.array([0.2, 0.3]))
    metrics.scored("m", "2", "challenger", 0.004, np.array([0.9]))
    metrics.scored("m", "2", "challenger", 0.0, None)
    metrics.scored("m", "2", "shadow", 0.002, np.array([0.8]))
    metrics.compared("m", "2", agree=3, disagree=1)
    window = scrape(metrics).minus(before)

    champion = window.window("1", CHAMPION_ROLES)
    assert (champion.ok, champion.errors) == (9, 0)  # the request before the first scrape is not in it
    assert champion.score_buckets[-1][1] == 18  # two rows per request
    assert 0.00025 < champion.p99_s <= 0.0005
    challenger = window.window("2", CHALLENGER_ROLES)
    assert (challenger.ok, challenger.errors, challenger.scored) == (2, 1, 3)
    assert challenger.error_rate == pytest.approx(1 / 3)
    assert (challenger.agree, challenger.disagree, challenger.disagreement) == (3, 1, 0.25)
    assert window.window("2", ("challenger",)).ok == 1
    assert window.window("3", CHALLENGER_ROLES).scored == 0


def test_a_restarted_server_counts_from_zero() -> None:
    old, new = ServingMetrics(), ServingMetrics()
    for _ in range(5):
        old.scored("m", "1", "champion", 0.001, np.array([0.5]))
    new.scored("m", "1", "champion", 0.001, np.array([0.5]))
    assert scrape(new).minus(scrape(old)).window("1", CHAMPION_ROLES).ok == 1


def test_quantile_interpolates_inside_the_bucket_like_promql() -> None:
    buckets = ((0.001, 50.0), (0.002, 100.0), (math.inf, 100.0))
    assert quantile(buckets, 0.5) == pytest.approx(0.001)
    assert quantile(buckets, 0.99) == pytest.approx(0.00198)
    assert quantile(((0.001, 0.0), (math.inf, 10.0)), 0.99) == 0.001  # +Inf: the largest finite bound
    assert math.isnan(quantile(((0.001, 0.0), (math.inf, 0.0)), 0.99))


def test_ks_distance_between_cumulative_histograms() -> None:
    a = ((0.5, 10.0), (1.0, 10.0), (math.inf, 10.0))
    b = ((0.5, 0.0), (1.0, 10.0), (math.inf, 10.0))
    assert ks_distance(a, a) == 0.0
    assert ks_distance(a, b) == 1.0
    assert ks_distance(a, ((0.5, 5.0), (1.0, 10.0), (math.inf, 10.0))) == 0.5
    assert math.isnan(ks_distance(a, ()))
