import json

import pytest

from mlops import audit


def test_record_appends_one_line_per_event_with_actor_time_and_links(tmp_path, monkeypatch):
    monkeypatch.delenv(audit.AUDIT_URI_ENV, raising=False)
    monkeypatch.setenv(audit.ACTOR_ENV, "alice")
    audit.record(
        "alias.moved",
        "m/2",
        {"alias": "champion", "from": "1", "to": "2"},
        links={"run": 7},
        workspace_root=tmp_path,
    )
    audit.record("gate.decided", "m/2", {"decision": "promote"}, workspace_root=tmp_path)
    lines = (tmp_path / audit.AUDIT_FILE).read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["action"] == "alias.moved" and first["actor"] == "alice" and first["links"] == {"run": "7"}
    events = audit.read_events(tmp_path)
    assert [e.action for e in events] == ["alias.moved", "gate.decided"]
    assert events[1].at >= events[0].at


def test_env_location_wins_and_missing_location_is_a_clear_error(tmp_path, monkeypatch):
    target = tmp_path / "elsewhere" / "trail.jsonl"
    monkeypatch.setenv(audit.AUDIT_URI_ENV, str(target))
    audit.record("retrain.triggered", "m", workspace_root=tmp_path / "ignored")
    assert target.is_file() and not (tmp_path / "ignored").exists()
    monkeypatch.delenv(audit.AUDIT_URI_ENV)
    with pytest.raises(ValueError, match="MLOPS_AUDIT_URI"):
        audit.record("x", "y")
