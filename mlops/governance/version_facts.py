"""What the registry, the task runs and the audit trail hold about one registered version: the input of
its model card (collected through the MLflow seam by :mod:`mlops.tracking.model_facts`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mlops.governance.audit import AuditEvent


@dataclass(frozen=True)
class RunFacts:
    """One MLflow task run of the pipeline run that produced the version."""

    task: str
    run_id: str
    status: str
    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]
    reports: dict[str, Any] = field(default_factory=dict)
    """Artifact path -> parsed JSON report (``evaluation/metrics.json``, ``model_validation/report.json`` …)."""
    report_files: list[str] = field(default_factory=list)
    """Downloaded report files, relative to the reports folder (``<task>/<artifact path>``)."""


@dataclass(frozen=True)
class ModelFacts:
    """What the registry, the task runs and the audit trail hold about one version."""

    name: str
    alias: str
    version: str
    aliases: list[str]
    created_at: str
    description: str
    tags: dict[str, str]
    runs: list[RunFacts]
    profile: dict[str, Any]
    """The version's reference profile (training data summary); empty when it has none."""
    events: list[AuditEvent]
    """Audit records of this version and of the validation of its training data."""
    model_events: list[AuditEvent]
    """Every audit record of this registered model (the alias history reads them)."""
    tracking_uri: str = ""

    def run(self, task: str) -> RunFacts | None:
        found = [r for r in self.runs if r.task == task]
        return found[-1] if found else None

    def report(self, task: str, path: str) -> dict[str, Any]:
        run = self.run(task)
        value = run.reports.get(path) if run else None
        return value if isinstance(value, dict) else {}
