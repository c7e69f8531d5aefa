"""The canary stage's ``run_rollout`` executed against a live `mlops serve` and the demo registry.

Clients send real V2 requests while the stage sleeps through its bake intervals (the stage has
no replay of its own: on a cluster the traffic is production's).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.canary.rollout_run import run_rollout
from mlops.governance import audit
from mlops.vocabulary import CHAMPION, ROLLOUT_STAGE_TAG, gate_tag
from tests.delivery.rollout.test_local_rollout import FAST, client_load, pair, server_flags
from tests.serving.conftest import store
from tests.support.serving import DemoStore, encoded, running_server, train_onnx, v2_body

__all__ = ["store"]
pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("seed", "poisoned", "phase"), [(2, False, "promoted"), (3, True, "rolled_back")])
def test_run_rollout_promotes_a_healthy_version_and_rolls_back_a_broken_one(
    store: DemoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, poisoned: bool, phase: str
) -> None:
    monkeypatch.delenv(audit.AUDIT_URI_ENV, raising=False)
    name = f"canary-stage-{phase}"
    champion, challenger = pair(
        store, name, train_onnx(tmp_path / "challenger", store.holdout, seed=seed, poisoned=poisoned)
    )
    bodies: list[object] = [v2_body(encoded(store, 1, offset=i)) for i in range(200)]
    report = tmp_path / "out" / "rollout.json"
    # The score-shift gate's own edges are pinned in tests/delivery; here two honest seeds must not trip it.
    config = FAST.model_copy(update={"shadow": False, "max_score_shift": 0.5})
    with running_server(store, *server_flags(name)) as server, client_load(server.url, name, bodies) as seen:
        state = run_rollout(name, challenger, server.url, config, store.tracking, report)
    assert state.phase == phase, state.reason
    assert seen["failed"] == 0 and seen[champion] > 0  # no client saw the rollout, whatever its end
    written = json.loads(report.read_text())
    assert written["phase"] == phase and written["challenger"] == challenger
    assert written["stages"] == ["10", "50", "100"]
    tags = store.tracking.model_version(name, challenger).tags
    assert tags[ROLLOUT_STAGE_TAG] == phase
    assert tags[gate_tag("canary", "decision")] == ("promote" if phase == "promoted" else "reject")
    expected = challenger if phase == "promoted" else champion
    assert str(store.tracking.version_by_alias(name, CHAMPION).version) == expected
    actions = [
        e.action
        for e in audit.read_events(store.workspace.root)
        if e.subject == f"{name}/{challenger}" and e.action.startswith("rollout.")
    ]
    assert actions[0] == "rollout.step" and actions[-1] == f"rollout.{phase}"
