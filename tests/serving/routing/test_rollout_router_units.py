"""The rollout router's decisions, pinned at their edges without HTTP or ONNX (mutation testing).

Models are :class:`~serving.runtime.LoadedModel` objects whose session is a stand-in returning
scores chosen by the test, behind real :class:`~serving.backend.ModelBackend` objects and a real
:class:`~serving.metrics.ServingMetrics`, so each test reads what a rollout's analysis would
read: which version answered, and what was counted under which version and role.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pytest
from pydantic import ValidationError

from mlops.data.features import FeatureSpec
from serving.backend import ModelBackend
from serving.config import ServerConfig
from serving.errors import Conflict, ModelNotFound, VersionGone
from serving.metrics import ServingMetrics
from serving.reload import ModelHolder
from serving.routing import rollout_router
from serving.routing.rollout_router import (
    ContractMismatch,
    RolloutRouter,
    TrafficPlan,
    check_contract,
)
from serving.runtime import LoadedModel

NAME = "credit-default"
SPEC = FeatureSpec(
    numeric=("age", "income"),
    medians=(40.0, 50.0),
    means=(41.0, 52.0),
    stds=(10.0, 20.0),
    categorical=("region",),
    vocabularies=(("north", "south"),),
)
T = TypeVar("T")


class _Session:
    """Stands in for an ONNX Runtime session: ``score(x)`` is the model's answer (it may raise)."""

    def __init__(self, score: Callable[[np.ndarray], np.ndarray]):
        self.score = score
        self.calls = 0

    def run(self, outputs: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.calls += 1
        (x,) = feeds.values()
        return [self.score(x)]


def model(version: str, score: Callable[[np.ndarray], np.ndarray], spec: FeatureSpec = SPEC) -> LoadedModel:
    return LoadedModel(NAME, version, f"sha-{version}", spec, _Session(score), "fp32")


def constant(value: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: np.full(len(x), value, dtype=np.float32)


def fails(x: np.ndarray) -> np.ndarray:
    raise RuntimeError("challenger crashed")


X = np.zeros((3, 3), dtype=np.float32)


@dataclass
class _Request:
    path_params: dict[str, Any] = field(default_factory=lambda: {"name": NAME})
    headers: dict[str, Any] = field(default_factory=dict)


def pinned(version: str, name: str = NAME) -> _Request:
    return _Request(path_params={"name": name, "version": version})


@dataclass
class Setup:
    router: RolloutRouter
    metrics: ServingMetrics
    loads: list[str]
    batches: list[tuple[str, int]]

    def count(self, version: str, role: str, outcome: str) -> float:
        return self.sample("mlops_serving_scored_requests_total", version=version, role=role, outcome=outcome)

    def sample(self, metric: str, **labels: str) -> float:
        value = self.metrics.registry.get_sample_value(metric, {"model": NAME, **labels})
        return 0.0 if value is None else value

    async def answer(self, request: _Request | None = None, x: np.ndarray = X) -> tuple[np.ndarray, str]:
        scorer, version = self.router.select(request or _Request())
        y, used = await scorer.predict(x, version)
        return y, used.version


def setup(
    models: dict[str, LoadedModel] | None = None,
    champion: LoadedModel | None = None,
    with_registry: bool = True,
    max_batch_size: int = 1,
    queue_delay_s: float = 0.001,
) -> Setup:
    metrics = ServingMetrics()
    loads: list[str] = []
    batches: list[tuple[str, int]] = []
    available = {"2": model("2", constant(0.8))} if models is None else models

    def load(version: str) -> LoadedModel:
        loads.append(version)
        if version not in available:
            raise ValueError(f"model {NAME!r} has no version {version!r}")
        return available[version]

    primary = ModelBackend(
        ModelHolder(champion or model("1", constant(0.2))),
        max_batch_size,
        queue_delay_s,
        False,
        lambda used, rows: batches.append((used.version, rows)),
    )
    config = ServerConfig(tracking_uri="sqlite:///unused.db", request_log_uri="")
    router = RolloutRouter(config, primary, metrics, load if with_registry else None)
    return Setup(router, metrics, loads, batches)


def run(body: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(body())


# --- TrafficPlan ---------------------------------------------------------------------------------


def test_the_default_plan_sends_nothing_to_a_challenger() -> None:
    plan = TrafficPlan()
    assert (plan.challenger, plan.percent, plan.shadow, plan.agreement_threshold) == (None, 0, False, 0.5)
    assert not plan.active


@pytest.mark.parametrize(
    ("fields", "active"),
    [
        ({"challenger": "2", "percent": 1}, True),
        ({"challenger": "2", "percent": 100}, True),
        ({"challenger": "2", "shadow": True}, True),
        ({"challenger": "2", "percent": 0}, False),
        ({"challenger": None}, False),
    ],
    ids=["one-percent", "all", "shadow", "named-but-no-traffic", "removed"],
)
def test_a_plan_is_active_only_when_a_named_challenger_gets_traffic_or_a_copy(
    fields: dict[str, Any], active: bool
) -> None:
    assert TrafficPlan(**fields).active is active


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"challenger": "2", "percent": 10, "shadow": True}, "shadow and percent=10 exclude each other"),
        ({"challenger": "2", "percent": 1, "shadow": True}, "shadow and percent=1 exclude each other"),
        ({"percent": 10}, "name the challenger version"),
        ({"shadow": True}, "name the challenger version"),
        ({"challenger": "2", "percent": -1}, "greater than or equal to 0"),
        ({"challenger": "2", "percent": 101}, "less than or equal to 100"),
        ({"challenger": "2", "shadow": True, "agreement_threshold": 0.0}, "greater than 0"),
        ({"challenger": "2", "shadow": True, "agreement_threshold": 1.0}, "less than 1"),
        ({"challenger": "2", "percen": 10}, "Extra inputs are not permitted"),
    ],
)
def test_inconsistent_plans_are_refused_naming_the_fix(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TrafficPlan(**fields)


def test_the_edges_of_each_bound_are_accepted() -> None:
    assert TrafficPlan(challenger="2", percent=0).percent == 0
    assert TrafficPlan(challenger="2", percent=100).percent == 100
    assert TrafficPlan(challenger="2", shadow=True, agreement_threshold=0.01).agreement_threshold == 0.01
    assert TrafficPlan(challenger="2", shadow=True, agreement_threshold=0.99).agreement_threshold == 0.99
    assert TrafficPlan(challenger=None, percent=0, shadow=False).challenger is None


# --- check_contract ------------------------------------------------------------------------------


def _spec(**changes: Any) -> FeatureSpec:
    return SPEC.model_copy(update=changes)


def test_a_challenger_with_its_own_statistics_but_the_same_features_shares_the_traffic() -> None:
    retrained = _spec(medians=(1.0, 2.0), means=(3.0, 4.0), stds=(5.0, 6.0), label="default")
    check_contract(model("1", constant(0.2)), model("2", constant(0.8), retrained))


@pytest.mark.parametrize(
    ("changes", "tail"),
    [
        ({"numeric": ("age", "salary")}, ", differing in ['income', 'salary']"),
        ({"categorical": ("zone",)}, ", differing in ['region', 'zone']"),
        ({"vocabularies": (("north", "south", "east"),)}, ", or different categorical vocabularies"),
        ({"numeric": ("income", "age")}, ", or different categorical vocabularies"),
    ],
    ids=["numeric-renamed", "categorical-renamed", "vocabulary-grown", "reordered"],
)
def test_a_challenger_reading_requests_differently_is_refused_naming_the_difference(
    changes: dict[str, Any], tail: str
) -> None:
    other = _spec(**changes)
    with pytest.raises(ContractMismatch) as refused:
        check_contract(model("1", constant(0.2)), model("7", constant(0.8), other))
    assert str(refused.value) == (
        f"{NAME} version 7 reads requests differently from the champion (version 1): "
        f"features {list(other.names)} vs {list(SPEC.names)}{tail}; a canary needs both versions to accept "
        "the same request. Deploy it instead of rolling it out."
    )


# --- apply: loading, reusing and stopping challengers ------------------------------------------------


def test_apply_loads_the_challenger_once_behind_a_backend_like_the_champions() -> None:
    s = setup(max_batch_size=4)

    async def body() -> None:
        s.router.primary.start()
        assert await s.router.apply(TrafficPlan(challenger="2", percent=10)) == TrafficPlan(
            challenger="2", percent=10
        )
        assert s.router.plan == TrafficPlan(challenger="2", percent=10)
        primary, challenger = s.router.backends
        assert primary is s.router.primary and challenger.holder.current.version == "2"
        assert (challenger.max_batch_size, challenger.max_queue_delay_s, challenger.in_thread) == (
            4,
            0.001,
            False,
        )
        assert challenger.on_batch is primary.on_batch
        assert challenger.batcher is not None, "the challenger's batcher was started"
        assert await s.answer(pinned("2")) == (pytest.approx([0.8] * 3), "2")
        assert ("2", 3) in s.batches
        # Re-weighting the same challenger keeps its backend: no second load, nothing stopped.
        await s.router.apply(TrafficPlan(challenger="2", percent=50))
        assert s.router.backends[1] is challenger and s.loads == ["2"]
        assert s.router.plan.percent == 50
        await s.router.apply(TrafficPlan())
        await s.router.primary.stop()

    run(body)


def _watch_stops(backend: ModelBackend, stopped: list[str]) -> None:
    original = backend.stop

    async def stop() -> None:
        stopped.append(backend.holder.current.version)
        await original()

    backend.stop = stop  # type: ignore[method-assign]


def test_apply_swaps_challengers_and_stops_the_replaced_one_only() -> None:
    s = setup(models={"2": model("2", constant(0.8)), "3": model("3", constant(0.6))})
    stopped: list[str] = []

    async def body() -> None:
        await s.router.apply(TrafficPlan(challenger="2", percent=10))
        _watch_stops(s.router.backends[1], stopped)
        await s.router.apply(TrafficPlan(challenger="2", shadow=True))
        assert stopped == []
        await s.router.apply(TrafficPlan(challenger="3", percent=100))
        assert stopped == ["2"] and s.loads == ["2", "3"]
        assert await s.answer() == (pytest.approx([0.6] * 3), "3")
        _watch_stops(s.router.backends[1], stopped)
        assert await s.router.apply(TrafficPlan(challenger="3", percent=0)) == TrafficPlan()
        assert stopped == ["2", "3"]
        assert s.router.backends == (s.router.primary,) and s.router.plan == TrafficPlan()
        assert await s.answer() == (pytest.approx([0.2] * 3), "1")
        assert await s.router.apply(TrafficPlan()) == TrafficPlan()  # nothing live: nothing to stop

    run(body)


def test_apply_logs_what_it_made_live(caplog: pytest.LogCaptureFixture) -> None:
    s = setup()

    async def body() -> None:
        await s.router.apply(TrafficPlan(challenger="2", percent=10))
        await s.router.apply(TrafficPlan(challenger="2", shadow=True))

    with caplog.at_level(logging.WARNING, logger="serving.routing"):
        run(body)
    assert [r.getMessage() for r in caplog.records] == [
        "rollout: challenger 2 10 %",
        "rollout: challenger 2 shadow",
    ]


@pytest.mark.parametrize(
    ("plan", "with_registry", "message"),
    [
        (TrafficPlan(challenger="1", percent=10), True, "version 1 is already the champion; name another"),
        (
            TrafficPlan(challenger="2", percent=10),
            False,
            "this server was started without a registry; it cannot load a challenger",
        ),
        (
            TrafficPlan(challenger="9", shadow=True),
            True,
            "cannot load challenger version 9: model 'credit-default' has no version '9'",
        ),
        (
            TrafficPlan(challenger="5", percent=10),
            True,
            "cannot load challenger version 5: credit-default version 5 reads requests differently",
        ),
    ],
    ids=["champion", "no-registry", "unknown", "other-contract"],
)
def test_a_plan_that_cannot_be_served_is_a_conflict_and_changes_nothing(
    plan: TrafficPlan, with_registry: bool, message: str
) -> None:
    models = {"2": model("2", constant(0.8)), "5": model("5", constant(0.8), _spec(numeric=("age", "debt")))}
    s = setup(models=models, with_registry=with_registry)

    async def body() -> None:
        with pytest.raises(Conflict) as refused:
            await s.router.apply(plan)
        assert refused.value.message.startswith(message), refused.value.message
        assert s.router.plan == TrafficPlan() and s.router.backends == (s.router.primary,)
        assert await s.answer() == (pytest.approx([0.2] * 3), "1")

    run(body)


def test_a_failed_plan_leaves_the_live_challenger_in_place() -> None:
    s = setup()

    async def body() -> None:
        await s.router.apply(TrafficPlan(challenger="2", percent=100))
        with pytest.raises(Conflict):
            await s.router.apply(TrafficPlan(challenger="9", percent=100))
        assert s.router.plan == TrafficPlan(challenger="2", percent=100)
        assert await s.answer() == (pytest.approx([0.8] * 3), "2")

    run(body)


def test_a_loader_failing_otherwise_than_with_a_bad_version_is_not_hidden() -> None:
    s = setup()

    def broken(version: str) -> LoadedModel:
        raise OSError("registry unreachable")

    s.router.load = broken

    async def body() -> None:
        with pytest.raises(OSError, match="registry unreachable"):
            await s.router.apply(TrafficPlan(challenger="2", percent=10))

    run(body)


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
