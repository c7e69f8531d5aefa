"""The quality verdict inside an interval's analysis, and the controller acting on it on a live server."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from delivery.rollout.analysis import analyse
from delivery.rollout.config import RolloutConfig
from delivery.rollout.controller import RolloutController
from delivery.rollout.metrics_window import VersionWindow
from delivery.rollout.registry_writes import RolloutRegistry
from delivery.rollout.replay import Replayer
from delivery.rollout.sequential import CanaryQuality, QualityVerdict
from delivery.rollout.state import RolloutState, StateStore
from delivery.targets.local import LocalServerTarget
from mlops.governance import audit
from mlops.vocabulary import CHALLENGER, CHAMPION
from tests.support.serving import DemoStore, register, running_server, train_onnx
from tests.support.webhook_receiver import webhook_receiver

INF = math.inf
CONFIG = RolloutConfig(min_requests=100, max_p99_latency_ms=50)


def window(version: str, ok: int, p99_ms: float = 1.0) -> VersionWindow:
    p = p99_ms / 1000
    latency = ((p, 0.99 * ok), (2 * p, float(ok)), (INF, float(ok)))
    scores = ((0.5, 0.5 * ok), (1.0, float(ok)), (INF, float(ok)))
    return VersionWindow(version, ok, 0, latency, scores, 0, 0)


def verdict(outcome: str) -> QualityVerdict:
    return QualityVerdict(outcome, f"quality {outcome}", {"quality_realised_pairs": 500.0})  # type: ignore[arg-type]


def test_a_quality_rollback_is_final_even_in_an_interval_with_too_little_traffic() -> None:
    result = analyse(CONFIG, "5", window("1", 1000), window("2", 10), verdict("rollback"))
    assert (result.outcome, result.final) == ("fail", "rollback")
    assert result.decisions[0].gate == "quality" and result.metrics["quality_realised_pairs"] == 500.0


@pytest.mark.parametrize(("p99_ms", "final", "outcome"), [(1.0, "promote", "pass"), (60.0, "", "fail")])
def test_a_quality_promotion_is_final_only_when_the_operational_checks_pass(
    p99_ms: float, final: str, outcome: str
) -> None:
    result = analyse(CONFIG, "5", window("1", 1000), window("2", 200, p99_ms), verdict("promote"))
    assert (result.outcome, result.final) == (outcome, final)


def test_quality_not_decided_yet_leaves_the_interval_to_the_operational_checks() -> None:
    result = analyse(CONFIG, "5", window("1", 1000), window("2", 200), verdict("continue"))
    assert (result.outcome, result.final) == ("pass", "")
    assert analyse(CONFIG, "5", window("1", 1000), window("2", 99), verdict("continue")).outcome == "wait"
    assert analyse(CONFIG, "5", window("1", 1000), window("2", 200)).final == ""  # no quality feed


@pytest.mark.slow
def test_the_controller_rolls_back_as_soon_as_quality_shows_harm(
    store: DemoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live ``mlops serve``: operationally healthy challenger, fed labelled evidence that it ranks worse;
    the rollback is announced on the webhook."""
    name = "rollout-quality"
    champion = register(store, name, store.onnx_a, alias=CHAMPION)
    challenger = register(
        store, name, train_onnx(tmp_path / "other", store.holdout, seed=3), alias=CHALLENGER
    )
    quality = CanaryQuality(alpha=0.05, min_units=100)
    rng = np.random.default_rng(0)

    def feed(state: RolloutState) -> QualityVerdict:  # each interval: 2000 labelled rows per version
        labels = (rng.random(2000) < 0.3).astype(int)
        quality.add_labelled(
            (rng.normal(0, 1, 2000) + 0.6 * labels, labels), (rng.normal(0, 1, 2000) + 1.4 * labels, labels)
        )
        return quality.verdict()

    config = RolloutConfig(
        shadow=False, canary_steps=(10, 50, 100), bake_interval_s=0.5, min_requests=5, max_score_shift=1.0
    )
    rows = store.holdout.drop(columns=["default"]).head(100).to_dict("records")
    flags = ("--model-name", name, "--reload-interval-s", "0.2", "--no-request-log")
    with running_server(store, *flags) as server, webhook_receiver() as receiver:
        monkeypatch.setenv("MLOPS_ALERT_WEBHOOK_URL", receiver.url)
        target = LocalServerTarget(server.url, store.tracking, name, timeout_s=60, poll_s=0.05)
        rollout = RolloutController(
            target,
            RolloutRegistry(store.tracking, name),
            store.workspace.root,
            StateStore(store.workspace.root),
            quality=feed,
        )
        state = rollout.run(rollout.start(config, challenger), traffic=Replayer(server.url, name, rows))
        assert state.phase == "rolled_back" and state.stage_name == "10", state.reason
        assert state.reason.startswith("quality: challenger worse on realised AUC")
        assert state.intervals == 1
        assert target.current().serving[0].version == champion
    assert [p.body["text"].split(":")[0] for p in receiver.posts] == ["[mlops] rollback"]
    assert state.reason in receiver.posts[0].body["blocks"][0]["text"]["text"]
    rolled = [e for e in audit.read_events(store.workspace.root) if e.action == "rollout.rolled_back"]
    assert rolled[-1].details["reason"] == state.reason
