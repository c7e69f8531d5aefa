"""What one record holds and where it goes: the stored hash format, the values a caller passes, the time
zone, the location's precedence, and the retry when another writer takes the record's number.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mlops.governance import audit


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(audit.AUDIT_URI_ENV, raising=False)
    monkeypatch.setenv(audit.ACTOR_ENV, "ci")
    return tmp_path


def test_the_hash_is_sha256_of_the_documented_canonical_json() -> None:
    """Records already stored (immutable under S3 Object Lock) and evidence packs are checked against this
    form: sorted keys, no spaces, the ``hash`` field left out. A change of format breaks every old trail."""
    entry = {"seq": 1, "action": "a", "details": {"b": 1, "a": [1, "x y"]}, "hash": "left out"}
    canonical = b'{"action":"a","details":{"a":[1,"x y"],"b":1},"seq":1}'
    assert audit.content_hash(entry) == hashlib.sha256(canonical).hexdigest()


def test_values_that_are_not_json_are_stored_as_their_text(workspace: Path) -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    event = audit.record(
        "data.validated",
        "m/1",
        {"reference": Path("/data/ref.parquet"), "at": when},
        workspace_root=workspace,
    )
    assert event.details == {"reference": "/data/ref.parquet", "at": "2026-01-02 03:04:05+00:00"}
    assert audit.read_events(workspace)[0].details == event.details
    assert audit.verify(workspace).intact


def test_the_time_of_a_record_is_utc_with_its_offset(workspace: Path) -> None:
    before = datetime.now(UTC)
    event = audit.record("x", "y", workspace_root=workspace)
    at = datetime.fromisoformat(event.at)
    assert event.at.endswith("+00:00") and at.utcoffset() == timedelta(0)
    assert before <= at <= datetime.now(UTC)


def test_the_workspace_wins_over_the_tracking_store(workspace: Path) -> None:
    other = f"sqlite:///{workspace}/other/mlflow.db"
    expected = str(workspace / "mine" / audit.AUDIT_FILE)
    assert audit.audit_location(workspace / "mine", tracking_uri=other) == expected
    audit.record("x", "y", workspace_root=workspace / "mine", tracking_uri=other)
    assert (workspace / "mine" / audit.AUDIT_FILE).is_file() and not (workspace / "other").exists()


def test_events_are_read_from_beside_the_tracking_store(workspace: Path) -> None:
    uri = f"sqlite:///{workspace}/mlflow.db"
    audit.record("x", "y", tracking_uri=uri)
    assert [e.action for e in audit.read_events(tracking_uri=uri)] == ["x"]


def test_an_s3_location_is_a_trail_of_objects_and_anything_else_a_local_file(tmp_path: Path) -> None:
    assert audit._trail("s3://audit-bucket/audit/risk") == audit._S3Trail("s3://audit-bucket/audit/risk")
    local = str(tmp_path / "trail.jsonl")
    assert audit._trail(local) == audit._LocalTrail(Path(local))


class _RacingTrail:
    """A local trail where another writer stores each of the first ``losses`` numbers first."""

    def __init__(self, inner: audit._LocalTrail, losses: int, rival_writes: bool = True) -> None:
        self.inner, self.losses, self.rival_writes, self.attempts = inner, losses, rival_writes, 0

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self.inner.locked():
            yield

    def tip(self) -> tuple[int, str] | None:
        return self.inner.tip()

    def append(self, event: audit.AuditEvent) -> None:
        self.attempts += 1
        if self.attempts > self.losses:
            self.inner.append(event)
            return
        if self.rival_writes:
            entry = asdict(
                audit.AuditEvent("rival", "m/r", actor="other", seq=event.seq, prev_hash=event.prev_hash)
            )
            entry["hash"] = audit.content_hash(entry)
            self.inner.append(audit.AuditEvent(**entry))
        raise audit._Taken(str(event.seq))


def test_a_writer_that_loses_the_race_chains_to_the_winners_record(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    racing = _RacingTrail(audit._LocalTrail(workspace / audit.AUDIT_FILE), losses=2)
    monkeypatch.setattr(audit, "_trail", lambda location: racing)
    event = audit.record("gate.decided", "m/1", workspace_root=workspace)
    monkeypatch.undo()
    events = audit.read_events(workspace)
    assert [(e.action, e.seq) for e in events] == [("rival", 1), ("rival", 2), ("gate.decided", 3)]
    assert (event.seq, event.prev_hash) == (3, events[1].hash)
    assert racing.attempts == 3 and audit.verify(workspace).intact


def test_a_writer_that_loses_every_attempt_gives_up_saying_so(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    racing = _RacingTrail(audit._LocalTrail(workspace / audit.AUDIT_FILE), losses=10**6, rival_writes=False)
    monkeypatch.setattr(audit, "_trail", lambda location: racing)
    with pytest.raises(audit.AuditError) as gave_up:
        audit.record("gate.decided", "m/1", workspace_root=workspace)
    assert str(gave_up.value) == (
        f"could not append to {workspace / audit.AUDIT_FILE}: 50 attempts in a row lost the race to other "
        "writers; record again"
    )
    assert racing.attempts == audit.APPEND_ATTEMPTS == 50
