"""Which gate limits a training run decided under, and who changed which: recorded in the audit trail.

The tasks see only the values; ``mlops run`` knows where they came from. Every setting of the gate
sections that differs from the pipeline's default was given on this command line (``--set
SECTION.FIELD=VALUE`` or ``--SECTION.FIELD VALUE``), so one ``gate.limits`` record on the version, by
the person running the command, holds every limit in force and each override with its default. The
model card (``mlops card``) reads it, so a card never shows a relaxed limit as the platform's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlops.workspace import Workspace

LIMIT_SECTIONS = ("gate", "model_validation")
COMMAND_LINE = "command line (mlops run --set / --SECTION.FIELD)"
"""Where a changed limit was set, as the record and the card name it."""


def limits_in_force(pipeline: str, settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every gate setting of the run with its pipeline default and source (``default`` or the command line)."""
    from pipelines.catalog import forms

    found = []
    for setting in forms()[pipeline].settings:
        if setting.section not in LIMIT_SECTIONS or setting.address.startswith(
            "model_validation.behavioural"
        ):
            continue
        value = settings.get(setting.address, setting.default)
        found.append(
            {
                "address": setting.address,
                "value": value,
                "default": setting.default,
                "source": "default" if value == setting.default else COMMAND_LINE,
            }
        )
    return found


def record_limits(
    workspace: Workspace, pipeline: str, settings: Mapping[str, Any], model_name: str, version: str, run: str
) -> tuple[list[dict[str, Any]], int]:
    """One ``gate.limits`` audit record on ``model_name/version``; returns the overrides and its sequence number."""
    from mlops.governance.audit import record
    from mlops.governance.gate_history import LIMITS_ACTION

    limits = limits_in_force(pipeline, settings)
    subject = f"{model_name}/{version}"
    event = record(
        LIMITS_ACTION,
        subject,
        {"limits": limits, "pipeline_run": run, "via": "mlops run"},
        links={"model_version": subject},
        workspace_root=workspace.root,
    )
    return [limit for limit in limits if limit["source"] != "default"], event.seq


def override_text(limit: Mapping[str, Any]) -> str:
    """``model_validation.fairness.max_demographic_parity_difference 0.25 (default 0.1)``."""
    return f"{limit['address']} {limit['value']} (default {limit['default']})"
