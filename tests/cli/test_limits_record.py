"""``mlops run`` records the gate limits a version was decided under, and who changed which."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.summaries.limits import COMMAND_LINE, limits_in_force, override_text, record_limits
from mlops.governance.audit import read_events
from mlops.workspace import Workspace

RELAXED = "model_validation.fairness.max_demographic_parity_difference"


def test_every_gate_limit_is_listed_and_only_a_changed_one_is_the_command_lines() -> None:
    limits = {limit["address"]: limit for limit in limits_in_force("training", {RELAXED: 0.25})}
    assert limits[RELAXED] == {"address": RELAXED, "value": 0.25, "default": 0.1, "source": COMMAND_LINE}
    assert limits["gate.auc_floor"]["source"] == "default"
    assert limits["model_validation.pass_not_conclusive"]["value"] == "estimate_within_limit"
    assert not any(address.startswith(("train.", "model_validation.behavioural")) for address in limits)
    # The default itself given on the command line changes nothing: it is the default.
    given_default = {limit["address"]: limit for limit in limits_in_force("training", {RELAXED: 0.1})}
    assert given_default[RELAXED]["source"] == "default"


def test_the_record_names_the_person_and_the_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLOPS_ACTOR", "alice")
    monkeypatch.delenv("MLOPS_AUDIT_URI", raising=False)
    workspace = Workspace(tmp_path / "ws").create()
    overrides, seq = record_limits(workspace, "training", {RELAXED: 0.25}, "compas", "2", "training-run-1")
    assert [override_text(o) for o in overrides] == [f"{RELAXED} 0.25 (default 0.1)"]
    (event,) = [e for e in read_events(workspace.root) if e.action == "gate.limits"]
    assert (event.subject, event.actor, event.seq, event.links) == (
        "compas/2",
        "alice",
        seq,
        {"model_version": "compas/2"},
    )
    assert event.details["pipeline_run"] == "training-run-1"
    assert (
        next(limit for limit in event.details["limits"] if limit["address"] == RELAXED)["source"]
        == COMMAND_LINE
    )
