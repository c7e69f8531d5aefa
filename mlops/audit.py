"""The audit trail: one append-only record per state change, the one function every layer calls.

Every state change the platform makes — validation result, registration, signing, alias
move, gate decision, rollout step, rollback, retrain trigger — is recorded through
:func:`record`, so an auditor reads one trail instead of MLflow tags scattered over
versions. The trail's location is ``MLOPS_AUDIT_URI`` (a local path or ``s3://`` URI),
else ``audit.jsonl`` in the workspace the caller names.

The governance issue hardens what is stored (hash chain, S3 Object Lock, ``mlops audit
verify``); callers keep calling :func:`record` with the same arguments.
"""

from __future__ import annotations

import getpass
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

AUDIT_URI_ENV = "MLOPS_AUDIT_URI"
"""Where the trail lives on a cluster (``s3://bucket/prefix/audit.jsonl``) or when a caller has no workspace."""
ACTOR_ENV = "MLOPS_ACTOR"
"""Who acts: a person's name or the pod's service account; defaults to the OS user."""
AUDIT_FILE = "audit.jsonl"


@dataclass(frozen=True)
class AuditEvent:
    """One state change: what happened, to what, by whom, when, and the ids that link it."""

    action: str
    """What happened, e.g. ``alias.moved``, ``gate.decided``, ``rollout.step``, ``retrain.triggered``."""
    subject: str
    """What it happened to, e.g. ``credit-default/3`` or ``deployment/credit-default``."""
    details: dict[str, Any] = field(default_factory=dict)
    """What changed (from/to, decision, reasons); never a secret."""
    links: dict[str, str] = field(default_factory=dict)
    """Ids that tie the record to the rest: ``pipeline_run_id``, ``mlflow_run_id``, ``model_version``, ``deployment``."""
    actor: str = ""
    at: str = ""


def default_actor() -> str:
    return os.environ.get(ACTOR_ENV) or getpass.getuser()


def audit_location(workspace_root: str | Path | None = None) -> str:
    """``MLOPS_AUDIT_URI`` when set, else ``<workspace>/audit.jsonl``; neither is an error that says both fixes."""
    configured = os.environ.get(AUDIT_URI_ENV, "")
    if configured:
        return configured
    if workspace_root is None:
        raise ValueError(f"no audit trail location: set {AUDIT_URI_ENV} or pass the workspace directory")
    return str(Path(workspace_root) / AUDIT_FILE)


def record(
    action: str,
    subject: str,
    details: Mapping[str, Any] | None = None,
    *,
    links: Mapping[str, str] | None = None,
    actor: str | None = None,
    workspace_root: str | Path | None = None,
) -> AuditEvent:
    """Append one event to the trail and return it."""
    event = AuditEvent(
        action=action,
        subject=subject,
        details=dict(details or {}),
        links={key: str(value) for key, value in (links or {}).items()},
        actor=actor or default_actor(),
        at=datetime.now(UTC).isoformat(),
    )
    location = audit_location(workspace_root)
    line = json.dumps(asdict(event), sort_keys=True, default=str) + "\n"
    if location.startswith("s3://"):
        from mlops import storage

        previous = storage.read_bytes(location).decode() if storage.exists(location) else ""
        storage.write_bytes(location, (previous + line).encode())
    else:
        path = Path(location)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(line)
    return event


def read_events(workspace_root: str | Path | None = None) -> list[AuditEvent]:
    """Every event in the trail, oldest first (empty when nothing was recorded yet)."""
    location = audit_location(workspace_root)
    from mlops import storage

    if not storage.exists(location):
        return []
    text = storage.read_bytes(location).decode()
    return [AuditEvent(**json.loads(line)) for line in text.splitlines() if line.strip()]
