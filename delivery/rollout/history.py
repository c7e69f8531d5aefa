"""Which version served, with what traffic, when: read back from the audit trail.

The MLflow registry knows where an alias points now and when it last moved; it does
not know that version 4 answered 25 % of requests for ten minutes on Tuesday. Every
rollout step records the traffic it left behind (``rollout.step``, ``rollout.promoted``,
``rollout.rolled_back`` in :mod:`mlops.governance.audit`), so the history is a filter over the trail.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from delivery.rollout.controller import PROMOTED, ROLLED_BACK, STEP
from mlops.governance.audit import read_events

TRAFFIC_ACTIONS = (STEP, PROMOTED, ROLLED_BACK)


@dataclass(frozen=True)
class Served:
    """From ``at`` on (until the next row), these versions answered these shares of requests."""

    at: str
    action: str
    traffic: dict[str, int]
    shadow: str | None
    stage: str
    reason: str
    actor: str


def history(model_name: str, workspace_root: Path | None = None) -> list[Served]:
    """Every traffic change of ``model_name``'s rollouts, oldest first."""
    rows = []
    for event in read_events(workspace_root):
        details = event.details
        if event.action not in TRAFFIC_ACTIONS or details.get("model_name") != model_name:
            continue
        rows.append(
            Served(
                at=event.at,
                action=event.action.removeprefix("rollout."),
                traffic={str(k): int(v) for k, v in details.get("traffic", {}).items()},
                shadow=details.get("shadow"),
                stage=str(details.get("stage", "")),
                reason=str(details.get("reason", "")),
                actor=event.actor,
            )
        )
    return rows
