"""The pipeline's steps under gate.require_approval, called as the task calls them (their Python function):
combine-gates ends in pending-approval and succeeds, promote-to-champion refuses a version without approval."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.promotion_gate.component import combine_gates, promote_to_champion
from mlops.governance.approvers import ApprovalError
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import APPROVAL_STATUS_TAG, CHAMPION, DIGEST_TAG


def _version(store: TrackingStore) -> str:
    store.ensure_experiment()
    return store.create_version("m", "file:///dev/null", "", {DIGEST_TAG: "ab" * 32})


def _combine(store: TrackingStore, version: str, gate: dict, tmp_path: Path) -> str:
    return str(
        combine_gates.python_func(
            model_name="m",
            version=version,
            metrics_decision="promote",
            metrics_reason="auc above the floor",
            validation_decision="promote",
            validation_reason="fair",
            gate=gate,
            tracking=store.settings(),
            pipeline_run_id="run-1",
            reason=str(tmp_path / "reason.txt"),
        )
    )


def test_with_require_approval_the_step_succeeds_pending_and_names_the_next_command(
    tracking: TrackingStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    version = _version(tracking)
    assert _combine(tracking, version, {"require_approval": True}, tmp_path) == "pending-approval"
    assert (
        f"a second person signs it off with `mlops approve m@{version} --key KEY`" in capsys.readouterr().out
    )
    assert tracking.version_tags("m", version)[APPROVAL_STATUS_TAG] == "pending-approval"
    assert tracking.alias_version("m", CHAMPION) is None
    with pytest.raises(ApprovalError, match="is pending approval"):
        promote_to_champion.python_func(
            model_name="m",
            version=version,
            gate={"require_approval": True},
            tracking=tracking.settings(),
            pipeline_run_id="run-1",
        )
    assert tracking.alias_version("m", CHAMPION) is None


def test_without_it_the_step_promotes_as_before(tracking: TrackingStore, tmp_path: Path) -> None:
    version = _version(tracking)
    assert _combine(tracking, version, {}, tmp_path) == "promote"
    assert APPROVAL_STATUS_TAG not in tracking.version_tags("m", version)
    promote_to_champion.python_func(
        model_name="m", version=version, gate={}, tracking=tracking.settings(), pipeline_run_id="run-1"
    )
    assert tracking.alias_version("m", CHAMPION) == version
