"""The request-log window's counters, in-process: bins, tails, categories, score bins, the estimate's
sums and the schema check, on hand-built profiles and Arrow tables (no model, no registry)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pytest

from mlops.model.reference_profile import Calibration, CategoricalProfile, NumericProfile, ReferenceProfile
from mlops.monitoring.request_window import (
    SCORE_BINS,
    Calibrator,
    CategoricalCounts,
    NumericCounts,
    WindowError,
    WindowScoreBins,
    add_table,
    check_schema,
    empty_summary,
    score_bin,
)

START, END = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)


def numeric(name: str, edges: tuple[float, ...] = (1.0, 2.0, 4.0)) -> NumericProfile:
    return NumericProfile(
        name=name,
        edges=edges,
        counts=(0,) * (len(edges) + 1),
        sums=(0.0,) * (len(edges) + 1),
        discrete=False,
        rows=0,
        missing=0,
        mean=0.0,
        std=1.0,
    )


def categorical(name: str) -> CategoricalProfile:
    return CategoricalProfile(name=name, categories=("a", "b"), counts=(1, 1), rows=2, missing=0)


def profile(calibration: Calibration | None = None) -> ReferenceProfile:
    return ReferenceProfile(
        created_at="2026-11-01T00:00:00+00:00",
        rows=2,
        numeric=(numeric("income"), numeric("age", (18.0, 65.0))),
        categorical=(categorical("region"),),
        score=numeric("prediction", (0.25, 0.5, 0.75)),
        calibration=calibration,
    )


ISOTONIC = Calibration(method="isotonic", edges=(0.3, 0.6), rates=(0.1, 0.5, 0.9), counts=(5, 5, 5))


# --- NumericCounts ------------------------------------------------------------------------------------


def test_numeric_values_are_counted_and_summed_per_bin_with_the_edge_in_the_lower_bin() -> None:
    counts = NumericCounts(numeric("income"))
    assert counts.counts.tolist() == [0, 0, 0, 0] and counts.sums.tolist() == [0.0] * 4
    counts.add(np.array([-1.0, 1.0, 1.5, 2.0, 4.0, 7.0, np.nan, np.nan]))
    assert counts.counts.tolist() == [2, 2, 1, 1]
    assert counts.sums.tolist() == [0.0, 3.5, 4.0, 7.0]
    assert (counts.rows, counts.missing) == (6, 2)
    # the tails of the Wasserstein integral outside [1, 4]: (1 - -1) + (1 - 1) below, 7 - 4 above
    assert (counts.below, counts.above) == (2.0, 3.0)


def test_numeric_counts_add_up_over_files_and_a_file_without_missing_values_counts_none() -> None:
    counts = NumericCounts(numeric("income"))
    counts.add(np.array([0.5, 3.0]))
    counts.add(np.array([np.nan, 5.0, 6.0]))
    assert counts.counts.tolist() == [1, 0, 1, 2]
    assert counts.sums.tolist() == [0.5, 0.0, 3.0, 11.0]
    assert (counts.rows, counts.missing) == (4, 1)
    assert (counts.below, counts.above) == (0.5, 3.0)
    # integers: a stored day summary writes counts.tolist() into its JSON, where they stay counts (2, not 2.0)
    assert counts.counts.dtype == np.int64 and json.dumps(counts.counts.tolist()) == "[1, 0, 1, 2]"


def test_values_all_inside_the_reference_range_have_no_tails() -> None:
    counts = NumericCounts(numeric("income"))
    counts.add(np.array([1.0, 2.5, 4.0]))
    assert (counts.below, counts.above) == (0.0, 0.0)
    assert counts.counts.tolist() == [1, 0, 2, 0]


# --- CategoricalCounts --------------------------------------------------------------------------------


def test_categories_are_counted_as_text_and_nulls_are_missing() -> None:
    counts = CategoricalCounts(categorical("region"))
    counts.add(pa.array(["a", "b", None, "a", "c"]))
    counts.add(pa.chunked_array([pa.array(["a", None]), pa.array([None, "b"])]))
    assert counts.counts == {"a": 3, "b": 2, "c": 1}
    assert (counts.rows, counts.missing) == (6, 3)


def test_a_number_read_as_a_category_is_counted_by_its_text() -> None:
    counts = CategoricalCounts(categorical("region"))
    counts.add(pa.array([1, 1, 2]))
    assert counts.counts == {"1": 2, "2": 1}


# --- Calibrator and score bins ------------------------------------------------------------------------


def test_without_a_calibration_map_scores_are_the_probabilities_in_one_bin() -> None:
    calibrate = Calibrator(None)
    scores = np.array([0.1, 0.9, 0.5])
    assert calibrate.bins == 1
    assert calibrate(scores) is scores
    groups = calibrate.bin_of(scores)
    assert groups.tolist() == [0, 0, 0] and groups.dtype == np.int64


def test_a_calibration_map_gives_each_score_its_rate_and_its_block_with_the_edge_in_the_upper_block() -> None:
    calibrate = Calibrator(ISOTONIC)
    scores = np.array([0.2, 0.3, 0.59, 0.6, 0.7])
    assert calibrate.bins == 3
    assert calibrate(scores).tolist() == [0.1, 0.5, 0.5, 0.9, 0.9]
    assert calibrate.bin_of(scores).tolist() == [0, 1, 1, 2, 2]


def test_score_bins_are_a_thousandth_wide_clipped_and_split_at_one_half() -> None:
    scores = np.array([-0.5, 0.0, 0.0015, 0.4999, 0.5, 0.5004, 0.999, 1.0, 2.0])
    assert SCORE_BINS == 1000
    assert score_bin(scores).tolist() == [0, 0, 1, 499, 500, 500, 999, 999, 999]


# --- WindowScoreBins -------------------------------------------------------------------------------------


def test_the_estimate_sums_expected_positives_negatives_and_correct_rows_per_score_bin() -> None:
    summary = WindowScoreBins()
    assert summary.positives.shape == summary.negatives.shape == (SCORE_BINS,)
    assert summary.joint.shape == (SCORE_BINS, 1)
    summary.add(np.array([0.2, 0.7, 0.5]), np.array([0.25, 0.75, 0.5]))
    assert summary.positives[[200, 700, 500]].tolist() == [0.25, 0.75, 0.5]
    assert summary.negatives[[200, 700, 500]].tolist() == [0.75, 0.25, 0.5]
    assert summary.positives.sum() == 1.5 and summary.negatives.sum() == 1.5
    # below 0.5 the prediction is negative (right with 1 - p), from 0.5 up positive (right with p)
    assert summary.correct == 0.75 + 0.75 + 0.5
    assert summary.rows == 3
    assert summary.joint.shape == (SCORE_BINS, 1)
    assert summary.joint[[200, 700, 500], 0].tolist() == [1, 1, 1] and summary.joint.sum() == 3


def test_the_joint_counts_widen_to_the_calibration_blocks_seen_and_keep_what_was_counted() -> None:
    summary = WindowScoreBins()
    summary.add(np.array([0.2]), np.array([0.1]))
    summary.add(np.array([0.2, 0.7]), np.array([0.1, 0.9]), np.array([0, 2]))
    assert summary.joint.shape == (SCORE_BINS, 3)
    assert summary.joint[200].tolist() == [2, 0, 0] and summary.joint[700].tolist() == [0, 0, 1]
    summary.add(np.array([0.7]), np.array([0.5]), np.array([1]))
    assert summary.joint.shape == (SCORE_BINS, 3)
    assert summary.joint[700].tolist() == [0, 1, 1] and summary.joint.sum() == 4
    assert summary.rows == 4


# --- the window ---------------------------------------------------------------------------------------


def test_an_empty_summary_has_a_counter_per_column_of_the_profile() -> None:
    reference = profile()
    summary = empty_summary(reference, START, END, "3")
    assert (summary.start, summary.end, summary.version, summary.rows, summary.files) == (
        START,
        END,
        "3",
        0,
        0,
    )
    assert [c.profile for c in summary.numeric] == list(reference.numeric)
    assert [c.profile for c in summary.categorical] == list(reference.categorical)
    assert summary.score.profile == reference.score and summary.score.rows == 0
    assert summary.estimate.rows == 0 and summary.other_versions == {}


def log_table(**override: pa.Array) -> pa.Table:
    columns = {
        "income": pa.array([0.5, None, 3.0], pa.float64()),
        "age": pa.array([20, 70, 30], pa.int64()),
        "region": pa.array(["a", "b", "a"]).dictionary_encode(),
        "prediction": pa.array([0.25, 0.75, 0.5], pa.float32()),
        "model_version": pa.array(["3", "3", "3"]),
        "timestamp": pa.array([START, START, START], pa.timestamp("us", tz="UTC")),
        "request_id": pa.array(["r1", "r2", "r3"]),
    }
    columns.update(override)
    return pa.table(columns)


def test_a_log_table_is_added_to_every_counter() -> None:
    summary = empty_summary(profile(), START, END, "3")
    add_table(summary, log_table(), Calibrator(None))
    add_table(summary, log_table(), Calibrator(None))
    income, age = summary.numeric
    assert income.counts.tolist() == [2, 0, 2, 0] and (income.rows, income.missing) == (4, 2)
    assert age.counts.tolist() == [0, 4, 2] and age.sums.tolist() == [0.0, 100.0, 140.0]
    assert summary.categorical[0].counts == {"a": 4, "b": 2}
    assert summary.score.counts.tolist() == [2, 2, 2, 0]
    assert summary.estimate.rows == 6 and summary.estimate.positives.sum() == 3.0
    assert summary.rows == 6


def test_a_calibration_map_calibrates_the_scores_and_groups_them_by_block() -> None:
    summary = empty_summary(profile(ISOTONIC), START, END, "3")
    add_table(summary, log_table(), Calibrator(ISOTONIC))
    assert summary.estimate.positives[[250, 500, 750]].tolist() == [0.1, 0.5, 0.9]
    assert summary.estimate.joint.shape == (SCORE_BINS, 3)
    assert summary.estimate.joint[250].tolist() == [1, 0, 0]
    assert summary.estimate.joint[500].tolist() == [0, 1, 0]
    assert summary.estimate.joint[750].tolist() == [0, 0, 1]


def test_a_plain_calibration_function_puts_every_score_in_one_block() -> None:
    summary = empty_summary(profile(), START, END, "3")
    add_table(summary, log_table(), lambda scores: np.full(len(scores), 0.25))
    assert summary.estimate.joint.shape == (SCORE_BINS, 1)
    assert summary.estimate.positives.sum() == 0.75 and summary.estimate.correct == 0.75 + 0.25 + 0.25


# --- check_schema -------------------------------------------------------------------------------------


def test_a_log_with_the_models_columns_and_types_passes_nulls_and_large_strings_included() -> None:
    check_schema(log_table(), profile(), "day.parquet")
    check_schema(
        log_table(
            income=pa.nulls(3),
            region=pa.array(["a", "b", "c"], pa.large_string()),
            model_version=pa.array(["3"] * 3).dictionary_encode(),
            prediction=pa.array([1, 0, 1], pa.int8()),
        ),
        profile(),
        "day.parquet",
    )
    check_schema(log_table(region=pa.nulls(3), model_version=pa.nulls(3)), profile(), "day.parquet")


def test_a_log_missing_columns_is_refused_naming_them_and_the_models_features() -> None:
    table = log_table().drop(["age", "timestamp"])
    with pytest.raises(WindowError) as caught:
        check_schema(table, profile(), "s3://logs/m/day.parquet")
    assert str(caught.value) == (
        "request log s3://logs/m/day.parquet does not match the model's schema: it lacks column(s) ['age', "
        "'timestamp'] (the model's features: ['income', 'age', 'region']). Check --model_name/--model_version, "
        "or that this log belongs to this model"
    )


@pytest.mark.parametrize(
    ("column", "array", "wanted"),
    [
        ("income", pa.array(["1", "2", "3"]), "numeric"),
        ("age", pa.array([True, False, True]), "numeric"),
        ("region", pa.array([1, 2, 3]), "text (categories)"),
        ("region", pa.array([1, 2, 3]).dictionary_encode(), "text (categories)"),
        ("prediction", pa.array(["0.1", "0.2", "0.3"]), "numeric (the model's score)"),
        ("timestamp", pa.array(["2026-11-01"] * 3), "a timestamp"),
        ("model_version", pa.array([3, 3, 3]), "text"),
    ],
)
def test_a_column_of_another_type_is_refused_naming_both_types(column, array, wanted) -> None:
    table = log_table(**{column: array})
    with pytest.raises(WindowError) as caught:
        check_schema(table, profile(), "day.parquet")
    assert str(caught.value) == (
        f"request log day.parquet column {column!r} is {table.schema.field(column).type}, but the model's column "
        f"is {wanted}; the log was not written by mlops serve for this model version (or was rewritten with "
        "other types): remove the file or rewrite the column with its logged type"
    )


def test_the_estimate_adds_up_over_files() -> None:
    summary = WindowScoreBins()
    summary.add(np.array([0.25]), np.array([0.5]))
    summary.add(np.array([0.25, 0.75]), np.array([0.25, 0.75]))
    assert summary.positives[[250, 750]].tolist() == [0.75, 0.75]
    assert summary.negatives[[250, 750]].tolist() == [1.25, 0.25]
    assert summary.correct == 0.5 + 0.75 + 0.75
    assert summary.rows == 3


def test_a_file_without_rows_adds_nothing() -> None:
    summary = WindowScoreBins()
    summary.add(np.array([]), np.array([]))
    assert summary.rows == 0 and summary.joint.shape == (SCORE_BINS, 1) and summary.joint.sum() == 0
    window = empty_summary(profile(), START, END, "3")
    add_table(window, log_table().slice(0, 0), Calibrator(None))
    assert window.rows == 0 and window.numeric[0].counts.tolist() == [0, 0, 0, 0]
