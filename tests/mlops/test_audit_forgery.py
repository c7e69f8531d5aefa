"""Security properties of the audit trail: forgeries an attacker with write access to the file would try.

Each test is one forgery and names the check that catches it: the chain (a record edited and
re-hashed breaks the next record's ``prev_hash``), the head compared by hash as well as number (a
re-hashed forged last record), the sequence (reordered), and the head count (truncated). What a
local file cannot catch — a rewrite of every record and the head together — is stated, not hidden:
that is what S3 Object Lock is for (tests/mlops/test_audit_s3.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlops.governance import audit


def _trail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int = 4) -> Path:
    monkeypatch.delenv(audit.AUDIT_URI_ENV, raising=False)
    monkeypatch.setenv(audit.ACTOR_ENV, "ci")
    for n in range(1, count + 1):
        audit.record("alias.moved", f"m/{n}", {"alias": "champion", "to": str(n)}, workspace_root=tmp_path)
    return tmp_path / audit.AUDIT_FILE


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))


def _rehash(entry: dict) -> dict:
    entry = dict(entry)
    entry["hash"] = audit.content_hash(entry)
    return entry


def test_forgery_edited_record_with_recomputed_hash_is_caught_by_the_chain(tmp_path, monkeypatch):
    path = _trail(tmp_path, monkeypatch)
    records = _records(path)
    records[1] = _rehash({**records[1], "details": {"alias": "champion", "to": "9"}})
    _write(path, records)
    # The forged record's own hash checks out; only the chain to record 3 can tell.
    assert audit.content_hash(records[1]) == records[1]["hash"]
    problems = audit.verify(tmp_path).problems
    assert len(problems) == 1, problems
    assert problems[0].startswith("record 3 (line 3: alias.moved m/3") and "does not chain" in problems[0]


def test_forgery_edited_record_and_every_later_one_rehashed_is_caught_by_the_head(tmp_path, monkeypatch):
    path = _trail(tmp_path, monkeypatch)
    records = _records(path)
    records[1] = _rehash({**records[1], "details": {"alias": "champion", "to": "9"}})
    for i in (2, 3):  # the forger re-chains everything after the edit
        records[i] = _rehash({**records[i], "prev_hash": records[i - 1]["hash"]})
    _write(path, records)
    (problem,) = audit.verify(tmp_path).problems
    assert "ends at record 4 but its head records record 4" in problem and "replaced" in problem


def test_forgery_rehashed_last_record_is_caught_by_the_head_hash_not_just_its_number(tmp_path, monkeypatch):
    path = _trail(tmp_path, monkeypatch)
    records = _records(path)
    head_seq, head_hash = json.loads(path.with_name(path.name + audit.HEAD_SUFFIX).read_text()).values()
    forged = _rehash({**records[-1], "subject": "m/evil", "details": {"alias": "champion", "to": "666"}})
    assert forged["seq"] == head_seq and forged["prev_hash"] == records[-2]["hash"]  # chains perfectly
    _write(path, [*records[:-1], forged])
    (problem,) = audit.verify(tmp_path).problems
    assert problem == (
        f"the trail ends at record 4 but its head records record 4 (hash {head_hash[:12]}): "
        "the last record(s) after 4 were deleted or replaced"
    )


def test_forgery_reordered_records_are_named(tmp_path, monkeypatch):
    path = _trail(tmp_path, monkeypatch)
    records = _records(path)
    _write(path, [records[0], records[2], records[1], records[3]])
    problems = audit.verify(tmp_path).problems
    assert problems[0].startswith("record(s) 2 before record 3 (line 2") and "missing" in problems[0]
    assert any(p.startswith("record 2 (line 3") and "out of order" in p for p in problems), problems


def test_forgery_reordered_with_renumbered_sequence_is_caught_by_the_chain(tmp_path, monkeypatch):
    path = _trail(tmp_path, monkeypatch)
    records = _records(path)
    swapped = [records[0], {**records[2], "seq": 2}, {**records[1], "seq": 3}, records[3]]
    _write(path, [swapped[0], *(_rehash(r) for r in swapped[1:3]), swapped[3]])
    problems = audit.verify(tmp_path).problems
    assert [p.split(" (")[0] for p in problems] == ["record 2", "record 3", "record 4"], problems
    assert all("does not chain" in p for p in problems)


@pytest.mark.parametrize(
    ("kept", "expected"),
    [
        (slice(1, None), "record(s) 1 before record 2 (line 1"),  # the first record cut
        (slice(None, 3), "the trail ends at record 3 but its head records record 4"),  # the last cut
        (slice(None, 1), "the trail ends at record 1 but its head records record 4"),  # all but one
        (slice(0, 0), "the trail ends at record 0 but its head records record 4"),  # emptied
    ],
    ids=["first", "last", "tail", "all"],
)
def test_forgery_truncated_trail_is_named(tmp_path, monkeypatch, kept, expected):
    path = _trail(tmp_path, monkeypatch)
    _write(path, _records(path)[kept])
    problems = audit.verify(tmp_path).problems
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_a_full_rewrite_with_its_head_is_not_detectable_locally_and_says_so(tmp_path, monkeypatch):
    """The documented limit: whoever rewrites every record and the head leaves a consistent file."""
    path = _trail(tmp_path, monkeypatch, count=2)
    records = _records(path)
    records[1] = _rehash({**records[1], "details": {"to": "9"}})
    _write(path, records)
    path.with_name(path.name + audit.HEAD_SUFFIX).write_text(
        json.dumps({"seq": 2, "hash": records[1]["hash"]})
    )
    result = audit.verify(tmp_path)
    assert result.intact
    assert (
        result.protection.startswith("local file") and "nothing stops a rewrite of both" in result.protection
    )


def test_forgery_corrupted_lines_are_named_and_a_bare_record_is_still_read(tmp_path, monkeypatch):
    path = _trail(tmp_path, monkeypatch, count=2)
    records = _records(path)
    bare = {"seq": 3, "prev_hash": records[1]["hash"]}
    bare["hash"] = audit.content_hash(bare)  # only the three chain fields: still a record
    path.write_text(
        path.read_text() + "{not json\n" + json.dumps({"seq": 9}) + "\n" + json.dumps(bare) + "\n"
    )
    path.with_name(path.name + audit.HEAD_SUFFIX).write_text(json.dumps({"seq": 3, "hash": bare["hash"]}))
    result = audit.verify(tmp_path)
    assert result.problems == [
        "line 3 is not an audit record (edited or corrupted)",
        "line 4 is not an audit record (edited or corrupted)",
    ]
    assert result.records == 3 and result.location == str(path)


def test_forgery_messages_name_the_record_its_time_and_the_exact_gap(tmp_path, monkeypatch):
    path = _trail(tmp_path, monkeypatch, count=5)
    records = _records(path)
    _write(path, [records[0], records[3], records[4]])
    (problem,) = audit.verify(tmp_path).problems
    assert problem == (
        f"record(s) 2-3 before record 4 (line 2: alias.moved m/4 at {records[3]['at']}) are missing (deleted)"
    )
    _write(path, [records[0], records[1], records[3], records[2], records[4]])
    problems = audit.verify(tmp_path).problems
    assert (
        f"record 3 (line 4: alias.moved m/3 at {records[2]['at']}) is out of order: it comes after record 4 (reordered)"
        in problems
    )
    edited = {**records[4], "subject": "m/x"}
    _write(path, [*records[:4], edited])
    (problem,) = audit.verify(tmp_path).problems
    assert problem == (
        f"record 5 (line 5: alias.moved m/x at {records[4]['at']}) was edited: its content no longer matches "
        f"its hash {records[4]['hash'][:12]}"
    )


def test_verify_and_record_follow_a_sqlite_tracking_store(tmp_path, monkeypatch):
    monkeypatch.delenv(audit.AUDIT_URI_ENV, raising=False)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    audit.record("x", "y", tracking_uri=uri)
    result = audit.verify(tracking_uri=uri)
    assert result.intact and result.records == 1 and result.location == str(tmp_path / audit.AUDIT_FILE)


def test_a_deleted_head_is_rebuilt_from_the_last_record_and_the_chain_continues(tmp_path, monkeypatch):
    path = _trail(tmp_path, monkeypatch, count=3)
    last = _records(path)[-1]
    path.with_name(path.name + audit.HEAD_SUFFIX).unlink()
    event = audit.record("gate.decided", "m/4", workspace_root=tmp_path)
    assert (event.seq, event.prev_hash) == (4, last["hash"])
    assert audit.verify(tmp_path).intact
