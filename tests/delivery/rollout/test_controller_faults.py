"""The rollout controller at its waiting edge, and killed mid-canary (SIGKILL) then resumed from its saved state.

Real parts: a live `mlops serve`, the demo registry, `mlops rollout start/resume` as subprocesses.
What was lost when the controller was killed: nothing but the interval in flight (its verdict was
never saved); the traffic stayed split until `resume` took over, and a second `start` is refused
so nobody replaces a running rollout by accident.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from delivery.rollout.history import history
from delivery.rollout.state import StateStore
from mlops.vocabulary import CHAMPION
from tests.delivery.rollout.test_local_rollout import FAST, controller, pair, server_flags
from tests.support.serving import DemoStore, clean_env, running_server, train_onnx

pytestmark = pytest.mark.slow


def test_waiting_rollback_fires_exactly_at_max_waiting_intervals(store: DemoStore, tmp_path: Path) -> None:
    name = "rollout-wait-edge"
    champion, challenger = pair(store, name, train_onnx(tmp_path / "wait", store.holdout, seed=2))
    config = FAST.model_copy(update={"shadow": False, "canary_steps": (100,), "max_waiting_intervals": 3})
    with running_server(store, *server_flags(name)) as server:
        rollout = controller(store, server.url, name)
        state = rollout.start(config)
        for interval in (1, 2):  # just inside the limit: still waiting
            state = rollout.tick(state)
            assert (state.phase, state.waiting) == ("running", interval), state.reason
        state = rollout.tick(state)  # at the limit: rolled back, not one interval later
        assert state.phase == "rolled_back" and state.waiting == 3
        assert state.reason.startswith("3 intervals in a row with too little traffic")
        assert rollout.target.current().percent(challenger) == 0
    assert str(store.tracking.version_by_alias(name, CHAMPION).version) == champion


def _rollout(store: DemoStore, action: str, name: str, url: str, *flags: str) -> list[str]:
    return [
        sys.executable, "-m", "cli.main", "--workspace", str(store.workspace.root),
        "rollout", action, "--model-name", name, "--server-url", url, *flags,
    ]  # fmt: skip


def test_controller_killed_mid_canary_resumes_from_its_saved_state(store: DemoStore, tmp_path: Path) -> None:
    name = "rollout-killed"
    champion, challenger = pair(store, name, train_onnx(tmp_path / "killed", store.holdout, seed=2))
    replay = tmp_path / "replay.csv"
    store.holdout.drop(columns=["default"]).head(300).to_csv(replay, index=False)
    settings = [
        "--no-shadow", "--canary-steps", "10,50,100", "--intervals-per-step", "2", "--bake-interval-s", "0.5",
        "--min-requests", "10", "--max-disagreement", "0.15", "--max-score-shift", "0.25",
        "--max-p99-latency-ratio", "3.0", "--min-latency-increase-ms", "20",
    ]  # fmt: skip
    states = StateStore(store.workspace.root)
    with running_server(store, *server_flags(name)) as server:
        log = (tmp_path / "controller.log").open("w")
        first = subprocess.Popen(
            _rollout(store, "start", name, server.url, "--replay", str(replay), *settings),
            stdout=log, stderr=subprocess.STDOUT, env=clean_env(),
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while not (states.path(name).is_file() and states.load(name).intervals >= 1):
            assert first.poll() is None, (tmp_path / "controller.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "controller.log").read_text()
            time.sleep(0.02)
        os.kill(first.pid, signal.SIGKILL)
        assert first.wait(timeout=30) == -signal.SIGKILL
        saved = states.load(name)
        assert saved.phase == "running" and saved.stage_name in {"10", "50"}, saved
        target = controller(store, server.url, name).target
        assert target.current().percent(challenger) == int(saved.stage_name)  # split, nobody watching

        again = subprocess.run(
            _rollout(store, "start", name, server.url, *settings),
            capture_output=True, text=True, env=clean_env(), timeout=120,
        )  # fmt: skip
        assert again.returncode == 2, again.stdout + again.stderr
        assert f"still running at stage {saved.stage_name}" in again.stderr
        assert f"mlops rollout resume --model-name {name}" in again.stderr
        assert states.load(name) == saved  # the refusal changed nothing

        resumed = subprocess.run(
            _rollout(store, "resume", name, server.url, "--replay", str(replay)),
            capture_output=True, text=True, env=clean_env(), timeout=300,
        )  # fmt: skip
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        final = states.load(name)
        assert final.phase == "promoted" and final.intervals > saved.intervals
        assert final.started_at == saved.started_at  # the same rollout, not a new one
        assert target.current().percent(challenger) == 100
    assert str(store.tracking.version_by_alias(name, CHAMPION).version) == challenger
    steps = [row for row in history(name, store.workspace.root) if row.action == "step"]
    assert [row.stage for row in steps].count(saved.stage_name) == 2  # entered, then re-applied on resume
    assert champion != challenger


def test_resume_of_an_ended_rollout_is_refused(store: DemoStore, tmp_path: Path) -> None:
    name = "rollout-ended"
    pair(store, name, train_onnx(tmp_path / "ended", store.holdout, seed=3))
    with running_server(store, *server_flags(name)) as server:
        rollout = controller(store, server.url, name)
        state = rollout.rollback(rollout.start(FAST), "operator")
        with pytest.raises(ValueError, match=r"already ended \(rolled_back: operator\); nothing to resume"):
            rollout.resume(state)
