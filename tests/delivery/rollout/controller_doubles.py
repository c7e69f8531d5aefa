"""The rollout controller of test_controller_stages.py and test_controller_intervals.py, with its doubles.

The target is a stand-in whose metrics come from a real :class:`~serving.metrics.ServingMetrics`
(the server's own counters, rendered as the server renders them), the registry records what it is
told, and the audit trail is the real one in a temporary workspace; alerts are recorded, never sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pytest

from delivery.rollout import controller as controller_module
from delivery.rollout.config import RolloutConfig
from delivery.rollout.controller import RolloutController
from delivery.rollout.state import StateStore
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
