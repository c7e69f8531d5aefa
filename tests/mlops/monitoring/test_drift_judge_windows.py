"""The drift judge, in-process, at its edges: the window and the method. The window's bounds (ISO 8601
instants in UTC unless they name their zone, the 24 hours before ``until`` by default, an empty window
refused) and the method chosen by sample size (a test for small samples, a distance for large ones, a
named method and the setting that named it, few distinct values judged as categories), with the rule
each verdict states. The verdicts are in test_drift_judge_verdicts.py, the decision in
test_drift_judge_decisions.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from mlops.monitoring.drift_settings import DriftSettings, WindowSettings
from mlops.monitoring.feature_drift import choose_method, drifted_by, rule_text, small_sample
from mlops.monitoring.request_window import WindowError
from mlops.monitoring.window_span import parse_instant, window_bounds
from tests.mlops.monitoring.drift_judge_clock import NOW

SMALL = DriftSettings(small_sample_rows=10)


# --- the window ---------------------------------------------------------------------------------------


def test_an_instant_is_read_as_iso_8601_in_utc_unless_it_names_its_zone() -> None:
    assert parse_instant(" 2026-11-23T15:00:00Z ", "until") == NOW
    assert parse_instant("2026-11-23T15:00:00", "until") == NOW
    two = timezone(timedelta(hours=2))
    assert parse_instant("2026-11-23T17:00:00+02:00", "until") == datetime(2026, 11, 23, 17, tzinfo=two)
    assert parse_instant("2026-11-23T17:00:00+02:00", "until").utcoffset() == timedelta(hours=2)


@pytest.mark.parametrize("setting", ["since", "until"])
def test_a_bad_instant_is_refused_naming_the_setting_and_an_example(setting) -> None:
    with pytest.raises(WindowError) as caught:
        window_bounds(WindowSettings(**{setting: "yesterday"}), NOW)  # type: ignore[arg-type]
    assert (
        str(caught.value) == f"{setting} 'yesterday' is not an ISO 8601 time; use e.g. 2026-11-23T15:00:00Z"
    )


def test_the_window_defaults_to_the_24_hours_before_until_or_now() -> None:
    assert window_bounds(WindowSettings(), NOW) == (NOW - timedelta(hours=24), NOW)
    assert window_bounds(WindowSettings(until="2026-11-23T15:00:00Z"), NOW + timedelta(days=3)) == (
        NOW - timedelta(hours=24),
        NOW,
    )
    assert window_bounds(WindowSettings(since="2026-11-23T14:59:59Z"), NOW) == (
        NOW - timedelta(seconds=1),
        NOW,
    )
    start, end = window_bounds(WindowSettings())
    assert end - start == timedelta(hours=24) and abs(end - datetime.now(UTC)) < timedelta(minutes=1)


@pytest.mark.parametrize("since", ["2026-11-23T15:00:00Z", "2026-11-23T15:00:01Z"])
def test_a_window_that_does_not_start_before_it_ends_is_refused(since) -> None:
    with pytest.raises(WindowError) as caught:
        window_bounds(WindowSettings(since=since, until="2026-11-23T15:00:00Z"))
    start = parse_instant(since, "since")
    assert str(caught.value) == (
        f"since {start.isoformat()} is not before until 2026-11-23T15:00:00+00:00; the window is empty"
    )


# --- the method -----------------------------------------------------------------------------------------


def test_a_sample_is_small_when_the_fewer_values_are_at_most_small_sample_rows() -> None:
    assert small_sample(10, 5000, SMALL) and small_sample(5000, 10, SMALL)
    assert not small_sample(11, 11, SMALL)
    assert small_sample(1000, 1000, DriftSettings()) and not small_sample(1001, 5000, DriftSettings())


@pytest.mark.parametrize(
    ("categorical", "rows", "method", "why"),
    [
        (False, 10, "ks", "10 reference and 10 window values, the fewer at most drift.small_sample_rows 10"),
        (
            True,
            10,
            "chisquare",
            "10 reference and 10 window values, the fewer at most drift.small_sample_rows 10",
        ),
        (
            False,
            11,
            "wasserstein",
            "11 reference and 11 window values, both above drift.small_sample_rows 10",
        ),
        (
            True,
            11,
            "jensenshannon",
            "11 reference and 11 window values, both above drift.small_sample_rows 10",
        ),
    ],
)
def test_auto_chooses_a_test_for_small_samples_and_a_distance_for_large_ones(
    categorical, rows, method, why
) -> None:
    assert choose_method("f", categorical, rows, rows, SMALL, "numeric_method") == (
        method,
        True,
        f"auto: {why}",
    )


def test_a_named_method_is_used_at_every_size_and_says_which_setting_named_it() -> None:
    settings = DriftSettings(numeric_method="psi", feature_methods={"income": "wasserstein", "age": "auto"})
    assert choose_method("income", False, 5, 5, settings, "numeric_method") == (
        "wasserstein",
        False,
        "drift.feature_methods['income']",
    )
    assert choose_method("age", False, 5, 5, settings, "numeric_method") == (
        "psi",
        False,
        "drift.numeric_method",
    )
    categorical = DriftSettings(categorical_method="psi")
    assert choose_method("region", True, 5, 5, categorical, "categorical_method") == (
        "psi",
        False,
        "drift.categorical_method",
    )


@pytest.mark.parametrize(
    ("named", "method"), [("ks", "chisquare"), ("wasserstein", "jensenshannon"), ("psi", "jensenshannon")]
)
def test_a_numeric_method_on_few_distinct_values_judges_them_as_categories(named, method) -> None:
    settings = DriftSettings(numeric_method=named)
    assert choose_method("n", True, 5000, 5000, settings, "numeric_method") == (
        method,
        False,
        "drift.numeric_method (at most 5 distinct values: as categories)",
    )
    per_feature = DriftSettings(feature_methods={"n": named})  # named for the feature: used as named
    assert choose_method("n", True, 5000, 5000, per_feature, "numeric_method")[0] == named


def test_drift_is_a_p_value_below_its_threshold_or_a_distance_at_or_above_it_and_never_nan() -> None:
    assert drifted_by("ks", 0.049, 0.05) and not drifted_by("ks", 0.05, 0.05)
    assert drifted_by("chisquare", 0.01, 0.05) and not drifted_by("chisquare", 0.5, 0.05)
    assert drifted_by("wasserstein", 0.1, 0.1) and not drifted_by("wasserstein", 0.099, 0.1)
    assert drifted_by("psi", 0.2, 0.1) and drifted_by("jensenshannon", 0.1, 0.1)
    assert not drifted_by("ks", float("nan"), 0.05) and not drifted_by("wasserstein", float("nan"), 0.1)


def test_the_rule_says_what_drifts_and_what_chose_the_method() -> None:
    assert rule_text("ks", 0.05, "auto: x") == "ks p-value < 0.05 (auto: x)"
    assert rule_text("chisquare", 0.001, "s") == "chisquare p-value < 0.001 (s)"
    assert rule_text("wasserstein", 0.125, "drift.numeric_method") == (
        "wasserstein distance >= 0.125 (drift.numeric_method)"
    )
