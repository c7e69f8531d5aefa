"""The rollout state machine at its edges, in-process (mutation testing).

The target is a stand-in whose metrics come from a real :class:`~serving.metrics.ServingMetrics`
(the server's own counters, rendered as the server renders them), the registry records what it is
told, and the audit trail is the real one in a temporary workspace. Each test drives intervals by
adding requests to the counters, so every verdict is the analysis's own, not a stub's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pytest

from delivery.rollout import controller as controller_module
from delivery.rollout.config import RolloutConfig
from delivery.rollout.controller import INTERVAL, PROMOTED, ROLLED_BACK, STEP, RolloutController
from delivery.rollout.sequential import QualityVerdict
from delivery.rollout.state import RolloutState, StateStore
from delivery.targets.base import DeploymentStatus, TrafficShare
from mlops.governance.audit import read_events
from serving.metrics import ServingMetrics

if TYPE_CHECKING:
    from delivery.rollout.registry_writes import RolloutRegistry
    from delivery.targets.base import TrafficTarget

NAME = "credit-default"
CONFIG = RolloutConfig(
    shadow=True,
    canary_steps=(25, 100),
    bake_interval_s=7.5,
    min_requests=20,
    failure_threshold=2,
    max_waiting_intervals=0,
    max_disagreement=0.2,
)


@dataclass
class FakeTarget:
    """Serves ``NAME``; each call is recorded and answered with the status a server would report."""

    metrics: ServingMetrics = field(default_factory=ServingMetrics)
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    stable: str = "1"

    @property
    def model_name(self) -> str:
        return NAME

    def describe(self) -> str:
        return "local http://127.0.0.1:1"

    def shadow(self, version: str, agreement_threshold: float) -> DeploymentStatus:
        self.calls.append(("shadow", version, agreement_threshold))
        return DeploymentStatus(NAME, self.stable, (TrafficShare(self.stable, 100),), shadow=version)

    def set_traffic(self, version: str, percent: int) -> DeploymentStatus:
        self.calls.append(("set_traffic", version, percent))
        shares = (TrafficShare(self.stable, 100 - percent),) + (
            (TrafficShare(version, percent),) if percent else ()
        )
        return DeploymentStatus(NAME, self.stable, shares)

    def deploy(self, version: str) -> DeploymentStatus:
        self.calls.append(("deploy", version))
        return DeploymentStatus(NAME, version, (TrafficShare(version, 100),))

    def metrics_text(self) -> str:
        return self.metrics.render().decode()

    def serve(
        self,
        version: str,
        role: str,
        ok: int,
        errors: int = 0,
        score: float = 0.3,
        agree: int = 0,
        disagree: int = 0,
        model: str = NAME,
    ) -> None:
        for _ in range(ok):
            self.metrics.scored(model, version, role, 0.002, np.array([score]))
        for _ in range(errors):
            self.metrics.scored(model, version, role, 0.0, None)
        self.metrics.compared(model, version, agree, disagree)


@dataclass
class FakeRegistry:
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def pair(self, challenger: str | None = None) -> tuple[str, str]:
        self.calls.append(("pair", str(challenger)))
        return "1", challenger or "2"

    def stage(self, version: str, stage: str) -> None:
        self.calls.append(("stage", version, stage))

    def promoted(self, version: str, reason: str) -> None:
        self.calls.append(("promoted", version, reason))

    def rolled_back(self, version: str, reason: str) -> None:
        self.calls.append(("rolled_back", version, reason))


@dataclass
class Rollout:
    controller: RolloutController
    target: FakeTarget
    registry: FakeRegistry
    store: StateStore
    workspace: Path
    alerts: list[tuple[Any, ...]]

    def events(self, action: str | None = None) -> list[dict[str, Any]]:
        return [
            {"action": e.action, "subject": e.subject, "details": e.details, "links": e.links}
            for e in read_events(workspace_root=self.workspace)
            if action is None or e.action == action
        ]

    def healthy(self, stage: str, requests: int = 30) -> None:
        """One interval's traffic at ``stage`` in which the challenger does as well as the champion."""
        if stage == "shadow":
            self.target.serve("1", "champion", requests)
            self.target.serve("3", "shadow", requests, agree=requests)
        else:
            self.target.serve("1", "champion", requests)
            self.target.serve("3", "challenger", requests)

    def failing(self, requests: int = 30) -> None:
        self.target.serve("1", "champion", requests)
        self.target.serve("3", "challenger", requests // 2, errors=requests // 2)


def make(
    target: FakeTarget, registry: FakeRegistry, root: Path, store: StateStore | None, **kw: Any
) -> RolloutController:
    return RolloutController(
        cast("TrafficTarget", target), cast("RolloutRegistry", registry), root, store, **kw
    )


def rollout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **quality: Any) -> Rollout:
    alerts: list[tuple[Any, ...]] = []

    def send(*args: Any, **kwargs: Any) -> bool:
        alerts.append(args)
        return True

    monkeypatch.setattr(controller_module.alerts, "send", send)
    target, registry, store = FakeTarget(), FakeRegistry(), StateStore(tmp_path)
    return Rollout(
        make(target, registry, tmp_path, store, **quality), target, registry, store, tmp_path, alerts
    )


