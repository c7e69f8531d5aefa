"""serving.tensors at its edges (mutation testing): the code range, several categoricals, the
mask batch scoring reports, named-row encoding against training's FeatureSpec.encode, and the
binary extension's size parameters."""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

from mlops.data.features import FeatureSpec
from serving.errors import InvalidInput
from serving.tensors import FeatureBounds, RowEncoder, binary_size, from_binary, split_binary

SPEC = FeatureSpec(
    numeric=("age", "income"),
    medians=(40.0, 1.0),
    means=(40.0, 1.0),
    stds=(10.0, 1.0),
    categorical=("region", "plan"),
    vocabularies=(("east", "north", "west"), ("a", "b", "c", "d", "e", "f", "g")),
    label="default",
    protected=("gender",),
    ignored=("customer_id",),
)
BOUNDS = FeatureBounds(SPEC)
NUMERIC_ONLY = FeatureSpec(numeric=("age", "income"), medians=(0.0, 0.0), means=(0.0, 0.0), stds=(1.0, 1.0))


def refused(bounds: FeatureBounds, values: list[list[float]]) -> str:
    with pytest.raises(InvalidInput) as info:
        bounds.admit(np.array(values, dtype=np.float64), "input 'features'")
    return info.value.message


# --- FeatureBounds.admit --------------------------------------------------------------------------


def test_every_code_from_zero_to_the_vocabulary_size_is_admitted_in_each_categorical() -> None:
    rows = [[1.0, 2.0, code, min(code, 7)] for code in range(4)] + [[1.0, 2.0, 3, 7]]
    x = BOUNDS.admit(np.array(rows), "input")
    np.testing.assert_array_equal(x[:, 2:], np.array(rows)[:, 2:])


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ([1, 2, 4, 1], "row 0, feature 'region' (column 2) is 4, which is not a code"),
        ([1, 2, 1, 8], "row 0, feature 'plan' (column 3) is 8, which is not a code"),
        ([1, 2, 1, -1], "row 0, feature 'plan' (column 3) is -1, which is not a code"),
        ([1, 2, 1, 0.5], "row 0, feature 'plan' (column 3) is 0.5, which is not a code"),
    ],
)
def test_a_code_just_outside_its_own_vocabulary_is_refused(row: list[float], message: str) -> None:
    assert message in refused(BOUNDS, [row])


def test_the_refusal_lists_the_first_six_codes_and_says_when_there_are_more() -> None:
    short = refused(BOUNDS, [[1, 2, 9, 1]])
    assert short.endswith(
        "send an integer from 0 (missing or unknown) to 3 (1='east', 2='north', 3='west'; all codes are in "
        "the model metadata)"
    )
    long = refused(BOUNDS, [[1, 2, 1, 9]])
    assert long.endswith(
        "to 7 (1='a', 2='b', 3='c', 4='d', 5='e', 6='f', ...; all codes are in the model metadata)"
    )


def test_six_codes_are_listed_without_an_ellipsis() -> None:
    six = FeatureBounds(SPEC.model_copy(update={"vocabularies": (("x",), tuple("abcdef"))}))
    assert "(1='a', 2='b', 3='c', 4='d', 5='e', 6='f'; all codes" in refused(six, [[1, 2, 1, 7]])


def test_the_first_bad_value_in_row_order_is_named() -> None:
    message = refused(BOUNDS, [[1, 2, 1, 1], [1, 2, 1, 9], [1, 2, 5, 1]])
    assert message.startswith("input 'features': row 1, feature 'plan' (column 3) is 9")
    message = refused(BOUNDS, [[1, 2, 1, 1], [1, 2, 1, 1], [np.inf, 2, 1, 1]])
    assert message.startswith("input 'features': row 2, feature 'age' (column 0) is inf")


@pytest.mark.parametrize(
    ("value", "shown"),
    [(9_999_999_999_999_998.0, "9999999999999998"), (1e16, "1e+16"), (-3.0, "-3"), (12.25, "12.25")],
)
def test_a_refused_value_is_shown_as_the_client_wrote_it(value: float, shown: str) -> None:
    assert f"feature 'region' (column 2) is {shown}, which is not a code" in refused(
        BOUNDS, [[1, 2, value, 1]]
    )


def test_without_categoricals_any_finite_number_and_nan_are_admitted() -> None:
    values = np.array([[-7.5, np.nan], [1e30, 0.5]])
    x = FeatureBounds(NUMERIC_ONLY).admit(values, "input")
    assert x.dtype == np.float32
    np.testing.assert_array_equal(x, values.astype(np.float32))
    assert "feature 'income' (column 1) is -inf" in refused(FeatureBounds(NUMERIC_ONLY), [[1, -np.inf]])


def test_float32_input_is_used_as_it_is_when_there_is_nothing_to_change() -> None:
    values = np.array([[41.0, 2.0, 1.0, 7.0]], dtype=np.float32)
    assert BOUNDS.admit(values, "input") is values


