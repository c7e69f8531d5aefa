"""The registry lease, in-process: where it lives, what it holds, how long it waits, when it is broken.

A stand-in clock replaces the module's ``time`` (``monotonic`` and ``sleep`` advance together, ``time``
is a fixed wall clock), so the wait and the staleness are pinned at their edges without sleeping. The
lease file is real (a local audit trail in a temporary directory).
"""

from __future__ import annotations

import importlib
import json
import os
import socket
from pathlib import Path

import pytest

from mlops import storage
from mlops.governance.audit import AUDIT_URI_ENV, AuditError

lease_module = importlib.import_module("mlops.governance.lease")
lease = lease_module.lease

WALL = 1_000_000.0


class Clock:
    """``time`` for the lease module: a monotonic clock that only ``sleep`` moves, and a fixed wall clock."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.wall = WALL

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def time(self) -> float:
        return self.wall


@pytest.fixture
def clock(monkeypatch) -> Clock:
    stand_in = Clock()
    monkeypatch.setattr(lease_module, "time", stand_in)
    return stand_in


@pytest.fixture
def trail(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv(AUDIT_URI_ENV, raising=False)
    return tmp_path


def lease_file(workspace: Path, name: str) -> Path:
    return workspace / "audit.jsonl.leases" / f"{name}.json"


def hold(path: Path, body: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body if isinstance(body, str) else json.dumps(body))


def test_the_lease_is_a_file_beside_the_trail_holding_host_pid_and_time_and_is_removed_after(
    trail, clock
) -> None:
    path = lease_file(trail, "fraud-champion")
    with lease("fraud-champion", workspace_root=trail):
        assert json.loads(path.read_text()) == {
            "holder": f"{socket.gethostname()}:{os.getpid()}",
            "since": WALL,
        }
    assert not path.exists()
    assert clock.sleeps == []


def test_the_lease_is_removed_when_the_block_raises(trail, clock) -> None:
    with pytest.raises(RuntimeError, match="boom"), lease("m-champion", workspace_root=trail):
        raise RuntimeError("boom")
    assert not lease_file(trail, "m-champion").exists()


def test_the_lease_sits_beside_a_configured_trail_without_its_trailing_slash(
    tmp_path, monkeypatch, clock
) -> None:
    monkeypatch.setenv(AUDIT_URI_ENV, f"{tmp_path}/trail/")
    with lease("m-champion"):
        assert (tmp_path / "trail.leases" / "m-champion.json").is_file()
    assert not (tmp_path / "trail.leases" / "m-champion.json").exists()


def test_the_lease_of_a_sqlite_store_sits_in_its_workspace(trail, clock) -> None:
    with lease("m-champion", tracking_uri=f"sqlite:///{trail}/mlflow.db"):
        assert lease_file(trail, "m-champion").is_file()


def test_a_held_lease_is_waited_for_up_to_wait_s_then_refused_naming_the_file(
    trail, clock, monkeypatch
) -> None:
    path = lease_file(trail, "m-champion")
    hold(path, {"holder": "other:1", "since": WALL})
    attempts: list[str] = []
    create = storage.create_bytes

    def counting(uri: str, data: bytes) -> str:
        attempts.append(uri)
        return create(uri, data)

    monkeypatch.setattr(storage, "create_bytes", counting)
    with pytest.raises(AuditError) as caught, lease("m-champion", workspace_root=trail, wait_s=0.1):
        pytest.fail("the lease was taken while held")
    uri = str(path)
    assert str(caught.value) == (
        f"lease {uri} is held by another run for over 0 s; wait for it to finish, or delete {uri} if its holder "
        "is gone"
    )
    # tried at 0, 0.05 and 0.1 (not yet past the deadline), refused at 0.15
    assert attempts == [uri] * 4
    assert clock.sleeps == [0.05] * 3
    assert json.loads(path.read_text()) == {"holder": "other:1", "since": WALL}  # the holder's lease is kept


def test_the_default_wait_is_two_minutes(trail, clock) -> None:
    hold(lease_file(trail, "m-champion"), {"holder": "other:1", "since": WALL})
    with pytest.raises(AuditError, match="for over 120 s;"), lease("m-champion", workspace_root=trail):
        pytest.fail("the lease was taken while held")
    assert 120.0 < clock.now <= 120.1


def test_a_lease_released_while_waiting_is_taken(trail, clock, monkeypatch) -> None:
    path = lease_file(trail, "m-champion")
    hold(path, {"holder": "other:1", "since": WALL})
    sleep = clock.sleep

    def holder_lets_go(seconds: float) -> None:
        sleep(seconds)
        if len(clock.sleeps) == 2:
            path.unlink()

    monkeypatch.setattr(clock, "sleep", holder_lets_go)
    with lease("m-champion", workspace_root=trail):
        assert json.loads(path.read_text())["since"] == WALL
        assert json.loads(path.read_text())["holder"] != "other:1"
    assert clock.sleeps == [0.05, 0.05]


@pytest.mark.parametrize("age", [300.0, 299.5])
def test_a_lease_up_to_stale_s_old_is_not_broken(trail, clock, capsys, age) -> None:
    path = lease_file(trail, "m-champion")
    hold(path, {"holder": "other:1", "since": WALL - age})
    with pytest.raises(AuditError), lease("m-champion", workspace_root=trail, wait_s=0.0):
        pytest.fail("a live lease was broken")
    assert json.loads(path.read_text()) == {"holder": "other:1", "since": WALL - age}
    assert "breaking" not in capsys.readouterr().out


def test_a_lease_older_than_stale_s_is_broken_said_so_and_taken(trail, clock, capsys) -> None:
    path = lease_file(trail, "m-champion")
    since = WALL - 300.5
    hold(path, {"holder": "other-host:41", "since": since})
    with lease("m-champion", workspace_root=trail, wait_s=0.0):
        assert json.loads(path.read_text())["holder"] == f"{socket.gethostname()}:{os.getpid()}"
    assert capsys.readouterr().out == (
        f"breaking stale lease {path} held by other-host:41 since 1970-01-12T13:41:39.500000+00:00\n"
    )
    assert clock.sleeps == [0.05]
    assert not path.exists()


def test_stale_s_is_the_callers(trail, clock, capsys) -> None:
    path = lease_file(trail, "m-champion")
    hold(path, {"holder": "other:1", "since": WALL - 11})
    with pytest.raises(AuditError), lease("m-champion", workspace_root=trail, wait_s=0.0, stale_s=11):
        pytest.fail("a live lease was broken")
    with lease("m-champion", workspace_root=trail, wait_s=0.0, stale_s=10.5):
        pass
    assert "breaking stale lease" in capsys.readouterr().out


def test_a_lease_without_a_time_or_holder_counts_from_the_epoch(trail, clock, capsys) -> None:
    path = lease_file(trail, "m-champion")
    hold(path, {})
    with lease("m-champion", workspace_root=trail, wait_s=0.0):
        pass
    assert capsys.readouterr().out == (
        f"breaking stale lease {path} held by None since 1970-01-01T00:00:00+00:00\n"
    )


def test_a_lease_without_a_time_is_as_old_as_the_wall_clock(trail, clock, capsys) -> None:
    clock.wall = 301.5  # counted from 0 it is 301.5 s old; counted from 1 it would be 300.5 s old
    path = lease_file(trail, "m-champion")
    hold(path, {"holder": "h:1"})
    with lease("m-champion", workspace_root=trail, wait_s=0.0, stale_s=301.0):
        pass
    assert (
        capsys.readouterr().out
        == f"breaking stale lease {path} held by h:1 since 1970-01-01T00:00:00+00:00\n"
    )


def test_a_half_written_lease_is_waited_for_not_broken(trail, clock, capsys) -> None:
    path = lease_file(trail, "m-champion")
    hold(path, '{"holder": "oth')
    with pytest.raises(AuditError), lease("m-champion", workspace_root=trail, wait_s=0.05):
        pytest.fail("a half-written lease was taken")
    assert path.read_text() == '{"holder": "oth'
    assert capsys.readouterr().out == ""
    assert clock.sleeps == [0.05, 0.05]


def test_a_lease_gone_between_the_refusal_and_the_read_is_tried_again(trail, clock, monkeypatch) -> None:
    create = storage.create_bytes
    refused: list[str] = []

    def first_refused(uri: str, data: bytes) -> str:
        if not refused:
            refused.append(uri)
            raise storage.AlreadyExists(f"{uri} exists already")
        return create(uri, data)

    monkeypatch.setattr(storage, "create_bytes", first_refused)
    with lease("m-champion", workspace_root=trail, wait_s=1.0):
        assert lease_file(trail, "m-champion").is_file()
    assert refused == [str(lease_file(trail, "m-champion"))]
    assert clock.sleeps == [0.05]


class Log:
    """A stand-in ``sys.stdout`` that records what was written and when it was flushed."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def write(self, text: str) -> int:
        self.events.append(text)
        return len(text)

    def flush(self) -> None:
        self.events.append("<flush>")


def test_the_broken_lease_is_flushed_to_the_log_at_once(trail, clock, monkeypatch) -> None:
    """A pod's log is a pipe: unflushed, the line would show only when the run ends (or never, if it is killed)."""
    import sys

    hold(lease_file(trail, "m-champion"), {"holder": "h:1", "since": 0})
    log = Log()
    monkeypatch.setattr(sys, "stdout", log)
    with lease("m-champion", workspace_root=trail, wait_s=0.0):
        flushed = log.events[-1] == "<flush>"
    monkeypatch.undo()
    assert "".join(e for e in log.events if e != "<flush>").startswith("breaking stale lease ")
    assert flushed