# --- start and resume -----------------------------------------------------------------------------


def test_start_applies_the_shadow_stage_records_it_and_saves_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = rollout(tmp_path, monkeypatch)
    state = r.controller.start(CONFIG, "3")
    assert (state.model_name, state.champion, state.challenger) == (NAME, "1", "3")
    assert (state.stage, state.stage_name, state.phase, state.target) == (
        0,
        "shadow",
        "running",
        "local http://127.0.0.1:1",
    )
    assert r.target.calls == [("shadow", "3", 0.5)]
    assert r.registry.calls == [("pair", "3"), ("stage", "3", "shadow")]
    assert r.events() == [
        {
            "action": STEP,
            "subject": f"{NAME}/3",
            "details": {
                "model_name": NAME,
                "champion": "1",
                "challenger": "3",
                "stage": "shadow",
                "traffic": {"1": 100},
                "shadow": "3",
            },
            "links": {"model_version": "3", "deployment": "local http://127.0.0.1:1"},
        }
    ]
    assert r.store.load(NAME) == state


def test_start_without_a_shadow_stage_sends_the_first_canary_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = rollout(tmp_path, monkeypatch)
    config = CONFIG.model_copy(update={"shadow": False, "agreement_threshold": 0.7})
    state = r.controller.start(config)
    assert state.challenger == "2" and state.stage_name == "25"
    assert r.target.calls == [("set_traffic", "2", 25)]
    assert r.registry.calls == [("pair", "None"), ("stage", "2", "25")]
    assert r.events(STEP)[0]["details"]["traffic"] == {"1": 75, "2": 25}
    assert r.events(STEP)[0]["details"]["shadow"] is None


def test_resume_reapplies_the_stage_and_keeps_the_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = rollout(tmp_path, monkeypatch)
    saved = r.controller.start(CONFIG, "3").advance(stage=1, passed=0, failures=1, waiting=2, intervals=5)
    resumed = r.controller.resume(saved)
    assert r.target.calls[-1] == ("set_traffic", "3", 25)
    assert (resumed.stage, resumed.failures, resumed.waiting, resumed.intervals) == (1, 1, 2, 5)
    assert resumed.reason == "resumed at stage 25 from the saved state"
    assert r.events(STEP)[-1]["details"]["stage"] == "25"
    assert r.store.load(NAME) == resumed


@pytest.mark.parametrize("phase", ["promoted", "rolled_back"])
def test_an_ended_rollout_cannot_be_resumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, phase: str
) -> None:
    r = rollout(tmp_path, monkeypatch)
    ended = r.controller.start(CONFIG, "3").advance(phase=phase, reason="because")
    calls = len(r.target.calls)
    with pytest.raises(ValueError) as refused:
        r.controller.resume(ended)
    assert str(refused.value) == (
        f"the rollout of {NAME} version 3 already ended ({phase}: because); nothing to resume"
    )
    assert len(r.target.calls) == calls


# --- tick: pass, wait, fail -----------------------------------------------------------------------


def test_a_stage_needs_intervals_per_step_passes_then_the_next_stage_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = rollout(tmp_path, monkeypatch)
    state = r.controller.start(CONFIG.model_copy(update={"intervals_per_step": 2}), "3")
    r.healthy("shadow")
    state = r.controller.tick(state)
    assert (state.stage, state.passed, state.intervals, state.phase) == (0, 1, 1, "running"), state.reason
    assert r.store.load(NAME) == state
    assert r.target.calls == [("shadow", "3", 0.5)]
    r.healthy("shadow")
    state = r.controller.tick(state)
    assert (state.stage, state.passed, state.intervals) == (1, 0, 2), state.reason
    assert r.target.calls[-1] == ("set_traffic", "3", 25)
    assert r.registry.calls[-1] == ("stage", "3", "25")
    assert r.store.load(NAME) == state
    interval = r.events(INTERVAL)[0]["details"]
    assert interval["outcome"] == "pass" and interval["reason"].startswith("all gates passed: ")
    assert interval["figures"]["challenger_requests"] == 30.0 and interval["figures"]["compared_rows"] == 30.0


