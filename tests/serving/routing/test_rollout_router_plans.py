"""The rollout router's decisions, pinned at their edges without HTTP or ONNX (mutation testing): the plan
and how it is made live. A TrafficPlan's defaults and the plans refused, the contract a challenger must
share with the champion, and ``apply``: loading a challenger once behind a backend like the champion's,
swapping and stopping challengers, and refusing (as a conflict that changes nothing) a plan that cannot be
served. Which side answers a request is in test_rollout_router_answers.py.

Models are :class:`~serving.runtime.LoadedModel` objects whose session is a stand-in returning
scores chosen by the test, behind real :class:`~serving.backend.ModelBackend` objects and a real
:class:`~serving.metrics.ServingMetrics` (router_doubles.py), so each test reads what a rollout's analysis
would read: which version answered, and what was counted under which version and role.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import ValidationError

from mlops.data.features import FeatureSpec
from serving.backend import ModelBackend
from serving.errors import Conflict
from serving.routing.rollout_router import ContractMismatch, TrafficPlan, check_contract
from serving.runtime import LoadedModel
from tests.serving.routing.router_doubles import NAME, SPEC, constant, model, pinned, run, setup

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
