"""The suite runs one column at a time: what goes where, and that the results are the one-run results."""

from __future__ import annotations

import numpy as np
import pandas as pd

from components.data_validation.gx_run import column_batches, run_suite
from components.data_validation.suite import ExpectationSpec, Suite


def _suite() -> Suite:
    return Suite(
        name="batches",
        version="1.0.0",
        expectations=(
            ExpectationSpec(type="expect_table_row_count_to_be_between", kwargs={"min_value": 1}),
            ExpectationSpec(
                type="expect_column_values_to_not_be_null", kwargs={"column": "a", "mostly": 0.9}
            ),
            ExpectationSpec(
                type="expect_column_values_to_be_between",
                kwargs={
                    "column": "a",
                    "min_value": 0,
                    "max_value": 10,
                    "row_condition": 'b=="x"',
                    "condition_parser": "pandas",
                },
            ),
            ExpectationSpec(
                type="expect_column_values_to_be_in_set", kwargs={"column": "b", "value_set": ["x", "y"]}
            ),
            ExpectationSpec(type="expect_column_to_exist", kwargs={"column": "absent"}),
            ExpectationSpec(
                type="expect_column_values_to_be_between", kwargs={"column": "a", "max_value": 5}
            ),
        ),
    )


def test_each_column_alone_and_whatever_reads_more_on_the_whole_frame() -> None:
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
    assert column_batches(frame, _suite()) == [(None, [0, 2, 4]), (["a"], [1, 5]), (["b"], [3])]


def test_results_are_those_of_one_run_in_suite_order() -> None:
    frame = pd.DataFrame(
        {"a": [1.0, 2.0, np.nan, 7.0, 12.0] * 4, "b": pd.Series(["x", "y", "x", "z", "y"] * 4, dtype="str")}
    )
    checks = run_suite(frame, _suite(), per_column=True)
    assert checks == run_suite(frame, _suite(), per_column=False)
    assert [c.expectation for c in checks] == [s.type for s in _suite().expectations]
    assert [c.success for c in checks] == [True, False, True, False, False, False]
    assert checks[1].observed["unexpected_count"] == 4  # the NaNs
    assert checks[3].observed["unexpected_count"] == 4 and checks[3].observed["examples"] == ["z"]
    assert checks[5].observed["unexpected_count"] == 8  # 7 and 12, on every row of the column
