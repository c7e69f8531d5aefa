"""Rollouts end to end on the local target: a live `mlops serve`, a real registry, real models.

The champion is model A; a healthy challenger (same architecture, another seed) is
promoted through shadow, 5, 25, 50 and 100 %; a challenger whose weights went NaN is
rolled back while a client hammering the server sees only healthy answers; with no
traffic the rollout waits and never promotes.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import mlflow
import pytest

from delivery.rollout.config import RolloutConfig
from delivery.rollout.controller import RolloutController
from delivery.rollout.history import history
from delivery.rollout.registry_writes import RolloutRegistry
from delivery.rollout.replay import Replayer
from delivery.rollout.state import StateStore
from delivery.targets.local import LocalServerTarget
from mlops.governance import audit
from mlops.vocabulary import (
    CHALLENGER,
    CHAMPION,
    PROFILE_TAG,
    ROLLED_BACK_AT_TAG,
    ROLLOUT_STAGE_TAG,
    gate_tag,
)
from tests.support.serving import DemoStore, encoded, register, running_server, train_onnx, v2_body

pytestmark = pytest.mark.slow

FAST = RolloutConfig(  # sub-second intervals; thresholds a healthy retrain clears and a broken one does not
    canary_steps=(10, 50, 100),
    bake_interval_s=0.5,
    min_requests=10,
    failure_threshold=2,
    max_disagreement=0.15,
    max_score_shift=0.25,
    max_p99_latency_ratio=3.0,
    min_latency_increase_ms=20.0,
)


def pair(store: DemoStore, name: str, challenger: Path) -> tuple[str, str]:
    champion = register(store, name, store.onnx_a, alias=CHAMPION)
    return champion, register(store, name, challenger, alias=CHALLENGER)


def controller(store: DemoStore, url: str, name: str) -> RolloutController:
    tracking = store.tracking  # one store, one client: the target's alias moves and the rollout's verdicts
    target = LocalServerTarget(url, tracking, name, timeout_s=60, poll_s=0.05)
    return RolloutController(
        target, RolloutRegistry(tracking, name), store.workspace.root, StateStore(store.workspace.root)
    )


def server_flags(name: str) -> tuple[str, ...]:
    return ("--model-name", name, "--reload-interval-s", "0.2", "--no-request-log")


@contextmanager
def client_load(url: str, name: str, x_rows: list[object], threads: int = 3) -> Iterator[Counter[str]]:
    """Clients sending V2 requests until the block ends; counts answers by version and every failure."""
    seen: Counter[str] = Counter()
    stop = threading.Event()

    def work(offset: int) -> None:
        with httpx.Client(timeout=10) as http:
            i = offset
            while not stop.is_set():
                body = x_rows[i % len(x_rows)]
                i += 1
                try:
                    answer = http.post(f"{url}/v2/models/{name}/infer", json=body)
                except httpx.TransportError:
                    seen["failed"] += 1
                    continue
                data = answer.json()["outputs"][0]["data"] if answer.status_code == 200 else [None]
                healthy = answer.status_code == 200 and all(v is not None and math.isfinite(v) for v in data)
                seen[answer.headers.get("x-model-version", "?") if healthy else "failed"] += 1

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    try:
        yield seen
    finally:
        stop.set()
        for worker in workers:
            worker.join()


def test_a_healthy_challenger_is_promoted_through_every_stage(store: DemoStore, tmp_path: Path) -> None:
    name = "rollout-healthy"
    healthy = train_onnx(tmp_path / "healthy", store.holdout, seed=2)
    champion, challenger = pair(store, name, healthy)
    client = store.tracking._client
    rows = store.holdout.drop(columns=["default"]).head(200).to_dict("records")
    with running_server(store, *server_flags(name)) as server:
        rollout = controller(store, server.url, name)
        replay = Replayer(server.url, name, rows)
        state = rollout.start(FAST)
        assert state.stage_name == "shadow" and rollout.target.current().shadow == challenger
        state = rollout.run(state, traffic=replay)

        assert state.phase == "promoted", state.reason
        assert "passed every stage (shadow, 10, 50, 100)" in state.reason
        assert replay.failed == 0 and replay.sent > 100
        assert set(replay.versions) == {champion, challenger}  # both answered during the canary
        status = rollout.target.current()
        assert status.converged and status.desired_version == challenger  # the server's champion moved too
        plan = httpx.get(f"{server.url}/v2/models/{name}/rollout", timeout=10).json()
        assert (
            plan["champion"] == challenger and plan["challenger"] is None
        )  # one model again, no canary left
        infer = httpx.post(
            f"{server.url}/v2/models/{name}/infer", json=v2_body(encoded(store, 2)), timeout=10
        )
        assert infer.headers["x-model-version"] == challenger
    assert str(client.get_model_version_by_alias(name, CHAMPION).version) == challenger
    with pytest.raises(mlflow.exceptions.MlflowException):
        client.get_model_version_by_alias(name, CHALLENGER)
    tags = client.get_model_version(name, challenger).tags
    assert tags[gate_tag("canary", "decision")] == "promote" and tags[ROLLOUT_STAGE_TAG] == "promoted"
    assert "passed every stage" in tags[gate_tag("canary", "reason")]

    served = [row for row in history(name, store.workspace.root)]
    assert [row.stage or row.action for row in served] == ["shadow", "10", "50", "100", "promoted"]
    assert served[0].traffic == {champion: 100} and served[0].shadow == challenger
    assert served[1].traffic == {champion: 90, challenger: 10}
    assert served[3].traffic == {challenger: 100}
    assert served[-1].traffic == {challenger: 100} and served[-1].shadow is None
    intervals = [e for e in audit.read_events(store.workspace.root) if e.action == "rollout.interval"]
    assert {e.details["outcome"] for e in intervals if e.details["model_name"] == name} <= {"pass", "wait"}
    assert StateStore(store.workspace.root).load(name).phase == "promoted"


def test_a_broken_challenger_is_rolled_back_and_no_client_request_fails(
    store: DemoStore, tmp_path: Path
) -> None:
    name = "rollout-broken"
    broken = train_onnx(tmp_path / "broken", store.holdout, seed=3, poisoned=True)
    champion, challenger = pair(store, name, broken)
    bodies: list[object] = [v2_body(encoded(store, 1, offset=i)) for i in range(50)]
    client = store.tracking._client
    with running_server(store, *server_flags(name)) as server:
        rollout = controller(store, server.url, name)
        with client_load(server.url, name, bodies) as seen:
            state = rollout.start(FAST.model_copy(update={"shadow": False}))
            state = rollout.run(state)
        status = rollout.target.current()

    assert state.phase == "rolled_back"
    assert "2 failed intervals (failure_threshold 2) at stage 10" in state.reason
    assert "error_rate gate: challenger error rate 1.0000" in state.reason
    assert seen["failed"] == 0 and seen[champion] > 50  # every request answered, by the healthy champion
    assert set(seen) == {champion}
    assert status.serving[0].version == champion and status.converged and status.shadow is None
    tags = client.get_model_version(name, challenger).tags
    assert tags[gate_tag("canary", "decision")] == "reject" and tags[ROLLOUT_STAGE_TAG] == "rolled_back"
    assert "error_rate" in tags[gate_tag("canary", "reason")] and ROLLED_BACK_AT_TAG in tags
    assert PROFILE_TAG not in tags  # a model that scores nothing finitely gets no reference profile
    assert str(client.get_model_version_by_alias(name, CHAMPION).version) == champion
    with pytest.raises(mlflow.exceptions.MlflowException):
        client.get_model_version_by_alias(name, CHALLENGER)
    served = history(name, store.workspace.root)
    assert [row.action for row in served] == ["step", "rolled_back"]
    assert served[-1].traffic == {champion: 100} and "error_rate" in served[-1].reason


def test_too_little_traffic_waits_and_never_promotes(store: DemoStore, tmp_path: Path) -> None:
    name = "rollout-idle"
    champion, challenger = pair(store, name, train_onnx(tmp_path / "idle", store.holdout, seed=2))
    with running_server(store, *server_flags(name)) as server:
        rollout = controller(store, server.url, name)
        state = rollout.start(FAST.model_copy(update={"shadow": False, "canary_steps": (100,)}))
        trickle = Replayer(
            server.url, name, store.holdout.drop(columns=["default"]).head(5).to_dict("records")
        )
        for _ in range(3):
            trickle(0.0)  # one request per interval: below min_requests even at 100 %
            state = rollout.tick(state)
            assert state.phase == "running" and state.stage_name == "100"
            assert "fewer than min_requests 10; waiting for more traffic" in state.reason
        assert state.waiting == 3 and state.passed == 0 and state.failures == 0
        assert rollout.target.current().percent(challenger) == 100  # still a canary, not promoted
        client = store.tracking._client
        assert client.get_model_version(name, challenger).tags[ROLLOUT_STAGE_TAG] == "100"
    assert str(store.tracking.version_by_alias(name, CHAMPION).version) == champion