def test_passing_the_last_stage_promotes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = rollout(tmp_path, monkeypatch)
    state = r.controller.start(CONFIG, "3")
    for stage in ("shadow", "25", "100"):
        assert state.stage_name == stage and state.phase == "running"
        r.healthy(stage)
        state = r.controller.tick(state)
    assert state.phase == "promoted" and state.intervals == 3
    assert state.reason.startswith("passed every stage (shadow, 25, 100): all gates passed: ")
    assert r.target.calls[-1] == ("deploy", "3")
    assert r.registry.calls[-1] == ("promoted", "3", state.reason)
    promoted = r.events(PROMOTED)
    assert len(promoted) == 1 and promoted[0]["details"] == {
        "model_name": NAME,
        "champion": "1",
        "challenger": "3",
        "reason": state.reason,
        "traffic": {"3": 100},
        "shadow": None,
    }
    assert r.store.load(NAME) == state and r.alerts == []


def test_too_little_traffic_waits_forever_when_max_waiting_intervals_is_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = rollout(tmp_path, monkeypatch)
    state = r.controller.start(CONFIG, "3")
    for waited in range(1, 6):
        r.healthy("shadow", requests=19)  # one short of min_requests
        state = r.controller.tick(state)
        assert (state.phase, state.waiting, state.passed, state.failures) == ("running", waited, 0, 0)
    assert r.store.load(NAME) == state
    assert [e["details"]["outcome"] for e in r.events(INTERVAL)] == ["wait"] * 5


def test_waiting_rolls_back_at_max_waiting_intervals_and_a_judged_interval_resets_the_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = rollout(tmp_path, monkeypatch)
    state = r.controller.start(
        CONFIG.model_copy(update={"max_waiting_intervals": 2, "intervals_per_step": 3}), "3"
    )
    r.healthy("shadow", requests=5)
    state = r.controller.tick(state)
    assert state.waiting == 1
    r.healthy("shadow")
    state = r.controller.tick(state)
    assert (state.waiting, state.passed) == (0, 1)
    r.healthy("shadow", requests=5)
    state = r.controller.tick(state)
    r.failing()  # judged (and failed): the waiting count starts again
    state = r.controller.tick(state)
    assert (state.waiting, state.failures, state.phase) == (0, 1, "running")
    r.healthy("shadow", requests=5)
    state = r.controller.tick(state)
    assert (state.waiting, state.phase) == (1, "running")
    r.healthy("shadow", requests=5)
    state = r.controller.tick(state)
    assert (state.waiting, state.phase) == (2, "rolled_back")
    assert state.reason.startswith(
        "2 intervals in a row with too little traffic: the challenger (version 3) scored"
    )


def test_failures_count_over_the_whole_rollout_and_roll_back_at_the_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = rollout(tmp_path, monkeypatch)
    state = r.controller.start(CONFIG.model_copy(update={"shadow": False, "failure_threshold": 2}), "3")
    r.failing()
    state = r.controller.tick(state)
    assert (state.failures, state.phase, state.passed) == (1, "running", 0)
    assert r.store.load(NAME) == state
    r.healthy("25")
    state = r.controller.tick(state)
    assert (state.stage_name, state.failures) == ("100", 1)  # a pass does not forgive a failure
    r.failing()
    state = r.controller.tick(state)
    assert state.phase == "rolled_back" and state.failures == 2
    assert state.reason.startswith("2 failed intervals (failure_threshold 2) at stage 100: error_rate gate: ")
    assert r.target.calls[-1] == ("set_traffic", "3", 0)
    assert r.registry.calls[-1] == ("rolled_back", "3", state.reason)
    rolled_back = r.events(ROLLED_BACK)
    assert len(rolled_back) == 1 and rolled_back[0]["details"] == {
        "model_name": NAME,
        "champion": "1",
        "challenger": "3",
        "reason": state.reason,
        "traffic": {"1": 100},
        "shadow": None,
    }
    assert r.alerts == [("rollback", f"{NAME}/3", state.reason, {"champion": "1"})]
    assert r.store.load(NAME) == state


# --- the analysis window --------------------------------------------------------------------------


def test_each_interval_counts_only_what_happened_since_the_last_scrape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = rollout(tmp_path, monkeypatch)
    config = CONFIG.model_copy(update={"shadow": False, "intervals_per_step": 3})
    r.target.serve("3", "challenger", 0, errors=500)  # before the rollout: not its evidence
    r.target.serve("1", "champion", 500, model="other-model")
    state = r.controller.start(config, "3")
    r.healthy("25")
    state = r.controller.tick(state)
    assert state.passed == 1, state.reason
    figures = r.events(INTERVAL)[-1]["details"]["figures"]
    assert (figures["challenger_requests"], figures["champion_requests"]) == (30.0, 30.0)
    r.healthy("25", requests=10)  # 10 new requests: not the 40 since the stage began
    state = r.controller.tick(state)
    assert (state.passed, state.waiting) == (1, 1), state.reason
    assert "scored 10 requests in this interval" in state.reason


