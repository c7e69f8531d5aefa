"""What the gates decided on a version, and the limits they decided under: from the audit trail, else
from the version's tags and the model-validation report. The model card's ``gate_decisions``, ``limits``
and ``overrides``."""

from __future__ import annotations

from typing import Any

from mlops.governance.version_facts import ModelFacts
from mlops.vocabulary import DECISION_TAG, REASON_TAG, STATUS_TAG, TAG_PREFIX, UNDECIDED_TAG


def gate_decisions(facts: ModelFacts) -> list[dict[str, Any]]:
    """Every gate's decision on the version: from the audit trail, else from the version's tags."""
    decided = [e for e in facts.events if e.action == "gate.decided"]
    if decided:
        return [
            {
                "gate": e.details.get("gate", ""),
                "decision": e.details.get("decision", ""),
                "status": e.details.get("status") or _status_of(e.details.get("decision", "")),
                "reason": e.details.get("reason", ""),
                "undecided": list(e.details.get("undecided") or []),
                "at": e.at,
                "audit_seq": e.seq,
            }
            for e in decided
        ]
    prefix = f"{TAG_PREFIX}gate."
    rows = [
        {
            "gate": k[len(prefix) : -len(".decision")],
            "decision": v,
            "status": facts.tags.get(k[: -len("decision")] + "status") or _status_of(v),
            "reason": facts.tags.get(k[: -len("decision")] + "reason", ""),
            "undecided": _lines(facts.tags.get(k[: -len("decision")] + "undecided", "")),
            "at": "",
            "audit_seq": None,
        }
        for k, v in sorted(facts.tags.items())
        if k.startswith(prefix) and k.endswith(".decision")
    ]
    if DECISION_TAG in facts.tags:
        rows.append(
            {
                "gate": "overall",
                "decision": facts.tags[DECISION_TAG],
                "status": facts.tags.get(STATUS_TAG) or _status_of(facts.tags[DECISION_TAG]),
                "reason": facts.tags.get(REASON_TAG, ""),
                "undecided": _lines(facts.tags.get(UNDECIDED_TAG, "")),
                "at": "",
                "audit_seq": None,
            }
        )
    return rows


def _status_of(decision: str) -> str:
    """A decision recorded before gates had statuses: reject is a fail; a promote's status was not recorded."""
    return "fail" if decision == "reject" else "not recorded"


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


LIMITS_ACTION = "gate.limits"
"""The audit action ``mlops run`` records with the limits a version's gates decided under (``cli.summaries.limits``)."""


def limits(facts: ModelFacts) -> list[dict[str, Any]]:
    """Every limit the gates decided under, with its default, and for a changed one who changed it and where.

    From the run's ``gate.limits`` audit record (written by ``mlops run``: the person and the command
    line), else from the model-validation report (the values and defaults; who changed one is then
    not recorded). Model-validation values in the report win over the record's: they are what the gate used.
    """
    recorded = [e for e in facts.events if e.action == LIMITS_ACTION]
    event = recorded[-1] if recorded else None
    by_address: dict[str, dict[str, Any]] = {}
    if event is not None:
        for limit in event.details.get("limits") or []:
            by_address[limit["address"]] = {
                **limit,
                "set_by": event.actor if limit.get("source") != "default" else "",
                "audit_seq": event.seq,
            }
    report = facts.report("gate_model_validation", "model_validation/report.json")
    for limit in report.get("limits") or []:
        known = by_address.get(limit["address"])
        if known is not None and known.get("value") == limit.get("value"):
            continue
        changed = limit.get("value") != limit.get("default")
        by_address[limit["address"]] = {
            **limit,
            "source": "changed for this run; who and where not recorded (not started with mlops run)"
            if changed
            else "default",
            "set_by": "",
            "audit_seq": None,
        }
    return list(by_address.values())


def overrides(facts: ModelFacts) -> list[dict[str, Any]]:
    """The limits in force that differ from their defaults."""
    return [limit for limit in limits(facts) if limit.get("value") != limit.get("default")]
