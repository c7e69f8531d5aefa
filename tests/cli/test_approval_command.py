"""Four-eyes release on a real MLflow store: the gates leave a version pending, `mlops approve` / `mlops
reject` sign it off or refuse it, and every path to champion (promote-to-champion, `mlops rollout`) checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli.commands.rollout import _check_approval
from cli.main import main
from cli.summaries.training import approval_lines
from components.promotion_gate.combine import record_overall, verdict_output
from components.promotion_gate.promotion import promote
from delivery.rollout.registry_writes import RolloutRegistry
from mlops.gates import Decision
from mlops.governance.approvers import ApprovalError, ApproverSettings
from mlops.governance.audit import read_events
from mlops.governance.signing import generate_key_pair
from mlops.tracking.approval_registry import creators
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import (
    APPROVAL_BY_TAG,
    APPROVAL_STATEMENT_TAG,
    APPROVAL_STATUS_TAG,
    CHALLENGER,
    CHAMPION,
    DIGEST_TAG,
)
from mlops.workspace import Workspace

NAME = "credit"
PROMOTE = Decision("overall", "promote", "every gate passed", {})


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.delenv(ApproverSettings.env_name("approvers"), raising=False)
    monkeypatch.delenv("MLOPS_AUDIT_URI", raising=False)
    workspace = Workspace(tmp_path / "ws").create()
    (workspace.root / "approvers").mkdir()
    for person in ("carol", "alice", "bob", "mallory"):
        private, public = generate_key_pair(tmp_path / "keys" / person)
        if person != "mallory":  # mallory holds a key nobody trusts
            shutil.copy(public, workspace.root / "approvers" / f"{person}.pub")
    return workspace


def key(ws: Workspace, person: str) -> str:
    return str(ws.root.parent / "keys" / person / "signing.key")


@pytest.fixture
def store(ws: Workspace) -> TrackingStore:
    return TrackingStore(ws.tracking_uri, "tests", "test-run", ws.artifact_root)


def register(store: TrackingStore, trained_by: str = "carol") -> str:
    """A version whose training and registering run carol started, as the registry records it."""
    experiment = store.ensure_experiment().experiment_id
    client = store._client
    run = client.create_run(experiment, tags={"mlflow.user": trained_by})
    return store.create_version(NAME, "file:///dev/null", run.info.run_id, {DIGEST_TAG: "ab" * 32})


def gated(store: TrackingStore, *, require_approval: bool = True, decision: Decision = PROMOTE) -> str:
    version = register(store)
    record_overall(decision, NAME, version, store, require_approval=require_approval)
    return version


def cli(ws: Workspace, *args: str) -> int:
    return main(["--workspace", str(ws.root), *args])


def test_require_approval_off_leaves_promotion_as_it_was(store: TrackingStore) -> None:
    version = gated(store, require_approval=False)
    assert verdict_output(PROMOTE, False) == "promote"
    assert APPROVAL_STATUS_TAG not in store.version_tags(NAME, version)
    assert promote(NAME, version, store) is None
    assert store.alias_version(NAME, CHAMPION) == version


def test_a_version_that_passes_its_gates_waits_pending_and_is_not_champion(
    ws: Workspace, store: TrackingStore, capsys: pytest.CaptureFixture[str]
) -> None:
    version = gated(store)
    assert verdict_output(PROMOTE, True) == "pending-approval"
    assert verdict_output(Decision("overall", "reject", "auc", {}), True) == "reject"
    assert store.version_tags(NAME, version)[APPROVAL_STATUS_TAG] == "pending-approval"
    assert store.alias_version(NAME, CHAMPION) is None
    assert store.alias_version(NAME, CHALLENGER) == version
    requested = [e for e in read_events(ws.root) if e.action == "approval.requested"]
    assert [e.subject for e in requested] == [f"{NAME}/{version}"]
    with pytest.raises(ApprovalError, match=f"no approval: {NAME}@{version} is pending approval"):
        promote(NAME, version, store, require_approval=True)
    # a later run with the setting off cannot skip the approval the version is under
    with pytest.raises(ApprovalError, match="is pending approval"):
        promote(NAME, version, store)
    assert store.alias_version(NAME, CHAMPION) is None
    lines = approval_lines(NAME, version, store.version_tags(NAME, version))
    assert any(f"mlops approve {NAME}@{version} --key" in line for line in lines)
    assert approval_lines(NAME, version, {}) == []


def test_a_rejected_gate_verdict_asks_nobody_for_approval(store: TrackingStore) -> None:
    version = gated(store, decision=Decision("overall", "reject", "auc below the floor", {}))
    assert APPROVAL_STATUS_TAG not in store.version_tags(NAME, version)


def test_the_creator_is_read_from_the_registry(store: TrackingStore) -> None:
    assert creators(store, NAME, register(store, trained_by="dave")) == {"dave"}


def test_the_creator_may_not_approve(
    ws: Workspace, store: TrackingStore, capsys: pytest.CaptureFixture[str]
) -> None:
    version = gated(store)
    assert cli(ws, "approve", f"{NAME}@{version}", "--key", key(ws, "carol")) == 2
    assert "approver 'carol' is the creator of credit@1" in capsys.readouterr().err
    assert store.version_tags(NAME, version)[APPROVAL_STATUS_TAG] == "pending-approval"
    assert store.alias_version(NAME, CHAMPION) is None


def test_a_key_nobody_trusts_may_not_approve(
    ws: Workspace, store: TrackingStore, capsys: pytest.CaptureFixture[str]
) -> None:
    version = gated(store)
    assert cli(ws, "approve", f"{NAME}@{version}", "--key", key(ws, "mallory")) == 2
    assert "unknown approver key" in capsys.readouterr().err


def test_a_version_that_failed_its_gates_cannot_be_approved(
    ws: Workspace, store: TrackingStore, capsys: pytest.CaptureFixture[str]
) -> None:
    version = gated(store)
    store.tag_version(NAME, version, {"mlops.decision": "reject"})
    assert cli(ws, "approve", f"{NAME}@{version}", "--key", key(ws, "alice")) == 2
    assert "did not pass its gates" in capsys.readouterr().err


def test_a_second_person_approves_and_the_version_becomes_champion(
    ws: Workspace, store: TrackingStore, capsys: pytest.CaptureFixture[str]
) -> None:
    version = gated(store)
    assert (
        cli(ws, "approve", f"{NAME}@{version}", "--key", key(ws, "alice"), "--reason", "read the card") == 0
    )
    out = capsys.readouterr().out
    assert f"{NAME}@{version} approved by alice" in out and "is now champion (was none)" in out
    tags = store.version_tags(NAME, version)
    assert tags[APPROVAL_STATUS_TAG] == "approved" and tags[APPROVAL_BY_TAG] == "alice"
    assert store.alias_version(NAME, CHAMPION) == version
    events = read_events(ws.root)
    approvals = [e for e in events if e.action == "approval.approved"]
    assert len(approvals) == 1 and approvals[0].actor == "alice"
    moved = [e for e in events if e.action == "alias.moved" and e.details.get("alias") == CHAMPION]
    assert moved[-1].details["reason"] == "approved by alice"
    # it cannot be decided twice
    assert cli(ws, "reject", f"{NAME}@{version}", "--key", key(ws, "bob"), "--reason", "late") == 2
    assert "is not pending approval (approval status: approved)" in capsys.readouterr().err
    assert cli(ws, "history", NAME) == 0
    history = capsys.readouterr().out
    assert "approved" in history and "alice (key " in history and "read the card" in history
    assert "requested" in history


def test_approve_without_promoting_leaves_it_for_a_rollout_that_accepts_it(
    ws: Workspace, store: TrackingStore, capsys: pytest.CaptureFixture[str]
) -> None:
    champion = gated(store, require_approval=False)
    promote(NAME, champion, store)
    version = gated(store)
    assert cli(ws, "approve", f"{NAME}@{version}", "--key", key(ws, "alice"), "--no-promote") == 0
    assert "mlops rollout start --challenger 2" in capsys.readouterr().out
    assert store.alias_version(NAME, CHAMPION) == champion
    _check_approval(_rollout_args(ws, True), ws, RolloutRegistry(store, NAME), version)  # no error


def _rollout_args(ws: Workspace, require: bool) -> object:
    import argparse

    return argparse.Namespace(require_approval=require, approvers=None)


def test_a_rejected_version_is_refused_by_rollout_and_promotion(
    ws: Workspace, store: TrackingStore, capsys: pytest.CaptureFixture[str]
) -> None:
    version = gated(store)
    assert cli(ws, "reject", f"{NAME}@{version}", "--key", key(ws, "bob"), "--reason", "fairness gap") == 0
    assert store.version_tags(NAME, version)[APPROVAL_STATUS_TAG] == "rejected"
    with pytest.raises(ApprovalError, match=r"was rejected by bob at .*: fairness gap"):
        promote(NAME, version, store, require_approval=True)
    with pytest.raises(ApprovalError, match="was rejected by bob"):
        _check_approval(_rollout_args(ws, False), ws, RolloutRegistry(store, NAME), version)
    assert store.alias_version(NAME, CHAMPION) is None
    assert [e.actor for e in read_events(ws.root) if e.action == "approval.rejected"] == ["bob"]


def test_a_tampered_approval_is_refused(ws: Workspace, store: TrackingStore) -> None:
    version = gated(store)
    assert cli(ws, "approve", f"{NAME}@{version}", "--key", key(ws, "alice"), "--no-promote") == 0
    statement = json.loads(store.version_tags(NAME, version)[APPROVAL_STATEMENT_TAG])
    statement["reason"] = "edited after signing"
    store.tag_version(NAME, version, {APPROVAL_STATEMENT_TAG: json.dumps(statement)})
    with pytest.raises(ApprovalError, match="does not verify against the trusted key of 'alice'"):
        promote(NAME, version, store, require_approval=True)
    with pytest.raises(ApprovalError, match="does not verify"):
        _check_approval(_rollout_args(ws, True), ws, RolloutRegistry(store, NAME), version)
    assert store.alias_version(NAME, CHAMPION) is None


def test_rollout_requires_an_approval_when_asked_even_of_a_version_never_put_under_one(
    ws: Workspace, store: TrackingStore
) -> None:
    version = gated(store, require_approval=False)
    registry = RolloutRegistry(store, NAME)
    _check_approval(_rollout_args(ws, False), ws, registry, version)  # off: unchanged
    with pytest.raises(ApprovalError, match="carries none"):
        _check_approval(_rollout_args(ws, True), ws, registry, version)


def test_a_bad_reference_is_named(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(ws, "approve", "credit@champion", "--key", key(ws, "alice")) == 2
    assert "write NAME@VERSION with the version number" in capsys.readouterr().err


def test_a_missing_approval_is_named_even_where_no_approvers_keys_are_configured(
    ws: Workspace, store: TrackingStore
) -> None:
    version = gated(store)
    shutil.rmtree(ws.root / "approvers")
    with pytest.raises(ApprovalError, match="is pending approval"):
        _check_approval(_rollout_args(ws, False), ws, RolloutRegistry(store, NAME), version)
    with pytest.raises(ApprovalError, match="is pending approval"):
        promote(NAME, version, store)
