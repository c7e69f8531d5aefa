"""Two processes appending to one audit trail at once: an intact chain, no fork, no lost record.

Local file (``flock``) and S3 on a real Ceph RGW (one object per record). Each writer is a separate
process started with ``spawn`` and released at the same instant; afterwards the trail holds every
record each writer was told it wrote, numbered 1..N with no sequence number or previous hash used
twice. What was lost is reported (asserted to be nothing).
"""

from __future__ import annotations

import multiprocessing
import os
from collections import Counter
from typing import Any

import pytest

from mlops.governance import audit

WRITERS = 2


def _writer(location: str, env: dict[str, str], worker: int, count: int, go: Any, done: Any) -> None:
    os.environ.update(env)
    os.environ[audit.AUDIT_URI_ENV] = location
    from mlops.storage import s3 as s3_store

    s3_store._bucket_region.cache_clear()
    go.wait(60)
    written: list[int] = []
    try:
        for n in range(count):
            written.append(audit.record("concurrency.append", f"writer-{worker}/{n}", {"n": n}).seq)
    except Exception as exc:  # reported to the test, which fails naming it
        done.put((worker, f"writer {worker} failed after {len(written)} records: {exc!r}"))
        return
    done.put((worker, written))


def race(location: str, per_writer: int, env: dict[str, str] | None = None) -> dict[int, list[int]]:
    """Run the writers together; return each writer's acknowledged sequence numbers."""
    context = multiprocessing.get_context("spawn")
    go, done = context.Event(), context.Queue()
    writers = [
        context.Process(target=_writer, args=(location, env or {}, w, per_writer, go, done))
        for w in range(WRITERS)
    ]
    for process in writers:
        process.start()
    go.set()
    results = dict(done.get(timeout=600) for _ in writers)
    failures = [r for r in results.values() if isinstance(r, str)]
    assert not failures, failures
    for process in writers:
        process.join(timeout=60)
        assert process.exitcode == 0
    return results


def check_nothing_lost(acknowledged: dict[int, list[int]], per_writer: int) -> None:
    events = audit.read_events()
    result = audit.verify()
    expected = {f"writer-{w}/{n}" for w in range(WRITERS) for n in range(per_writer)}
    subjects = Counter(e.subject for e in events)
    lost = expected - set(subjects)
    duplicated = {s: c for s, c in subjects.items() if c > 1}
    forks = {h: c for h, c in Counter(e.prev_hash for e in events).items() if c > 1}
    print(
        f"audit race: {len(events)} records, lost {len(lost)}, duplicated {len(duplicated)}, forks {len(forks)}"
    )
    assert not lost, f"records acknowledged but lost: {sorted(lost)[:10]}"
    assert not duplicated and not forks, (duplicated, forks)
    assert [e.seq for e in events] == list(range(1, WRITERS * per_writer + 1))
    assert sorted(seq for seqs in acknowledged.values() for seq in seqs) == [e.seq for e in events]
    assert result.intact, result.problems


def test_two_processes_appending_to_a_local_trail_lose_nothing(tmp_path, monkeypatch) -> None:
    location = str(tmp_path / "audit.jsonl")
    monkeypatch.setenv(audit.AUDIT_URI_ENV, location)
    acknowledged = race(location, per_writer=150)
    check_nothing_lost(acknowledged, per_writer=150)


@pytest.mark.remote_tracking
def test_two_processes_appending_to_an_s3_trail_lose_nothing(rgw, monkeypatch) -> None:
    from mlops.storage import s3 as s3_store

    for name, value in rgw.env.items():
        monkeypatch.setenv(name, value)
    s3_store._bucket_region.cache_clear()
    location = f"s3://{rgw.bucket}/audit-race"
    monkeypatch.setenv(audit.AUDIT_URI_ENV, location)
    acknowledged = race(location, per_writer=25, env=rgw.env)
    check_nothing_lost(acknowledged, per_writer=25)


def test_create_bytes_refuses_a_second_writer_of_one_local_name(tmp_path) -> None:
    from mlops import storage

    target = str(tmp_path / "0000000001.json")
    storage.create_bytes(target, b"first")
    with pytest.raises(storage.AlreadyExists, match="exists already"):
        storage.create_bytes(target, b"second")
    assert (tmp_path / "0000000001.json").read_bytes() == b"first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0000000001.json"]  # no staging file left
