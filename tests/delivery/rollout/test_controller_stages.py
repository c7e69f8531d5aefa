"""The rollout state machine at its edges, in-process (mutation testing): how a rollout moves through its
stages. Start and resume (the stage applied, recorded and saved), and each tick's outcome: a pass that
needs ``intervals_per_step`` before the next stage, promotion after the last, waiting on too little
traffic, and the failures that roll back. What an interval reads and what decides besides the gates are in
test_controller_intervals.py.

Each test drives intervals by adding requests to the counters of a real ServingMetrics
(controller_doubles.py), so every verdict is the analysis's own, not a stub's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from delivery.rollout.controller import INTERVAL, PROMOTED, ROLLED_BACK, STEP
from tests.delivery.rollout.controller_doubles import CONFIG, NAME, rollout

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
