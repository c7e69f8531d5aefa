"""History and lineage read from audit records (the registry keeps only where an alias points now)."""

from __future__ import annotations

from mlops.governance.audit import AuditEvent
from mlops.governance.provenance import history, history_lines, lineage_lines


def move(seq: int, version: str, alias: str, at: str, reason: str) -> AuditEvent:
    return AuditEvent(
        "alias.moved", f"m/{version}", {"alias": alias, "to": version, "reason": reason}, {}, "bot", at, seq
    )


EVENTS = [
    move(1, "1", "champion", "2026-01-01T00:00", "first"),
    move(2, "2", "champion", "2026-02-01T00:00", "better"),
    move(3, "1", "champion", "2026-02-02T00:00", "rollback from version 2"),
    AuditEvent("alias.moved", "other/1", {"alias": "champion", "to": "1"}, {}, "bot", "2026-01-05", 4),
]


def test_history_lists_each_holding_from_when_to_when_and_why() -> None:
    holdings = history("m", EVENTS)
    assert [(h.version, h.since, h.until, h.reason) for h in holdings] == [
        ("1", "2026-01-01T00:00", "2026-02-01T00:00", "first"),
        ("2", "2026-02-01T00:00", "2026-02-02T00:00", "better"),
        ("1", "2026-02-02T00:00", "", "rollback from version 2"),
    ]
    assert history_lines("m", EVENTS)[-1].split()[3] == "now"
    assert history_lines("nobody", EVENTS) == ["no alias of nobody has moved in this audit trail"]


def test_lineage_falls_back_to_gate_tags_when_the_trail_has_no_decision() -> None:
    tags = {
        "mlops.dataset_digest": "d" * 64,
        "mlops.suite_version": "1.0.0",
        "mlops.git_commit": "abc",
        "mlops.kfp_run_id": "run-7",
        "mlops.gate.metrics.decision": "promote",
        "mlops.gate.metrics.reason": "auc fine",
        "mlops.decision": "promote",
    }
    text = "\n".join(lineage_lines("m", "champion", "1", tags, EVENTS))
    assert "code commit        abc" in text and "pipeline run       run-7" in text
    assert "metrics            promote  auc fine" in text and "overall            promote" in text
    assert "champion -> 1 at 2026-01-01T00:00 by bot: first" in text
    assert "signed             key (unsigned)" in text
