"""The rollout state machine at its edges, in-process (mutation testing): what each interval judges. The
analysis window (only what happened since the last scrape, the champion's own role, the challenger's shadow
too), the quality test's verdicts that end a rollout or let an interval pass, and ``run`` baking each
interval until the rollout ends. How a rollout moves through its stages is in test_controller_stages.py.

Each test drives intervals by adding requests to the counters of a real ServingMetrics
(controller_doubles.py), so every verdict is the analysis's own, not a stub's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from delivery.rollout.controller import INTERVAL
from delivery.rollout.sequential import QualityVerdict
from delivery.rollout.state import RolloutState
from tests.delivery.rollout.controller_doubles import CONFIG, NAME, FakeRegistry, FakeTarget, make, rollout

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
