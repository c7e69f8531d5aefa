import json
import shutil

import pytest

from mlops.governance import audit


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


def _three(tmp_path, monkeypatch):
    monkeypatch.delenv(audit.AUDIT_URI_ENV, raising=False)
    for n in range(1, 4):
        audit.record("alias.moved", f"m/{n}", {"to": str(n)}, workspace_root=tmp_path)
    return tmp_path / audit.AUDIT_FILE


def test_records_are_chained_and_verify_passes(tmp_path, monkeypatch):
    path = _three(tmp_path, monkeypatch)
    events = audit.read_events(tmp_path)
    assert [e.seq for e in events] == [1, 2, 3]
    assert events[0].prev_hash == audit.GENESIS
    assert [e.prev_hash for e in events[1:]] == [e.hash for e in events[:2]]
    assert all(
        audit.content_hash(json.loads(line)) == e.hash
        for line, e in zip(path.read_text().splitlines(), events, strict=True)
    )
    result = audit.verify(tmp_path)
    assert result.intact and result.records == 3


def test_verify_names_an_edited_record(tmp_path, monkeypatch):
    path = _three(tmp_path, monkeypatch)
    lines = path.read_text().splitlines()
    lines[1] = lines[1].replace('"to": "2"', '"to": "9"')
    path.write_text("\n".join(lines) + "\n")
    problems = audit.verify(tmp_path).problems
    assert len(problems) == 1
    assert problems[0].startswith("record 2 (line 2: alias.moved m/2 at ") and "was edited" in problems[0]


def test_verify_names_a_deleted_record_and_a_deleted_last_record(tmp_path, monkeypatch):
    path = _three(tmp_path, monkeypatch)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[2]]) + "\n")
    (problem,) = audit.verify(tmp_path).problems
    assert problem.startswith("record(s) 2 before record 3 (line 2") and "missing (deleted)" in problem
    path.write_text("\n".join(lines[:2]) + "\n")
    (problem,) = audit.verify(tmp_path).problems
    assert "ends at record 2 but its head records record 3" in problem


def test_verify_names_reordered_records(tmp_path, monkeypatch):
    path = _three(tmp_path, monkeypatch)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[2], lines[1]]) + "\n")
    problems = audit.verify(tmp_path).problems
    assert any("record 2 (line 3" in p and "out of order" in p for p in problems), problems


def test_a_trail_cut_short_keeps_recording_and_the_gap_stays_visible(tmp_path, monkeypatch):
    path = _three(tmp_path, monkeypatch)
    path.write_text("\n".join(path.read_text().splitlines()[:2]) + "\n")
    event = audit.record("gate.decided", "m/4", workspace_root=tmp_path)
    assert event.seq == 4
    assert any("record(s) 3 before record 4" in p for p in audit.verify(tmp_path).problems)


def test_secrets_never_enter_a_record(tmp_path, monkeypatch):
    monkeypatch.delenv(audit.AUDIT_URI_ENV, raising=False)
    monkeypatch.setenv("DB_PASSWORD", "hunter2-planted")
    audit.record(
        "registered",
        "m/1",
        {"auth_token": "abc", "note": "connect with hunter2-planted", "nested": [{"api_key": "k"}]},
        workspace_root=tmp_path,
    )
    text = (tmp_path / audit.AUDIT_FILE).read_text()
    assert "hunter2-planted" not in text and '"abc"' not in text and '"k"' not in text
    assert audit.read_events(tmp_path)[0].details["note"] == "connect with [redacted]"
    assert audit.verify(tmp_path).intact


def test_cli_verify_prints_whole_sentences_and_counts_the_signed_cards(tmp_path, monkeypatch, capsys):
    from cli.main import main
    from mlops.governance.manifest_signing import sign_folder
    from mlops.governance.signing import generate_key_pair

    monkeypatch.delenv(audit.AUDIT_URI_ENV, raising=False)
    private = generate_key_pair(tmp_path / "keys")[0]
    for n in (1, 2):
        card = tmp_path / f"card-{n}"
        card.mkdir()
        (card / "model_card.json").write_text(f'{{"version": {n}}}')
        signed = sign_folder(card, private)
        details = {"folder": str(card), "files": signed.files, "manifest_sha256": signed.manifest_sha256}
        audit.record("card.signed", f"m/{n}", details, workspace_root=tmp_path)
    shutil.rmtree(tmp_path / "card-2")  # moved away: counted, not checked
    assert main(["--workspace", str(tmp_path), "audit", "verify"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"audit trail       {tmp_path / audit.AUDIT_FILE}",
        "records           2",
        "protection        local file: the head detects a deleted last record; nothing stops a rewrite of both",
        "signed cards      1 compared with the files the trail recorded; 1 moved or deleted (not checked)",
        "verdict           intact: every record's hash and the chain check out, and every signed card still on "
        "disk is unchanged since signing",
    ]
    (tmp_path / "card-1" / "model_card.json").write_text('{"version": 9}')
    assert main(["--workspace", str(tmp_path), "audit", "verify"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[3:5] == [
        "signed cards      1 compared with the files the trail recorded; 1 moved or deleted (not checked)",
        "verdict           TAMPERED: 1 problem(s)",
    ]
    assert out[5].startswith("  - record 1 (card.signed m/1): model_card.json was edited after signing")


def test_location_follows_a_sqlite_tracking_store(tmp_path, monkeypatch):
    monkeypatch.delenv(audit.AUDIT_URI_ENV, raising=False)
    audit.record("x", "y", tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    assert audit.read_events(tmp_path)[0].action == "x"


def test_cli_verify_exit_codes(tmp_path, monkeypatch, capsys):
    from cli.main import main

    path = _three(tmp_path, monkeypatch)
    assert main(["--workspace", str(tmp_path), "audit", "verify"]) == 0
    assert "intact" in capsys.readouterr().out
    path.write_text(path.read_text().replace('"m/1"', '"m/7"'))
    assert main(["--workspace", str(tmp_path), "audit", "verify"]) == 1
    out = capsys.readouterr().out
    assert "TAMPERED: 1 problem(s)" in out and "record 1 (line 1: alias.moved m/7" in out
