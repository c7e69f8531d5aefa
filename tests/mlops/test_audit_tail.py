"""A local trail whose head file is gone: the next record chains to the trail's last line, read from its tail.

``_LocalTrail.tip`` falls back to the file's last line when ``audit.jsonl.head`` is missing (deleted
by hand, or a writer stopped between the record and the head). The last line is read from the
last 64 KiB of the file, and from the whole file when that window holds no line break (a last
record larger than 64 KiB). Each test deletes the head, appends one record and checks that it
continues the chain: the right number and the last record's hash, so ``verify`` finds the trail intact.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlops.governance import audit

WINDOW = 1 << 16


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _trail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paddings: list[int]) -> Path:
    """One record per padding, each carrying that many characters of details."""
    monkeypatch.delenv(audit.AUDIT_URI_ENV, raising=False)
    monkeypatch.setenv(audit.ACTOR_ENV, "ci")
    for n, size in enumerate(paddings, start=1):
        audit.record("alias.moved", f"m/{n}", {"note": "x" * size}, workspace_root=tmp_path)
    path = tmp_path / audit.AUDIT_FILE
    path.with_name(path.name + audit.HEAD_SUFFIX).unlink()
    return path


def _appended_after(tmp_path: Path, path: Path) -> tuple[audit.AuditEvent, dict]:
    last = _records(path)[-1]
    event = audit.record("gate.decided", "m/next", workspace_root=tmp_path)
    return event, last


def test_a_trail_larger_than_the_window_chains_to_its_last_record(tmp_path, monkeypatch):
    path = _trail(tmp_path, monkeypatch, [30_000, 30_000, 30_000])
    assert path.stat().st_size > WINDOW and len(path.read_bytes().splitlines()[-1]) < WINDOW
    event, last = _appended_after(tmp_path, path)
    assert (event.seq, event.prev_hash) == (4, last["hash"])
    result = audit.verify(tmp_path)
    assert result.intact and result.records == 4


def test_a_last_record_larger_than_the_window_is_read_from_the_whole_file(tmp_path, monkeypatch):
    # The last line alone is longer than the window, so the window holds no line break; the file is
    # under two windows, so reading a fixed larger window would not hide a broken fallback.
    path = _trail(tmp_path, monkeypatch, [100, WINDOW + 4_000])
    size = path.stat().st_size
    assert len(path.read_bytes().splitlines()[-1]) > WINDOW + 4_000 and size < 2 * WINDOW
    event, last = _appended_after(tmp_path, path)
    assert (event.seq, event.prev_hash) == (3, last["hash"])
    assert audit.verify(tmp_path).intact


def test_a_single_record_larger_than_the_window_is_read_whole(tmp_path, monkeypatch):
    path = _trail(tmp_path, monkeypatch, [WINDOW + 10])
    assert len(path.read_bytes().splitlines()) == 1
    event, last = _appended_after(tmp_path, path)
    assert (event.seq, event.prev_hash) == (2, last["hash"])
    assert audit.verify(tmp_path).intact


def test_a_one_record_trail_chains_to_that_record(tmp_path, monkeypatch):
    # The whole file is the window: its first byte belongs to the record.
    path = _trail(tmp_path, monkeypatch, [10])
    event, last = _appended_after(tmp_path, path)
    assert (event.seq, event.prev_hash) == (2, last["hash"])
    assert audit.verify(tmp_path).intact


@pytest.mark.parametrize("blank", ["\n\n", "  \n\t\n", " "], ids=["empty", "whitespace", "unterminated"])
def test_blank_lines_after_the_last_record_are_skipped(tmp_path, monkeypatch, blank):
    """``verify`` reads past lines holding only whitespace; the tail must too, or the next record would
    restart at 1 and ``verify`` would call an intact trail reordered."""
    path = _trail(tmp_path, monkeypatch, [10, 10])
    with path.open("a") as handle:
        handle.write(blank)
    event, last = _appended_after(tmp_path, path)
    assert (event.seq, event.prev_hash) == (3, last["hash"])
    assert audit.verify(tmp_path).intact


def test_with_no_head_a_last_line_that_is_no_record_restarts_the_numbering_and_verify_names_it(
    tmp_path, monkeypatch
):
    """Nothing to chain to: the new record starts at 1 from the genesis hash, and ``verify`` reports both
    the unreadable line and the record out of order, so the break stays visible."""
    path = _trail(tmp_path, monkeypatch, [10])
    with path.open("a") as handle:
        handle.write(json.dumps({"seq": 7}) + "\n")
    event = audit.record("gate.decided", "m/next", workspace_root=tmp_path)
    assert (event.seq, event.prev_hash) == (1, audit.GENESIS)
    problems = audit.verify(tmp_path).problems
    assert problems[0] == "line 2 is not an audit record (edited or corrupted)"
    assert problems[1].startswith("record 1 (line 3: gate.decided m/next") and "out of order" in problems[1]
