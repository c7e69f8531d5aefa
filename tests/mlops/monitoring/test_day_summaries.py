"""Daily summaries that merge: a window from stored days equals the window from its raw rows.

The request log is written by the server's own writer (six days of traffic, one of them
drifted, two with feedback labels); the window starts and ends inside a day, so a check has a
raw head, stored full days and a raw tail. The log is written once per module and every test
gets its own copy: the summaries one test stores are never read by another, so each test
decides alone, in any order. A day stored again during a check that served the other days from
summaries is read back and compared with the raw rows in the same test.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from components.drift_monitor.monitor import check_window
from mlops.monitoring.day_summaries import (
    DAY,
    SETTLE,
    plan_window,
    summary_uri,
)
from mlops.monitoring.drift_result import DriftResult
from mlops.monitoring.drift_settings import DriftSettings, WindowSettings
from mlops.monitoring.feedback import store_labels
from mlops.monitoring.judge import judge
from mlops.monitoring.logs import summarise
from mlops.monitoring.request_window import Calibrator, empty_summary
from tests.support.monitoring import MODEL, Monitored, monitored_model, traffic, write_log

T0 = datetime(2026, 10, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=20)
ROWS = 1500
START, END = T0 + timedelta(hours=6), T0 + timedelta(days=5, hours=12)
FULL_DAYS = [f"2026-10-0{d}" for d in (2, 3, 4, 5)]
LABELLED_DAYS = (2, 4)
"""Days whose feedback labels arrived: a stored day in the middle of the window and the last one."""


@dataclass(frozen=True)
class OwnLog(Monitored):
    """The module's model (its registry is only read) with a request log of the test's own."""

    logs: str = ""

    @property
    def log_root(self) -> str:
        return self.logs


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Monitored:
    """The model and its six days of log and labels, as written; never checked (tests check copies)."""
    base = tmp_path_factory.mktemp("days")
    model = monitored_model(base)
    for day in range(6):
        frame = traffic(ROWS, seed=70 + day, drift=1.0 if day == 3 else 0.0)
        ids = [f"d{day}-{i}" for i in range(ROWS)]
        # two files a day (morning and evening) so a day's rows span files
        half = ROWS // 2
        write_log(model, frame.iloc[:half], T0 + timedelta(days=day, hours=3), request_ids=ids[:half])
        write_log(model, frame.iloc[half:], T0 + timedelta(days=day, hours=20), request_ids=ids[half:])
        if day in LABELLED_DAYS:
            labels = frame[["default"]].rename(columns={"default": "label"}).assign(request_id=ids)
            labels.to_csv(base / f"labels-{day}.csv", index=False)
            store_labels(str(base / f"labels-{day}.csv"), model.log_root, MODEL)
    return model


@pytest.fixture
def model(written: Monitored, tmp_path: Path) -> OwnLog:
    """A fresh copy of the written log for this test alone: no stored summaries yet."""
    shutil.copytree(written.log_root, tmp_path / "request-logs")
    assert not list((tmp_path / "request-logs").rglob("_summaries"))
    return OwnLog(written.workspace, written.onnx_dir, written.version, str(tmp_path / "request-logs"))


def settings() -> WindowSettings:
    return WindowSettings(since=START.isoformat(), until=END.isoformat(), report_rows=0)


def from_raw_rows(model: Monitored) -> DriftResult:
    """The window streamed from every raw row (the path without summaries)."""
    profile = model.store.reference_profile(MODEL, model.version)
    summary = empty_summary(profile, START, END, model.version)
    summarise(model.log_root, MODEL, summary, profile, Calibrator(profile.calibration))
    return judge(MODEL, profile, summary, DriftSettings())


def check(model: Monitored) -> DriftResult:
    return check_window(settings(), DriftSettings(), model.store, model.log_root, now=NOW).result


def assert_same(merged: DriftResult, raw: DriftResult) -> None:
    assert merged.rows == raw.rows
    assert merged.decision == raw.decision and merged.reasons == raw.reasons
    assert merged.drifted_features == raw.drifted_features and merged.dataset_drift == raw.dataset_drift
    for ours, theirs in zip(merged.features, raw.features, strict=True):
        assert ours.name == theirs.name and ours.drifted == theirs.drifted
        assert ours.score == pytest.approx(theirs.score, rel=1e-9, abs=1e-12), ours.name
        assert ours.window_missing_rate == theirs.window_missing_rate
    assert merged.prediction_score == pytest.approx(raw.prediction_score, rel=1e-9)
    assert merged.estimated == pytest.approx(raw.estimated, rel=1e-9)
    assert merged.estimated_bands.keys() == raw.estimated_bands.keys()
    for metric, band in raw.estimated_bands.items():  # the same cells: the same bootstrap draws
        assert merged.estimated_bands[metric] == pytest.approx(band, rel=1e-9), metric
    assert merged.realised == raw.realised and merged.realised_bands == raw.realised_bands
    assert merged.other_versions == raw.other_versions


def test_a_window_from_stored_days_equals_the_window_from_raw_rows(model: Monitored) -> None:
    raw = from_raw_rows(model)
    assert raw.rows == 5 * ROWS  # day 0's evening file, days 1-4, day 5's morning file
    assert raw.drifted_features and raw.realised["labelled_rows"] == 2 * ROWS  # drift and labels to compare
    first = check(model)  # reads every row and stores the four settled full days
    assert first.rows_from_summaries == 0 and first.summary_days == []
    for day in FULL_DAYS:
        assert Path(summary_uri(model.log_root, MODEL, model.version, datetime.fromisoformat(day))).is_file()
    assert_same(first, raw)
    second = check(model)
    assert second.summary_days == FULL_DAYS and second.rows_from_summaries == 4 * ROWS
    assert_same(second, raw)


def test_a_log_file_of_a_stored_day_that_arrives_later_makes_the_day_read_again(model: Monitored) -> None:
    check(model)  # the days are stored
    late = traffic(300, seed=99)
    day = T0 + timedelta(days=2)
    (written,) = write_log(
        model, late, day + timedelta(hours=23), request_ids=[f"late-{i}" for i in range(300)]
    )
    # the server names a file by when it wrote it: this one was written within the day (SETTLE)
    path = Path(written)
    stamped = path.with_name(
        f"requests-{day + timedelta(hours=23, minutes=30):%Y%m%dT%H%M%S%f}Z-late.parquet"
    )
    os.rename(path, stamped)
    try:
        result = check(model)
        assert "2026-10-03" not in result.summary_days and len(result.summary_days) == 3
        assert result.rows == 5 * ROWS + 300
        assert_same(result, from_raw_rows(model))
        again = check(model)  # the day was stored again with the late file, beside three stored days
        assert again.summary_days == FULL_DAYS and again.rows_from_summaries == 4 * ROWS + 300
        assert_same(again, from_raw_rows(model))  # and reads back as its raw rows
    finally:
        stamped.unlink()
    removed = check(model)  # a file the stored day counted is gone: the day is read again
    assert "2026-10-03" not in removed.summary_days
    assert_same(removed, from_raw_rows(model))
    after = check(model)
    assert after.summary_days == FULL_DAYS and after.rows_from_summaries == 4 * ROWS
    assert_same(after, from_raw_rows(model))


def test_a_summary_binned_against_another_profile_is_not_used(model: Monitored) -> None:
    check(model)
    uri = Path(summary_uri(model.log_root, MODEL, model.version, T0 + timedelta(days=4)))
    stored = json.loads(uri.read_text())
    stored["profile"] = "0" * 16
    uri.write_text(json.dumps(stored))
    result = check(model)
    assert "2026-10-05" not in result.summary_days and len(result.summary_days) == 3
    assert_same(result, from_raw_rows(model))
    assert json.loads(uri.read_text())["profile"] != "0" * 16  # rewritten against the current profile
    again = check(model)  # the rewritten day, read back beside the three others
    assert again.summary_days == FULL_DAYS and again.rows_from_summaries == 4 * ROWS
    assert_same(again, from_raw_rows(model))


@pytest.mark.parametrize(
    ("after_settle", "settled"),
    [(timedelta(0), True), (-timedelta(microseconds=1), False), (timedelta(microseconds=1), True)],
)
def test_a_day_is_stored_once_it_ended_settle_ago(after_settle: timedelta, settled: bool) -> None:
    """At, just before and just after the day's end + SETTLE."""
    day = T0 + timedelta(days=1)
    plan = plan_window(
        T0 + timedelta(hours=6), day + DAY + timedelta(hours=2), day + DAY + SETTLE + after_settle
    )
    assert plan.days == ([day] if settled else [])
    head = (T0 + timedelta(hours=6), day)
    assert plan.raw == (
        [head, (day + DAY, day + DAY + timedelta(hours=2))]
        if settled
        else [(head[0], day + DAY + timedelta(hours=2))]
    )


def test_a_window_starting_at_midnight_has_no_raw_head() -> None:
    plan = plan_window(T0, T0 + 3 * DAY, NOW)
    assert plan.days == [T0, T0 + DAY, T0 + 2 * DAY] and plan.raw == []
