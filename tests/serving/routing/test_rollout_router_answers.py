"""The rollout router's decisions, pinned at their edges without HTTP or ONNX (mutation testing): which side
answers a request, and what is counted. The champion without a challenger, requests pinned to a version,
the contract a request is parsed against, the canary's share (by key or by draw), a failing canary answered
by the champion, and a shadow scoring a copy (agreement at its own threshold, failures, copies beyond 256
dropped). How a plan is made live is in test_rollout_router_plans.py.

Models are :class:`~serving.runtime.LoadedModel` objects whose session is a stand-in returning
scores chosen by the test, behind real :class:`~serving.backend.ModelBackend` objects and a real
:class:`~serving.metrics.ServingMetrics` (router_doubles.py), so each test reads what a rollout's analysis
would read: which version answered, and what was counted under which version and role.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import numpy as np
import pytest

from serving.backend import ModelBackend
from serving.errors import ModelNotFound, VersionGone
from serving.routing import rollout_router
from serving.routing.rollout_router import TrafficPlan
from serving.runtime import LoadedModel
from tests.serving.routing.router_doubles import Setup, _Request, constant, model, pinned, run, setup


def fails(x: np.ndarray) -> np.ndarray:
    raise RuntimeError("challenger crashed")


# --- select: which side answers -------------------------------------------------------------------


def test_without_a_challenger_the_champion_answers_and_is_counted_as_champion() -> None:
    s = setup()

    async def body() -> None:
        assert await s.answer() == (pytest.approx([0.2] * 3), "1")
        assert await s.answer(pinned("1")) == (pytest.approx([0.2] * 3), "1")
        with pytest.raises(ModelNotFound, match="version '2' is not loaded"):
            s.router.select(pinned("2"))
        with pytest.raises(ModelNotFound, match="model 'other' is not served here"):
            s.router.select(_Request(path_params={"name": "other"}))

    run(body)
    assert s.count("1", "champion", "ok") == 2
    assert s.sample("mlops_serving_scores_count", version="1", role="champion") == 6
    latency = s.sample("mlops_serving_scoring_latency_seconds_sum", version="1", role="champion")
    assert 0 <= latency < 5, latency


def test_a_request_pinned_to_the_champion_is_not_answered_by_a_version_swapped_in_while_it_queued() -> None:
    s = setup(max_batch_size=8, queue_delay_s=0.2)

    async def body() -> None:
        s.router.primary.start()
        pending = asyncio.ensure_future(s.answer(pinned("1")))
        await asyncio.sleep(0.01)  # queued, waiting for its batch to fill
        s.router.primary.holder.swap(model("3", constant(0.6)))
        with pytest.raises(VersionGone, match="version 1 was replaced by 3 while queued"):
            await pending
        await s.router.primary.stop()

    run(body)
    assert s.count("3", "champion", "ok") == 0 and s.count("1", "champion", "ok") == 0


@pytest.mark.parametrize(
    ("plan", "request_", "parsed_as"),
    [
        (TrafficPlan(), _Request(), "1"),
        (TrafficPlan(challenger="2", percent=100), _Request(), "1"),
        (TrafficPlan(challenger="2", shadow=True), _Request(), "1"),
        (TrafficPlan(challenger="2", percent=100), pinned("2"), "2"),
    ],
    ids=["champion", "canary", "shadow", "pinned-challenger"],
)
def test_a_request_is_parsed_against_the_champions_contract_unless_it_names_the_challenger(
    plan: TrafficPlan, request_: _Request, parsed_as: str
) -> None:
    s = setup()

    async def body() -> str:
        await s.router.apply(plan)
        scorer, _ = s.router.select(request_)
        return scorer.holder.current.version

    assert run(body) == parsed_as


def test_a_request_pinned_to_either_version_gets_that_version_whatever_the_split() -> None:
    s = setup()

    async def body() -> None:
        await s.router.apply(TrafficPlan(challenger="2", percent=100))
        assert await s.answer(pinned("1")) == (pytest.approx([0.2] * 3), "1")
        assert await s.answer(pinned("2")) == (pytest.approx([0.8] * 3), "2")
        with pytest.raises(ModelNotFound, match="model 'other' is not served here"):
            s.router.select(pinned("2", name="other"))
        with pytest.raises(ModelNotFound, match="version '3' is not loaded"):
            s.router.select(pinned("3"))
        await s.router.apply(TrafficPlan(challenger="2", shadow=True))
        assert await s.answer(pinned("1")) == (pytest.approx([0.2] * 3), "1")

    run(body)
    assert s.count("1", "champion", "ok") == 2
    # A request pinned to the challenger is its own traffic: not counted as the canary's share.
    assert s.count("2", "challenger", "ok") == 0
    assert s.sample("mlops_serving_shadow_rows_total", version="2", agreement="agree") == 0


def test_a_full_canary_answers_with_the_challenger_and_counts_it_as_challenger() -> None:
    s = setup(models={"2": model("2", lambda x: np.linspace(0.1, 0.9, len(x), dtype=np.float32))})

    async def body() -> None:
        await s.router.apply(TrafficPlan(challenger="2", percent=100))
        y, version = await s.answer()
        assert version == "2"
        np.testing.assert_allclose(y, [0.1, 0.5, 0.9])

    run(body)
    assert s.count("2", "challenger", "ok") == 1 and s.count("1", "champion", "ok") == 0
    assert s.sample("mlops_serving_scores_count", version="2", role="challenger") == 3
    assert s.sample("mlops_serving_scores_sum", version="2", role="challenger") == pytest.approx(1.5)
    latency = s.sample("mlops_serving_scoring_latency_seconds_sum", version="2", role="challenger")
    assert 0 <= latency < 5, latency
    assert s.sample("mlops_serving_scoring_latency_seconds_count", version="2", role="challenger") == 1


@pytest.mark.parametrize(("key", "challenger"), [("k2", True), ("k0", False)], ids=["bucket-7", "bucket-51"])
def test_a_keyed_request_lands_on_the_side_its_key_hashes_to(key: str, challenger: bool) -> None:
    # zlib.crc32(b"k2") % 100 == 7 and zlib.crc32(b"k0") % 100 == 51: inside and outside a 10 % canary.
    s = setup()

    async def body() -> list[str]:
        await s.router.apply(TrafficPlan(challenger="2", percent=10))
        return [(await s.answer(_Request(headers={"x-request-key": key})))[1] for _ in range(20)]

    assert set(run(body)) == {"2" if challenger else "1"}


def test_a_zero_percent_plan_with_a_challenger_named_routes_nothing_to_it() -> None:
    s = setup()

    async def body() -> set[str]:
        await s.router.apply(TrafficPlan(challenger="2", percent=0))
        return {(await s.answer())[1] for _ in range(50)}

    assert run(body) == {"1"}
    assert s.loads == []


# --- canary fallback -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "score",
    [fails, constant(float("nan")), lambda x: np.array([0.4, np.inf, 0.6][: len(x)], dtype=np.float32)],
    ids=["raises", "all-nan", "one-infinite"],
)
def test_a_failing_canary_is_answered_by_the_champion_and_counted_against_the_challenger(
    score: Callable[[np.ndarray], np.ndarray], caplog: pytest.LogCaptureFixture
) -> None:
    s = setup(models={"2": model("2", score)})

    async def body() -> list[tuple[np.ndarray, str]]:
        await s.router.apply(TrafficPlan(challenger="2", percent=100))
        return [await s.answer() for _ in range(3)]

    with caplog.at_level(logging.WARNING, logger="serving.routing"):
        answers = run(body)
    assert [version for _, version in answers] == ["1", "1", "1"]
    for y, _ in answers:
        np.testing.assert_allclose(y, [0.2] * 3)
    assert s.count("2", "challenger", "error") == 3 and s.count("2", "challenger", "ok") == 0
    assert s.count("1", "champion", "ok") == 3
    assert s.sample("mlops_serving_scores_count", version="2", role="challenger") == 0
    warnings = [r.getMessage() for r in caplog.records if "challenger failed" in r.getMessage()]
    assert len(warnings) == 1, warnings
    cause = "challenger crashed" if score is fails else "the challenger returned a non-finite score"
    assert warnings == [f"challenger failed, the champion answered (counted, logged once): {cause}"]


def test_a_champion_failing_is_counted_under_its_version_and_reaches_the_caller() -> None:
    s = setup(champion=model("1", fails))

    async def body() -> None:
        with pytest.raises(RuntimeError, match="challenger crashed"):
            await s.answer()

    run(body)
    assert s.count("1", "champion", "error") == 1 and s.count("1", "champion", "ok") == 0
    assert s.sample("mlops_serving_scoring_latency_seconds_count", version="1", role="champion") == 0


# --- shadow ----------------------------------------------------------------------------------------


async def _settle(s: Setup) -> None:
    """Wait (at most 5 s) until every shadow copy has been scored and forgotten."""
    mirror = s.router._live.mirror if s.router._live else None
    deadline = time.monotonic() + 5
    while mirror is not None and mirror.pending:
        assert time.monotonic() < deadline, f"{len(mirror.pending)} shadow copies still pending"
        await asyncio.sleep(0.001)


def test_a_shadow_scores_a_copy_and_counts_agreement_at_its_own_threshold() -> None:
    champion = np.array([0.10, 0.29, 0.30, 0.31, 0.50, 0.90, 0.95], dtype=np.float32)
    shadow = np.array([0.10, 0.30, 0.29, 0.31, 0.60, 0.20, 0.99], dtype=np.float32)
    x = np.zeros((len(champion), 3), dtype=np.float32)
    s = setup(models={"2": model("2", lambda _: shadow)}, champion=model("1", lambda _: champion))

    async def body() -> tuple[np.ndarray, str]:
        await s.router.apply(TrafficPlan(challenger="2", shadow=True, agreement_threshold=0.3))
        answer = await s.answer(x=x)
        await _settle(s)
        return answer

    y, version = run(body)
    assert version == "1"
    np.testing.assert_allclose(y, champion)
    # At 0.3: rows 1 (0.29 vs 0.30), 2 (0.30 vs 0.29) and 5 (0.90 vs 0.20) change class; the other four agree.
    assert s.sample("mlops_serving_shadow_rows_total", version="2", agreement="disagree") == 3
    assert s.sample("mlops_serving_shadow_rows_total", version="2", agreement="agree") == 4
    assert s.count("2", "shadow", "ok") == 1 and s.count("1", "champion", "ok") == 1
    assert s.count("2", "challenger", "ok") == 0
    assert s.sample("mlops_serving_scores_sum", version="2", role="shadow") == pytest.approx(shadow.sum())
    latency = s.sample("mlops_serving_scoring_latency_seconds_sum", version="2", role="shadow")
    assert 0 <= latency < 5, latency


@pytest.mark.parametrize(
    "score", [fails, lambda x: np.array([0.4, np.nan, 0.6], dtype=np.float32)], ids=["raises", "one-nan"]
)
def test_a_failing_shadow_never_touches_the_answer_and_is_counted_as_an_error(
    score: Callable[[np.ndarray], np.ndarray],
) -> None:
    s = setup(models={"2": model("2", score)})

    async def body() -> tuple[np.ndarray, str]:
        await s.router.apply(TrafficPlan(challenger="2", shadow=True))
        answer = await s.answer()
        await _settle(s)
        return answer

    y, version = run(body)
    assert version == "1"
    np.testing.assert_allclose(y, [0.2] * 3)
    assert s.count("2", "shadow", "error") == 1 and s.count("2", "shadow", "ok") == 0
    assert s.sample("mlops_serving_shadow_rows_total", version="2", agreement="agree") == 0
    assert s.sample("mlops_serving_shadow_rows_total", version="2", agreement="disagree") == 0


def test_shadow_copies_beyond_256_pending_are_dropped_and_counted_never_queued() -> None:
    release = asyncio.Event()

    class _Blocking(ModelBackend):
        async def predict(self, x: np.ndarray, version: str | None) -> tuple[np.ndarray, LoadedModel]:
            await release.wait()
            return await super().predict(x, version)

    s = setup()

    async def body() -> tuple[int, float, float, int]:
        await s.router.apply(TrafficPlan(challenger="2", shadow=True))
        live = s.router._live
        assert live is not None
        held = live.backend
        live.mirror.challenger = _Blocking(held.holder, 1, 0.0, False, held.on_batch)
        for _ in range(256):
            assert (await s.answer())[1] == "1"
        at_limit = len(live.mirror.pending)
        dropped_at_256 = s.sample("mlops_serving_errors_total", version="2", reason="shadow_dropped")
        assert (await s.answer())[1] == "1"  # the 257th is answered, its copy dropped
        dropped = s.sample("mlops_serving_errors_total", version="2", reason="shadow_dropped")
        release.set()
        await _settle(s)
        await s.answer()  # room again once the copies are scored
        await _settle(s)
        return at_limit, dropped_at_256, dropped, len(live.mirror.pending)

    at_limit, dropped_at_256, dropped, pending_after = run(body)
    assert (at_limit, dropped_at_256, dropped, pending_after) == (256, 0, 1, 0)
    assert s.count("2", "shadow", "ok") == 257
    assert s.count("1", "champion", "ok") == 258


@pytest.mark.parametrize(
    ("draw", "challenger"), [(0.2499, True), (0.25, False), (0.0, True), (0.9999, False)]
)
def test_an_unkeyed_request_goes_to_the_challenger_when_its_draw_is_under_the_share(
    draw: float, challenger: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The random split at its edge: a 25 % canary takes draws in [0, 0.25), exactly a quarter of [0, 1).
    monkeypatch.setattr(rollout_router.random, "random", lambda: draw)
    assert rollout_router._to_challenger(_Request(), 25) is challenger
