"""A version's approval in the registry and the trail: who created it, the pending request, the signed
decision, and the check every path to ``champion`` makes (:mod:`mlops.governance.approval` decides)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from mlops.governance.approval import (
    ApprovalError,
    Statement,
    approval_problem,
    pending_tags,
    required,
    signed_tags,
)
from mlops.vocabulary import APPROVAL_STATUS_TAG, APPROVED, TAG_PREFIX

if TYPE_CHECKING:
    from mlops.governance.approvers import Approvers
    from mlops.tracking.store import RecordingRun, TrackingStore

RUN_USER_TAG = "mlflow.user"
"""The run tag MLflow records the person (or service account) who started a run in."""
TRAIN_RUN_TAG = f"{TAG_PREFIX}train_run_id"
"""The lineage tag naming the version's training run."""


def creators(store: TrackingStore, name: str, version: str) -> set[str]:
    """Who trained or registered the version, as the registry records it: the version's user, the
    user of the run that registered it and of its training run (``mlops.train_run_id``)."""
    from mlflow.exceptions import MlflowException

    found = store.model_version(name, version)
    people = {str(found.user_id)} if getattr(found, "user_id", None) else set()
    for run_id in {found.run_id, dict(found.tags).get(TRAIN_RUN_TAG, "")}:
        if not run_id:
            continue
        try:
            user = store.get_run(run_id).data.tags.get(RUN_USER_TAG, "")
        except MlflowException:  # a run deleted since: the registry no longer says who
            continue
        if user:
            people.add(user)
    return people


def request(name: str, version: str, store: TrackingStore, run: RecordingRun) -> None:
    """Mark the version ``pending-approval`` and record ``approval.requested`` in the task run ``run``."""
    at = datetime.now(UTC).isoformat()
    store.tag_version(name, version, pending_tags(at))
    subject = f"{name}/{version}"
    run.audit("approval.requested", subject, {"status": "pending-approval"}, model_version=subject)


def record_decision(store: TrackingStore, statement: Statement, signature: str) -> None:
    """Write a signed decision on the version and ``approval.<decision>`` to the trail, its actor the approver."""
    from mlops.governance.audit import default_actor, record

    store.tag_version(statement.model, statement.version, signed_tags(statement, signature))
    subject = f"{statement.model}/{statement.version}"
    record(
        f"approval.{statement.decision}",
        subject,
        {
            "decision": statement.decision,
            "approver": statement.approver,
            "approver_key_id": statement.approver_key_id,
            "model_digest": statement.model_digest,
            "signature_uri": statement.signature_uri,
            "reason": statement.reason,
            "at": statement.at,
            "signature": signature,
            "operator": default_actor(),
        },
        links={"model_version": subject},
        actor=statement.approver,
        tracking_uri=store.tracking_uri,
    )


def check(store: TrackingStore, name: str, version: str, setting: bool, approvers: Approvers | None) -> None:
    """Refuse (:class:`ApprovalError`, naming what is missing) a version that needs an approval and has no
    valid one; a version that needs none passes unchanged."""
    tags = store.version_tags(name, version)
    if not required(setting, tags):
        return
    if approvers is None and tags.get(APPROVAL_STATUS_TAG) == APPROVED:
        # the trusted keys the environment or the store's workspace names, read only when there is a
        # signature to verify: a missing or rejected approval is named as such wherever no keys are mounted
        from mlops.governance.approvers import trusted_approvers
        from mlops.workspace import workspace_of

        approvers = trusted_approvers(None, workspace_of(store.tracking_uri))
    elif approvers is None:
        from mlops.governance.approvers import Approvers

        approvers = Approvers("no approvers' keys read (no approval to verify)")
    problem = approval_problem(name, version, tags, creators(store, name, version), approvers)
    if problem:
        raise ApprovalError(f"refusing to make {name}@{version} champion: {problem}")