def test_missing_codes_in_read_only_bytes_are_replaced_in_a_copy() -> None:
    raw = np.array([[1, np.nan, np.nan, 2], [3, 4, 1, np.nan]], dtype="<f4").tobytes()
    values = from_binary(raw, "FP32", 2, 4, "input")
    x = BOUNDS.admit(values, "input")
    assert x.flags.writeable and not values.flags.writeable
    np.testing.assert_array_equal(x[:, 2:], [[0, 2], [1, 0]])
    assert np.isnan(x[0, 1]), "a missing numeric stays missing: the model imputes it"
    assert np.isnan(values[0, 2]) and np.isnan(values[1, 3])


def test_an_fp32_overflow_is_refused_quietly_not_with_a_numpy_warning_per_request() -> None:
    values = np.array([[1e300, 2.0, 1, 1], [-1e300, 2.0, 1, 1]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning here would be a log line per bad request
        with pytest.raises(InvalidInput, match="is 1e\\+300, which is not a finite FP32"):
            BOUNDS.admit(values, "input")
        np.testing.assert_array_equal(BOUNDS.inadmissible(values)[:, 0], [True, True])


# --- FeatureBounds.inadmissible -------------------------------------------------------------------


def test_inadmissible_marks_every_value_admit_refuses_and_nothing_else() -> None:
    values = np.array(
        [
            [1.0, np.nan, 0, 7],  # all admitted (NaN numeric is missing, codes 0 and 7 exist)
            [np.inf, 1e300, np.nan, 3],  # inf and an FP32 overflow; a missing code
            [1.0, 2.0, 4, 8],  # one past each vocabulary
            [1.0, 2.0, -1, 1.5],  # negative, not an integer
            [1.0, 2.0, np.inf, 1],  # a non-finite code
        ]
    )
    expected = np.array(
        [
            [False, False, False, False],
            [True, True, False, False],
            [False, False, True, True],
            [False, False, True, True],
            [False, False, True, False],
        ]
    )
    np.testing.assert_array_equal(BOUNDS.inadmissible(values), expected)
    for row, marked in zip(values, expected, strict=True):
        if marked.any():
            with pytest.raises(InvalidInput):
                BOUNDS.admit(row[None, :], "input")
        else:
            BOUNDS.admit(row[None, :], "input")


def test_inadmissible_without_categoricals_marks_only_non_finite_numbers() -> None:
    values = np.array([[-1.0, 2.5], [np.nan, -np.inf], [1e300, 3.0]])
    marked = FeatureBounds(NUMERIC_ONLY).inadmissible(values)
    np.testing.assert_array_equal(marked, [[False, False], [False, True], [True, False]])


# --- RowEncoder -----------------------------------------------------------------------------------


ROWS: list[dict[str, Any]] = [
    {"age": 41, "income": 2.5, "region": "north", "plan": "g"},
    {"age": None, "income": 0, "region": None, "plan": "zzz"},
    {"plan": "a", "region": "west", "income": -1.5, "age": 30.0},
]


def test_named_rows_encode_exactly_like_training() -> None:
    out = RowEncoder(SPEC).encode(ROWS)
    assert out.dtype == np.float64 and out.shape == (3, 4)
    expected = SPEC.encode(pd.DataFrame(ROWS))
    np.testing.assert_array_equal(out.astype(np.float32), expected)
    np.testing.assert_array_equal(out[:, 2:], [[2, 7], [0, 0], [3, 1]])
    assert np.isnan(out[1, 0]) and out[1, 1] == 0.0


def test_a_category_is_matched_by_its_text() -> None:
    spec = SPEC.model_copy(update={"vocabularies": (("1", "2", "3"), tuple("abcdefg"))})
    out = RowEncoder(spec).encode([{"age": 1, "income": 2, "region": 3, "plan": "b"}])
    np.testing.assert_array_equal(out[0, 2:], [3, 2])


def test_a_data_rows_label_protected_and_ignored_columns_are_dropped() -> None:
    row = {**ROWS[0], "default": 1, "gender": "f", "customer_id": "c-17"}
    np.testing.assert_array_equal(RowEncoder(SPEC).encode([row]), RowEncoder(SPEC).encode([ROWS[0]]))


@pytest.mark.parametrize(
    ("value", "shown"), [(True, "True"), ("41", "'41'"), ([41], "[41]")], ids=["bool", "text", "list"]
)
def test_a_numeric_feature_that_is_not_a_number_is_refused(value: Any, shown: str) -> None:
    with pytest.raises(InvalidInput) as info:
        RowEncoder(SPEC).encode([ROWS[0], {**ROWS[0], "income": value}])
    assert info.value.message == f"instance 1 feature 'income' is {shown}; it must be a number"


def test_an_unknown_feature_is_refused_naming_what_may_be_sent() -> None:
    with pytest.raises(InvalidInput) as info:
        RowEncoder(SPEC).encode([{**ROWS[0], "colour": "red"}])
    assert info.value.message == (
        "instance 0 has unknown feature(s) ['colour']; this model takes exactly "
        "['age', 'income', 'region', 'plan']; ['customer_id', 'default', 'gender'] may be sent and are ignored"
    )
    with pytest.raises(InvalidInput) as info:
        RowEncoder(NUMERIC_ONLY).encode([{"age": 1, "income": 2, "colour": "red"}])
    assert (
        info.value.message
        == "instance 0 has unknown feature(s) ['colour']; this model takes exactly ['age', 'income']"
    )


def test_a_row_lacking_a_feature_is_refused_naming_it() -> None:
    with pytest.raises(InvalidInput) as info:
        RowEncoder(SPEC).encode([{"age": 41, "income": 2.5, "region": "north"}])
    assert info.value.message == (
        "instance 0 lacks feature(s) ['plan']; send all of ['age', 'income', 'region', 'plan'] "
        "(null for a missing value)"
    )


def test_a_null_category_is_missing_even_where_the_vocabulary_holds_the_text_none() -> None:
    # A column whose values include the string "None" (no discount, no plan...): null is still code 0.
    spec = SPEC.model_copy(update={"vocabularies": (("None", "north"), tuple("abcdefg"))})
    rows = [{**ROWS[0], "region": None}, {**ROWS[0], "region": "None"}]
    out = RowEncoder(spec).encode(rows)
    np.testing.assert_array_equal(out[:, 2], [0, 1])
    np.testing.assert_array_equal(out.astype(np.float32), spec.encode(pd.DataFrame(rows)))


def test_a_missing_feature_is_refused_even_when_the_row_has_as_many_columns() -> None:
    swapped = {"age": 41, "income": 2.5, "region": "north", "default": 0}  # four names, 'plan' not among them
    with pytest.raises(InvalidInput) as info:
        RowEncoder(SPEC).encode([ROWS[0], swapped])
    assert info.value.message == (
        "instance 1 lacks feature(s) ['plan']; send all of ['age', 'income', 'region', 'plan'] "
        "(null for a missing value)"
    )


# --- the binary extension -------------------------------------------------------------------------


def test_split_binary_accepts_every_header_length_up_to_the_body() -> None:
    body = b'{"a":1}\x00\x01'
    assert split_binary(body, "0") == (b"", body)
    assert split_binary(body, str(len(body))) == (body, b"")
    assert split_binary(body, "7") == (b'{"a":1}', b"\x00\x01")


@pytest.mark.parametrize("header", ["10", "-1", "7 ", "x", "²", ""])
def test_split_binary_refuses_a_length_that_is_not_a_byte_count_within_the_body(header: str) -> None:
    with pytest.raises(InvalidInput) as info:
        split_binary(b'{"a":1}\x00\x01', header)
    assert info.value.message == (
        f"Inference-Header-Content-Length is {header!r} but the body has 9 bytes; "
        "it must be the byte length of the JSON header that starts the body"
    )


@pytest.mark.parametrize(
    ("parameters", "size"),
    [
        (None, None),
        ({}, None),
        ({"binary_data_size": None}, None),
        ({"binary_data_size": 0}, 0),
        ({"binary_data_size": 24, "x": 1}, 24),
    ],
)
def test_binary_size_reads_the_parameter_when_there_is_one(parameters: object, size: int | None) -> None:
    assert binary_size(parameters, "input 'features'") == size


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ([24], "input 'features' 'parameters' must be an object, got list"),
        ("24", "input 'features' 'parameters' must be an object, got str"),
        ({"binary_data_size": -1}, "input 'features' binary_data_size is -1; it must be a byte count (>= 0)"),
        (
            {"binary_data_size": True},
            "input 'features' binary_data_size is True; it must be a byte count (>= 0)",
        ),
        (
            {"binary_data_size": 2.0},
            "input 'features' binary_data_size is 2.0; it must be a byte count (>= 0)",
        ),
        (
            {"binary_data_size": "24"},
            "input 'features' binary_data_size is '24'; it must be a byte count (>= 0)",
        ),
    ],
)
def test_binary_size_refuses_what_is_not_a_byte_count(parameters: object, message: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(message)):
        binary_size(parameters, "input 'features'")


@pytest.mark.parametrize("datatype", ["FP32", "FP64"])
def test_from_binary_reads_little_endian_rows(datatype: str) -> None:
    values = np.array([[1.5, -2.0, 3.25], [4.0, np.nan, 6.0]])
    raw = values.astype("<f4" if datatype == "FP32" else "<f8").tobytes()
    out = from_binary(raw, datatype, 2, 3, "input")
    assert out.shape == (2, 3) and out.dtype.itemsize == (4 if datatype == "FP32" else 8)
    np.testing.assert_array_equal(out, values)


def test_from_binary_names_the_size_it_needs() -> None:
    with pytest.raises(InvalidInput) as info:
        from_binary(b"\0" * 20, "FP32", 2, 3, "input 'features'")
    assert info.value.message == (
        "input 'features' carries 20 bytes of binary data; shape [2, 3] of FP32 needs 24 "
        "(4 bytes per value, little-endian, row-major)"
    )