def test_the_champions_window_is_its_champion_role_and_the_challengers_includes_its_shadow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = rollout(tmp_path, monkeypatch)
    state = r.controller.start(CONFIG, "3")
    r.target.serve("1", "champion", 100)
    r.target.serve("3", "shadow", 100, agree=60, disagree=40)  # 40 % disagree: over max_disagreement 0.2
    r.target.serve("1", "challenger", 0, errors=30)  # the champion version in another role: not counted
    state = r.controller.tick(state)
    assert state.failures == 1 and "disagreement gate" in state.reason, state.reason
    figures = r.events(INTERVAL)[-1]["details"]["figures"]
    assert figures["champion_error_rate"] == 0.0 and figures["compared_rows"] == 100.0
    assert figures["challenger_requests"] == 100.0 and figures["champion_requests"] == 100.0


# --- the quality test -----------------------------------------------------------------------------


def test_a_quality_rollback_ends_the_rollout_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def quality(state: RolloutState) -> QualityVerdict:
        seen.append(state.intervals)
        return QualityVerdict("rollback", "AUC lower by 0.04", {"auc_diff": -0.04})

    r = rollout(tmp_path, monkeypatch, quality=quality)
    state = r.controller.start(CONFIG, "3")
    r.healthy("shadow", requests=3)  # too little traffic: the quality evidence is the rollout's
    state = r.controller.tick(state)
    assert seen == [0]
    assert (state.phase, state.reason, state.failures) == ("rolled_back", "quality: AUC lower by 0.04", 0)
    assert r.registry.calls[-1] == ("rolled_back", "3", "quality: AUC lower by 0.04")
    assert r.events(INTERVAL)[-1]["details"]["figures"]["auc_diff"] == -0.04


def test_a_quality_promotion_promotes_from_the_stage_it_is_reached_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    verdict = QualityVerdict("promote", "AUC not worse", {"auc_diff": 0.01})
    r = rollout(tmp_path, monkeypatch, quality=lambda state: verdict)
    state = r.controller.start(CONFIG.model_copy(update={"shadow": False, "intervals_per_step": 5}), "3")
    r.healthy("25")
    state = r.controller.tick(state)
    assert state.phase == "promoted"
    assert state.reason.startswith("quality shown at stage 25: all gates passed: ")
    assert r.target.calls[-1] == ("deploy", "3")


def test_an_undecided_quality_test_lets_the_interval_count_as_a_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    verdict = QualityVerdict("continue", "not decided", {})
    r = rollout(tmp_path, monkeypatch, quality=lambda state: verdict)
    state = r.controller.start(CONFIG.model_copy(update={"shadow": False, "intervals_per_step": 5}), "3")
    r.healthy("25")
    state = r.controller.tick(state)
    assert (state.phase, state.passed) == ("running", 1)


# --- run ------------------------------------------------------------------------------------------


def test_run_bakes_each_interval_then_ticks_until_the_rollout_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = rollout(tmp_path, monkeypatch)
    slept: list[float] = []
    r.controller.sleep = slept.append
    baked: list[float] = []

    def traffic(seconds: float) -> None:
        baked.append(seconds)
        r.healthy(r.store.load(NAME).stage_name)

    # max_waiting_intervals bounds the rollout should the traffic never come
    state = r.controller.start(CONFIG.model_copy(update={"max_waiting_intervals": 2}), "3")
    done = r.controller.run(state, traffic=traffic)
    assert done.phase == "promoted" and done.intervals == 3
    assert baked == [7.5, 7.5, 7.5] and slept == []
    stalled = make(FakeTarget(), FakeRegistry(), tmp_path, None, sleep=slept.append)
    state = stalled.start(CONFIG.model_copy(update={"max_waiting_intervals": 2}), "3")
    assert stalled.run(state).phase == "rolled_back"
    assert slept == [7.5, 7.5]


def test_a_controller_analysing_a_rollout_it_did_not_start_judges_every_count_so_far(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No stage was entered by this controller, so there is no earlier scrape to subtract: the first
    # analysis reads the counters as they are; the next one only what came after it.
    r = rollout(tmp_path, monkeypatch)
    state = r.controller.start(CONFIG.model_copy(update={"shadow": False}), "3")
    fresh = make(r.target, r.registry, tmp_path, r.store)
    r.healthy("25", requests=40)
    first = fresh.analyse(state)
    assert (first.outcome, first.metrics["challenger_requests"]) == ("pass", 40.0), first.reason
    r.healthy("25", requests=5)
    second = fresh.analyse(state)
    assert (second.outcome, second.metrics["challenger_requests"]) == ("wait", 5.0), second.reason


def test_without_a_store_nothing_is_saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = rollout(tmp_path, monkeypatch)
    unsaved = make(r.target, r.registry, tmp_path, None)
    state = unsaved.start(CONFIG, "3")
    assert state.phase == "running" and not r.store.path(NAME).exists()
