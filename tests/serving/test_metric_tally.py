"""The metric tally (serving/metric_tally.py) gives prometheus_client the figures its own calls would, and when.

The oracle is prometheus_client itself: a twin metric fed with ``observe``/``inc`` one value at a time must
expose exactly the samples the tally's bulk fold produces. Also pinned: a read of the registry folds first
(no figure is ever read stale in one process), the timed fold without any read, the fold at once when no
event loop runs or too much is pending, and exact totals with threads recording while another folds.
"""

from __future__ import annotations

import asyncio
import math
import threading

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram

from serving.metric_tally import FOLD_DELAY_S, MAX_PENDING, MetricTally, add_observations
from serving.metrics import LATENCY_BUCKETS, SCORE_BUCKETS, ServingMetrics


def samples(metric: Counter | Histogram) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The metric's own samples (collected from the metric, not through a registry: no fold runs)."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in metric.collect()
        for s in family.samples
        if not s.name.endswith("_created")
    }


def twins(buckets: tuple[float, ...]) -> tuple[Histogram, Histogram]:
    def make() -> Histogram:
        return Histogram("h", "h", ["k"], buckets=buckets, registry=CollectorRegistry())

    return make(), make()


@pytest.mark.parametrize("buckets", [LATENCY_BUCKETS, SCORE_BUCKETS], ids=["latency", "scores"])
def test_a_bulk_fold_fills_the_buckets_observe_would(buckets: tuple[float, ...]) -> None:
    rng = np.random.default_rng(7)
    edges = np.array(buckets, dtype=np.float64)
    values = np.concatenate(
        [
            edges,  # exactly on each bound: that bound's bucket (observe's amount <= bound)
            np.nextafter(edges, np.inf),  # just above: the next one
            np.nextafter(edges, -np.inf),
            [-1.0, 0.0, edges[-1] * 10, math.inf],  # below every bound, above every finite one
            rng.uniform(0, edges[-1] * 1.2, 500),
            rng.uniform(0, edges[-1] * 1.2, 3).astype(np.float32),  # float32 scores, as the model returns
        ]
    )
    ours, theirs = twins(buckets)
    add_observations(ours.labels("a"), values.astype(np.float64))
    for value in values.tolist():
        theirs.labels("a").observe(value)
    got, want = samples(ours), samples(theirs)
    sums = [key for key in want if key[0] == "h_sum"]
    assert {k: v for k, v in got.items() if k not in sums} == {k: v for k, v in want.items() if k not in sums}
    for key in sums:
        assert got[key] == pytest.approx(want[key], rel=1e-12)


def test_a_nan_falls_in_no_bucket_as_with_observe() -> None:
    ours, theirs = twins((0.5, 1.0))
    add_observations(ours.labels("a"), np.array([np.nan, 0.2]))
    theirs.labels("a").observe(math.nan)
    theirs.labels("a").observe(0.2)
    got, want = samples(ours), samples(theirs)
    key = ("h_sum", (("k", "a"),))
    assert math.isnan(got.pop(key)) and math.isnan(want.pop(key))
    assert got == want


