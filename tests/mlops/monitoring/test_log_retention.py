"""The request log's retention limit: raw rows before the cutoff go, the day summaries keep a month's window.

Forty days of traffic are logged by the server's own writer (one file a day, named as the server names a
file written a minute after its rows); with a retention of 7 days the pass stores a summary for every day it
is about to delete, deletes those days' files, and the month-long check afterwards answers exactly what it
answered from the raw rows before.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from components.drift_monitor.monitor import check_window
from mlops.governance import audit
from mlops.monitoring.day_summaries import SUMMARIES_DIR, summary_uri
from mlops.monitoring.drift_result import DriftResult
from mlops.monitoring.drift_settings import DriftSettings, WindowSettings
from mlops.monitoring.judge import judge
from mlops.monitoring.log_retention import (
    RETENTION_ACTION,
    apply_retention,
    cutoff_of,
    record_retention,
)
from mlops.monitoring.logs import summarise
from mlops.monitoring.request_window import Calibrator, empty_summary
from tests.support.monitoring import MODEL, Monitored, monitored_model, traffic, write_log

T0 = datetime(2026, 9, 1, tzinfo=UTC)
DAYS = 40
ROWS = 150
NOW = T0 + timedelta(days=DAYS, hours=12)
CUTOFF = T0 + timedelta(days=DAYS - 7)
MONTH = (T0 + timedelta(days=DAYS - 30), NOW)
"""A month from a midnight: beyond the retention limit a window is answered in whole days (its summaries)."""


def stamped(paths: list[str], at: datetime) -> list[str]:
    """Rename the files the writer made to the name a server gives a file written at ``at``."""
    out = []
    for path in paths:
        name = Path(path).name
        rest = name.split("Z-", 1)[1]
        target = Path(path).with_name(f"requests-{at:%Y%m%dT%H%M%S%f}Z-{rest}")
        Path(path).rename(target)
        out.append(str(target))
    return out


@dataclass(frozen=True)
class OwnLog(Monitored):
    logs: str = ""

    @property
    def log_root(self) -> str:
        return self.logs


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Monitored:
    base = tmp_path_factory.mktemp("retention")
    model = monitored_model(base)
    for day in range(DAYS):
        at = T0 + timedelta(days=day, hours=12)
        frame = traffic(ROWS, seed=300 + day, drift=1.0 if day in (30, 36) else 0.0)
        stamped(
            write_log(model, frame, at, request_ids=[f"d{day}-{i}" for i in range(ROWS)]),
            at + timedelta(minutes=1),
        )
    return model


@pytest.fixture
def model(written: Monitored, tmp_path: Path) -> OwnLog:
    shutil.copytree(written.log_root, tmp_path / "request-logs")
    return OwnLog(written.workspace, written.onnx_dir, written.version, str(tmp_path / "request-logs"))


def from_raw_rows(model: Monitored) -> DriftResult:
    profile = model.store.reference_profile(MODEL, model.version)
    summary = empty_summary(profile, *MONTH, model.version)
    summarise(model.log_root, MODEL, summary, profile, Calibrator(profile.calibration))
    return judge(MODEL, profile, summary, DriftSettings())


def month_check(model: Monitored) -> DriftResult:
    window = WindowSettings(since=MONTH[0].isoformat(), until=MONTH[1].isoformat(), report_rows=0)
    return check_window(window, DriftSettings(), model.store, model.log_root, now=NOW).result


def test_a_month_window_is_answered_from_summaries_after_retention_deleted_its_rows(model: OwnLog) -> None:
    raw = from_raw_rows(model)
    # days 10-39; the drifted days 30 and 36 give a decision to compare
    assert raw.rows == 30 * ROWS and raw.decision == "retrain"
    profile = model.store.reference_profile(MODEL, model.version)
    retained = apply_retention(model.log_root, MODEL, profile, model.version, 7, NOW)
    assert retained is not None and retained.cutoff == CUTOFF
    assert len(retained.files_deleted) == DAYS - 7 and retained.rows_deleted == (DAYS - 7) * ROWS
    assert retained.files_rewritten == [] and retained.kept.conclusive
    assert retained.days_summarised == [f"{T0 + timedelta(days=d):%Y-%m-%d}" for d in range(DAYS - 7)]
    left = sorted(Path(model.log_root, MODEL).glob("requests-*.parquet"))
    assert len(left) == 7 and sum(pq.read_metadata(p).num_rows for p in left) == 7 * ROWS
    for day in range(DAYS - 7):  # every deleted day has its summary, naming its deleted file as expired
        stored = json.loads(
            Path(summary_uri(model.log_root, MODEL, model.version, T0 + timedelta(days=day))).read_text()
        )
        assert stored["files"] == [] and len(stored["expired"]) == 1 and stored["rows"] == ROWS

    merged = month_check(model)
    assert merged.rows == raw.rows and merged.rows_from_summaries >= (DAYS - 7 - 10) * ROWS
    assert merged.decision == raw.decision and merged.reasons == raw.reasons
    assert merged.drifted_features == raw.drifted_features
    for ours, theirs in zip(merged.features, raw.features, strict=True):
        assert ours.score == pytest.approx(theirs.score, rel=1e-9, abs=1e-12), ours.name
    assert merged.prediction_score == pytest.approx(raw.prediction_score, rel=1e-9)

    again = apply_retention(model.log_root, MODEL, profile, model.version, 7, NOW)  # nothing left to delete
    assert again is not None and again.rows_deleted == 0 and again.files_deleted == []


def test_the_cutoff_is_a_utc_midnight_and_zero_keeps_everything() -> None:
    assert cutoff_of(NOW, 0) is None
    assert cutoff_of(datetime(2026, 3, 10, 0, 0, tzinfo=UTC), 1) == datetime(2026, 3, 9, tzinfo=UTC)
    assert cutoff_of(datetime(2026, 3, 10, 23, 59, 59, tzinfo=UTC), 1) == datetime(2026, 3, 9, tzinfo=UTC)
    assert cutoff_of(datetime(2026, 3, 1, 5, tzinfo=UTC), 3) == datetime(2026, 2, 26, tzinfo=UTC)
    with pytest.raises(ValueError, match="retention_days is -1"):
        cutoff_of(NOW, -1)


def test_retention_zero_deletes_nothing(model: OwnLog) -> None:
    profile = model.store.reference_profile(MODEL, model.version)
    assert apply_retention(model.log_root, MODEL, profile, model.version, 0, NOW) is None
    assert len(list(Path(model.log_root, MODEL).glob("requests-*.parquet"))) == DAYS
    assert not list(Path(model.log_root).rglob(SUMMARIES_DIR))


def test_at_the_boundary_a_row_at_the_cutoff_stays_and_one_a_microsecond_earlier_goes(
    written: Monitored, tmp_path: Path
) -> None:
    logs = OwnLog(written.workspace, written.onnx_dir, written.version, str(tmp_path / "logs"))
    frame = traffic(10, seed=9)
    tick = timedelta(microseconds=1)
    early = stamped(
        write_log(logs, frame, CUTOFF - tick, request_ids=[f"e{i}" for i in range(10)]),
        CUTOFF + timedelta(minutes=5),
    )
    at_cutoff = stamped(
        write_log(logs, frame, CUTOFF, request_ids=[f"c{i}" for i in range(10)]),
        CUTOFF + timedelta(minutes=6),
    )
    whole = stamped(write_log(logs, frame, CUTOFF - timedelta(hours=1)), CUTOFF - tick)  # written just before
    later = stamped(write_log(logs, frame, CUTOFF + timedelta(hours=2)), CUTOFF + SETTLE_AND_MORE)
    profile = written.store.reference_profile(MODEL, written.version)
    retained = apply_retention(logs.log_root, MODEL, profile, written.version, 7, NOW)
    assert retained is not None and retained.cutoff == CUTOFF
    assert retained.files_deleted == whole and retained.files_rewritten == early
    assert retained.rows_deleted == 20
    assert pq.read_table(early[0]).num_rows == 0  # kept, empty: a summary that counted it stays current
    assert pq.read_table(at_cutoff[0]).column("request_id").to_pylist() == [f"c{i}" for i in range(10)]
    assert pq.read_table(later[0]).num_rows == 10


SETTLE_AND_MORE = timedelta(hours=3)


def test_the_pass_is_recorded_with_cutoff_and_counts(model: OwnLog) -> None:
    profile = model.store.reference_profile(MODEL, model.version)
    retained = apply_retention(model.log_root, MODEL, profile, model.version, 30, NOW)
    assert retained is not None and retained.rows_deleted == (DAYS - 30) * ROWS
    workspace = Path(model.log_root).parent
    record_retention(retained, str(workspace), model.version)
    (event,) = audit.read_events(workspace)
    assert event.action == RETENTION_ACTION and event.subject == f"{MODEL}/{model.version}"
    assert event.details["cutoff"] == (T0 + timedelta(days=DAYS - 30)).isoformat()
    assert event.details["rows_deleted"] == (DAYS - 30) * ROWS and event.details["files_deleted"] == DAYS - 30
    assert event.details["retention_days"] == 30 and event.details["locked"] == []
    assert audit.verify(workspace).intact


def test_a_negative_retention_setting_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="request_log_retention_days"):
        WindowSettings(request_log_retention_days=-1)


def test_a_locked_file_is_named_with_its_date_and_kept(
    written: Monitored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlops.storage import object_lock

    logs = OwnLog(written.workspace, written.onnx_dir, written.version, str(tmp_path / "logs"))
    frame = traffic(10, seed=11)
    old = T0 + timedelta(days=DAYS - 9, hours=12)
    locked = stamped(write_log(logs, frame, old), old + timedelta(minutes=1))
    free = stamped(write_log(logs, frame, old + timedelta(hours=1)), old + timedelta(hours=1, minutes=1))
    lock = object_lock.Retention(locked[0], "COMPLIANCE", "2027-01-01T00:00:00+00:00", False)
    monkeypatch.setattr(object_lock, "retention", lambda uri: lock if uri == locked[0] else None)
    profile = written.store.reference_profile(MODEL, written.version)
    retained = apply_retention(logs.log_root, MODEL, profile, written.version, 7, NOW)
    assert retained is not None and retained.kept.locked == [lock] and not retained.kept.conclusive
    assert retained.files_deleted == free and retained.rows_deleted == 10 and Path(locked[0]).is_file()
    assert retained.details()["locked"] == [
        {"uri": locked[0], "until": "2027-01-01T00:00:00+00:00", "legal_hold": False}
    ]


def test_no_row_is_deleted_when_a_summary_could_not_be_stored(
    written: Monitored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlops.monitoring import day_summaries

    logs = OwnLog(written.workspace, written.onnx_dir, written.version, str(tmp_path / "logs"))
    old = T0 + timedelta(days=DAYS - 9, hours=12)
    files = stamped(write_log(logs, traffic(10, seed=12), old), old + timedelta(minutes=1))
    monkeypatch.setattr(day_summaries, "store_day", lambda *args, **kwargs: None)  # a read-only summary store
    profile = written.store.reference_profile(MODEL, written.version)
    retained = apply_retention(logs.log_root, MODEL, profile, written.version, 7, NOW)
    assert retained is not None and retained.rows_deleted == 0 and retained.files_deleted == []
    (refusal,) = retained.kept.refused
    assert refusal.startswith(
        "no row was deleted: the summaries of 2 day(s) from 2026-10-02 could not be stored"
    )
    assert Path(files[0]).is_file()
