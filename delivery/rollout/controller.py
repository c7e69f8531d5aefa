"""The rollout state machine: apply a stage, bake, analyse, then advance, wait, promote or roll back.

::

    start ─► shadow ─► 5 % ─► 25 % ─► 50 % ─► 100 % ─► promote (champion alias moves, challenger removed)
               │ each stage: bake_interval_s, analyse; intervals_per_step passes → next stage
               │ too little traffic → wait (never a pass); failure_threshold failures → roll back
               └──────────────────────────────────────────────────────────► rollback (canary 0 %,
                                                   challenger alias removed, version tagged with the reason)

The controller is written against :class:`~delivery.targets.base.TrafficTarget` and runs
unchanged on the local server and on KServe. Every stage change, every interval's verdict
and the final decision go through :func:`mlops.governance.audit.record` (``rollout.*`` actions, which
:mod:`delivery.rollout.history` reads back) and the state is saved after each step, so
``mlops rollout status`` in another shell sees where it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delivery.rollout.analysis import IntervalVerdict, analyse
from delivery.rollout.config import SHADOW, RolloutConfig
from delivery.rollout.metrics_window import CHALLENGER_ROLES, CHAMPION_ROLES, Snapshot
from delivery.rollout.state import RolloutState, StateStore
from mlops.governance import alerts, audit

if TYPE_CHECKING:
    from delivery.rollout.registry_writes import RolloutRegistry
    from delivery.rollout.sequential import QualityVerdict
    from delivery.targets.base import DeploymentStatus, TrafficTarget

STEP, INTERVAL, PROMOTED, ROLLED_BACK = (
    "rollout.step",
    "rollout.interval",
    "rollout.promoted",
    "rollout.rolled_back",
)
"""The audit actions a rollout records."""


class RolloutController:
    """Drives one model's rollouts on ``target``; records to the audit trail under ``workspace_root``."""

    def __init__(
        self,
        target: TrafficTarget,
        registry: RolloutRegistry,
        workspace_root: Path | None,
        store: StateStore | None = None,
        sleep: Callable[[float], None] = time.sleep,
        quality: Callable[[RolloutState], QualityVerdict] | None = None,
    ):
        self.target = target
        self.registry = registry
        self.workspace_root = workspace_root
        self.store = store
        self.sleep = sleep
        self._baseline: Snapshot | None = None
        self.quality = quality
        """The rollout's quality verdict so far (:class:`delivery.rollout.sequential.CanaryQuality`), if fed."""

    def start(self, config: RolloutConfig, challenger: str | None = None) -> RolloutState:
        """Begin a rollout of ``challenger`` (default: the ``challenger`` alias) against the champion."""
        champion, chosen = self.registry.pair(challenger)
        state = RolloutState(
            model_name=self.target.model_name,
            champion=champion,
            challenger=chosen,
            config=config,
            target=self.target.describe(),
        )
        return self._enter(state)

    def resume(self, state: RolloutState) -> RolloutState:
        """Pick up a rollout whose controller stopped (killed, node lost) from its persisted ``state``:
        re-apply its stage on the target (recorded as a step) and start a fresh analysis window; the
        intervals it already passed, failed or waited keep counting."""
        if state.done:
            raise ValueError(
                f"the rollout of {state.model_name} version {state.challenger} already ended "
                f"({state.phase}: {state.reason}); nothing to resume"
            )
        return self._enter(state.advance(reason=f"resumed at stage {state.stage_name} from the saved state"))

    def run(self, state: RolloutState, traffic: Callable[[float], None] | None = None) -> RolloutState:
        """Bake and analyse until the rollout ends; ``traffic(seconds)`` replays requests meanwhile."""
        while not state.done:
            (traffic or self.sleep)(state.config.bake_interval_s)
            state = self.tick(state)
        return state

    def tick(self, state: RolloutState) -> RolloutState:
        """Analyse the interval since the last stage change or tick, and act on the verdict."""
        verdict = self.analyse(state)
        config = state.config
        state = state.advance(intervals=state.intervals + 1, reason=verdict.reason)
        self._record(
            INTERVAL,
            state,
            {"outcome": verdict.outcome, "reason": verdict.reason, "figures": verdict.metrics},
        )
        if verdict.final == "rollback":
            return self.rollback(state, f"quality: {verdict.reason}")
        if verdict.final == "promote":
            return self.promote(state, f"quality shown at stage {state.stage_name}: {verdict.reason}")
        if verdict.outcome == "wait":
            state = state.advance(waiting=state.waiting + 1)
            if config.max_waiting_intervals and state.waiting >= config.max_waiting_intervals:
                return self.rollback(
                    state, f"{state.waiting} intervals in a row with too little traffic: {verdict.reason}"
                )
            return self._save(state)
        if verdict.outcome == "fail":
            state = state.advance(failures=state.failures + 1, waiting=0)
            if state.failures >= config.failure_threshold:
                return self.rollback(
                    state,
                    f"{state.failures} failed intervals (failure_threshold {config.failure_threshold}) at stage "
                    f"{state.stage_name}: {verdict.reason}",
                )
            return self._save(state)
        state = state.advance(passed=state.passed + 1, waiting=0)
        if state.passed < config.intervals_per_step:
            return self._save(state)
        if state.stage + 1 < len(config.stages):
            return self._enter(state.advance(stage=state.stage + 1, passed=0))
        return self.promote(state, f"passed every stage ({', '.join(config.stages)}): {verdict.reason}")

    def analyse(self, state: RolloutState) -> IntervalVerdict:
        now = Snapshot.parse(self.target.metrics_text(), state.model_name)
        window = now.minus(self._baseline) if self._baseline is not None else now
        self._baseline = now
        return analyse(
            state.config,
            state.stage_name,
            window.window(state.champion, CHAMPION_ROLES),
            window.window(state.challenger, CHALLENGER_ROLES),
            self.quality(state) if self.quality is not None else None,
        )

    def promote(self, state: RolloutState, reason: str) -> RolloutState:
        """Make the challenger the champion (alias moves, 100 % of traffic) and end the rollout."""
        status = self.target.deploy(state.challenger)
        self.registry.promoted(state.challenger, reason)
        state = state.advance(phase="promoted", reason=reason)
        self._record(PROMOTED, state, {"reason": reason, **_traffic(status)})
        return self._save(state)

    def rollback(self, state: RolloutState, reason: str) -> RolloutState:
        """Take the challenger out of traffic (0 %), drop its alias, tag it with ``reason``; end the rollout."""
        status = self.target.set_traffic(state.challenger, 0)
        self.registry.rolled_back(state.challenger, reason)
        state = state.advance(phase="rolled_back", reason=reason)
        self._record(ROLLED_BACK, state, {"reason": reason, **_traffic(status)})
        alerts.send(
            "rollback", f"{state.model_name}/{state.challenger}", reason, {"champion": state.champion}
        )
        return self._save(state)

    def _enter(self, state: RolloutState) -> RolloutState:
        """Apply the state's stage on the target and start a fresh analysis window."""
        stage = state.stage_name
        if stage == SHADOW:
            status = self.target.shadow(state.challenger, state.config.agreement_threshold)
        else:
            status = self.target.set_traffic(state.challenger, int(stage))
        self._baseline = Snapshot.parse(self.target.metrics_text(), state.model_name)
        self.registry.stage(state.challenger, stage)
        self._record(STEP, state, {"stage": stage, **_traffic(status)})
        return self._save(state)

    def _record(self, action: str, state: RolloutState, details: dict[str, Any]) -> None:
        audit.record(
            action,
            f"{state.model_name}/{state.challenger}",
            {
                "model_name": state.model_name,
                "champion": state.champion,
                "challenger": state.challenger,
                **details,
            },
            links={"model_version": state.challenger, "deployment": state.target},
            workspace_root=self.workspace_root,
        )

    def _save(self, state: RolloutState) -> RolloutState:
        if self.store is not None:
            self.store.save(state)
        return state


def _traffic(status: DeploymentStatus) -> dict[str, Any]:
    return {"traffic": {share.version: share.percent for share in status.serving}, "shadow": status.shadow}