def test_reading_the_registry_folds_first_and_a_loop_folds_within_the_delay() -> None:
    metrics = ServingMetrics()
    labels = {"model": "m", "version": "1", "protocol": "v2", "code": "200"}

    async def scenario() -> tuple[float | None, float | None, float | None]:
        metrics.answered("m", "1", "v2", 200, 0.001)
        metrics.scored("m", "1", "champion", 0.001, np.array([0.3, 0.9], dtype=np.float32))
        pending = samples(metrics.requests).get(
            ("mlops_serving_requests_total", tuple(sorted(labels.items())))
        )
        read = metrics.registry.get_sample_value("mlops_serving_requests_total", labels)
        metrics.answered("m", "1", "v2", 200, 0.002)
        await asyncio.sleep(FOLD_DELAY_S * 3)  # no read: the timed fold
        folded = samples(metrics.requests)[("mlops_serving_requests_total", tuple(sorted(labels.items())))]
        return pending, read, folded

    pending, read, folded = asyncio.run(scenario())
    assert pending is None  # held by the tally, not yet in prometheus_client
    assert read == 1.0  # but a read of the registry sees it
    assert folded == 2.0
    scores = {"model": "m", "version": "1", "role": "champion"}
    assert metrics.registry.get_sample_value("mlops_serving_scores_count", scores) == 2.0
    assert metrics.registry.get_sample_value("mlops_serving_scores_bucket", {**scores, "le": "0.3"}) == 0.0
    assert metrics.registry.get_sample_value("mlops_serving_scores_bucket", {**scores, "le": "0.35"}) == 1.0
    text = metrics.render().decode()
    assert 'mlops_serving_request_latency_seconds_count{model="m",protocol="v2",version="1"} 2.0' in text


def test_without_a_loop_or_with_too_much_pending_the_fold_runs_at_once() -> None:
    counter = Counter("c", "c", ["k"], registry=CollectorRegistry())
    tally = MetricTally()
    tally.count(counter, ("a",))  # no running loop: nothing would run a later fold
    assert samples(counter)[("c_total", (("k", "a"),))] == 1.0

    async def busy() -> float:
        for _ in range(MAX_PENDING):  # never yields to the loop: its timed fold cannot run
            tally.count(counter, ("a",))
        return samples(counter)[("c_total", (("k", "a"),))]

    assert asyncio.run(busy()) == 1.0 + MAX_PENDING


def test_a_tally_that_does_not_hold_hands_each_value_over_as_it_is_recorded() -> None:
    counter = Counter("c", "c", ["k"], registry=CollectorRegistry())
    histogram = Histogram("h", "h", ["k"], buckets=(0.5, 1.0), registry=CollectorRegistry())
    direct = Histogram("d", "d", ["k"], buckets=(0.5, 1.0), registry=CollectorRegistry())
    tally = MetricTally(hold=False)

    async def record() -> tuple[float, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
        tally.count(counter, ("a",), 2.0)  # a loop runs, yet nothing waits for its timed fold
        tally.observe(histogram, ("a",), 0.5)
        tally.observe(histogram, ("a",), np.array([0.7, 3.0, float("nan")]))
        return samples(counter)[("c_total", (("k", "a"),))], samples(histogram)

    counted, observed = asyncio.run(record())
    for value in (0.5, 0.7, 3.0, float("nan")):
        direct.labels("a").observe(value)
    expected = {(name.replace("d_", "h_", 1), labels): v for (name, labels), v in samples(direct).items()}
    assert counted == 2.0

    def without_sum(found: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> dict[object, float]:
        return {k: v for k, v in found.items() if k[0] != "h_sum"}

    assert without_sum(observed) == without_sum(expected)  # the buckets and count observe() fills
    assert math.isnan(observed[("h_sum", (("k", "a"),))]) and math.isnan(expected[("h_sum", (("k", "a"),))])


def test_threads_recording_while_another_folds_lose_nothing() -> None:
    counter = Counter("c", "c", ["k"], registry=CollectorRegistry())
    histogram = Histogram("h", "h", ["k"], buckets=(0.5,), registry=CollectorRegistry())
    tally = MetricTally()
    stop = threading.Event()

    def record() -> None:
        for _ in range(5000):
            tally.count(counter, ("a",))
            tally.observe(histogram, ("a",), 0.25)

    def fold() -> None:
        while not stop.is_set():
            tally.fold()

    folder = threading.Thread(target=fold)
    folder.start()
    writers = [threading.Thread(target=record) for _ in range(4)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    folder.join()
    tally.fold()
    assert samples(counter)[("c_total", (("k", "a"),))] == 20000.0
    assert samples(histogram)[("h_count", (("k", "a"),))] == 20000.0
