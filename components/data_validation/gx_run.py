"""Run a suite with Great Expectations 1.x and turn GE's results into :class:`CheckResult` rows.

Everything GE-specific lives here: the in-memory context (nothing is written to
the working directory), silencing its progress bars and log noise, the dtype
normalisation it needs on pandas 3, and reading observations out of its
result dictionaries.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from components.data_validation.check_results import CheckResult
from components.data_validation.numeric_cells import bad_cells
from components.data_validation.suite import ORDER_META_KEY, ExpectationSpec, Suite

if TYPE_CHECKING:
    import pandas as pd
    from great_expectations.core.expectation_validation_result import ExpectationValidationResult

MAX_EXAMPLES = 5
# Their GE observation is about values or numpy types; the pandas dtype is what a user can act on.
_TYPE_EXPECTATIONS = {"expect_column_values_to_be_in_type_list", "expect_column_values_to_be_of_type"}
PER_COLUMN_ROWS = 100_000
"""From this many rows the suite runs one column at a time (:func:`column_batches`); below it the
whole-frame copies cost less than a GE run per column (about 0.1 s each)."""
_NUMERIC_TYPES = {"int64", "int32", "int16", "int8", "float64", "float32", "int", "float"}


@contextmanager
def _quiet_gx() -> Iterator[None]:
    """Mute GE's INFO/WARNING chatter for one run, restoring the caller's logging setup afterwards."""
    logger = logging.getLogger("great_expectations")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"great_expectations(\.|$)")
            yield
    finally:
        logger.setLevel(level)


def gx_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Give GE numpy/object dtypes it can type-check.

    GE 1.24 cannot match pandas 3's default ``str`` dtype, ``category`` or the
    nullable ``Int64``/``Float64``/``boolean`` dtypes against any type name, so
    every such column would fail ``expect_column_values_to_be_in_type_list``.
    Strings become ``object`` (GE then checks each value is a ``str``);
    nullable numbers become their numpy dtype, or ``float64`` when they hold NA.
    """
    import numpy as np
    import pandas as pd

    out = None
    for column in frame.columns:
        series = frame[column]
        dtype = series.dtype
        if isinstance(dtype, pd.StringDtype | pd.CategoricalDtype):
            converted = series.astype(object)
        elif isinstance(dtype, pd.api.extensions.ExtensionDtype) and (
            pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)
        ):
            target = np.float64 if series.isna().any() else getattr(dtype, "numpy_dtype", np.float64)
            converted = pd.Series(series.to_numpy(dtype=target, na_value=np.nan), index=series.index)
        else:
            continue
        if out is None:
            out = frame.copy(deep=False)
        out[column] = converted
    return frame if out is None else out


def plain(value: Any) -> Any:
    """JSON-ready copy of a GE value: numpy scalars unwrapped, NaN/inf as None."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        try:
            value = value.item()
        except (TypeError, ValueError):
            return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _exception_message(info: Any) -> str | None:
    """GE reports errors either flat or keyed by metric id; return the first message of either shape."""
    if not isinstance(info, dict):
        return None
    if info.get("raised_exception"):
        return str(info.get("exception_message") or "unknown error")
    for nested in info.values():
        if isinstance(nested, dict) and nested.get("raised_exception"):
            return str(nested.get("exception_message") or "unknown error")
    return None


def _format_number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _observe(expectation: str, success: bool, result: dict[str, Any]) -> tuple[Any, str]:
    """What GE measured, as (plain value, words)."""
    if expectation == "expect_column_to_exist":
        return success, "column present" if success else "column missing"
    if "observed_value" in result:
        observed = plain(result["observed_value"])
        return observed, f"observed {_format_number(observed)}"
    if "unexpected_count" in result:
        count = int(result["unexpected_count"])
        total = int(result.get("element_count", 0))
        missing = int(result.get("missing_count") or 0)
        percent = float(result.get("unexpected_percent") or 0.0)
        examples = [
            plain(entry["value"])
            for entry in result.get("partial_unexpected_counts", [])[:MAX_EXAMPLES]
            if isinstance(entry, dict) and "value" in entry
        ]
        observed = {
            "unexpected_count": count,
            "unexpected_percent": round(percent, 4),
            "element_count": total,
            "missing_count": missing,
            "examples": examples,
        }
        if expectation == "expect_column_values_to_not_be_null":
            observed.pop("examples")
            return observed, f"{percent:.2f}% null ({count} of {total} rows)"
        nonnull = total - missing
        share = 100.0 * count / nonnull if nonnull else percent  # the true fraction, from the counts
        text = f"{count} of {nonnull} non-null values unexpected ({share:.2f}%)"
        if examples:
            text += ", e.g. " + ", ".join(repr(e) for e in examples)
        return observed, text
    return plain(result) or None, "passed" if success else "failed"


def _check(spec: ExpectationSpec, item: ExpectationValidationResult, frame: pd.DataFrame) -> CheckResult:
    success = bool(item.success)
    error = _exception_message(item.exception_info)
    if spec.column is not None and spec.column not in frame.columns and not success:
        # GE's own errors for a missing column range from clear to "list index out of range".
        observed, text = None, f"column {spec.column!r} does not exist in the data"
    elif error:
        observed, text = None, f"error: {error}"
    else:
        observed, text = _observe(spec.type, success, dict(item.result or {}))
        if spec.type in _TYPE_EXPECTATIONS and spec.column is not None:
            text += f"; column dtype {frame[spec.column].dtype}"
            if not success and _NUMERIC_TYPES & set(spec.kwargs.get("type_list") or ()):
                cells = bad_cells(frame[spec.column], spec.column)
                if cells.count:  # the values that made a numeric column text, not a sample of valid ones
                    text += f"; {cells.describe()}"
    return CheckResult(
        expectation=spec.type,
        column=spec.column,
        success=success,
        observed=observed,
        observed_text=text,
        kwargs=plain(spec.kwargs),
        notes=spec.notes,
    )


def column_batches(frame: pd.DataFrame, suite: Suite) -> list[tuple[list[str] | None, list[int]]]:
    """The suite split into GE runs: (columns of the frame, or None for all of them; expectation indices).

    GE's pandas engine filters the rows of the *whole* batch frame for each column metric (the
    non-null rows of that column, every column copied), so one run over a wide table costs its
    width times each expectation and, at 5M rows, peaks at several copies of the table. Each
    column's expectations therefore run on that column alone; anything that reads more than one
    column (no ``column``, a ``row_condition``, a column the frame lacks) runs on the whole frame,
    so every check sees exactly the values it saw in one run.
    """
    by_column: dict[str, list[int]] = {}
    whole: list[int] = []
    names = {str(c) for c in frame.columns}
    duplicated = bool(frame.columns.duplicated().any())
    for index, spec in enumerate(suite.expectations):
        column = spec.column
        if column is None or column not in names or "row_condition" in spec.kwargs or duplicated:
            whole.append(index)
        else:
            by_column.setdefault(column, []).append(index)
    batches: list[tuple[list[str] | None, list[int]]] = [(None, whole)] if whole else []
    return batches + [([column], indices) for column, indices in by_column.items()]


def run_suite(frame: pd.DataFrame, suite: Suite, per_column: bool | None = None) -> list[CheckResult]:
    """Validate ``frame`` with GE in an ephemeral context; one :class:`CheckResult` per expectation, in suite order.

    ``per_column`` (None: from :data:`PER_COLUMN_ROWS`): the expectations run in
    :func:`column_batches` (one GE run per column), each on its column converted by
    :func:`gx_frame` alone, so the peak memory is the table plus one column's copies; otherwise
    in one GE run over the whole frame. The results are the same either way.
    """
    if per_column is None:
        per_column = len(frame) >= PER_COLUMN_ROWS
    results: list[Any] = []
    with _quiet_gx():
        import great_expectations as gx
        from great_expectations.data_context.types.base import (
            DataContextConfig,
            InMemoryStoreBackendDefaults,
            ProgressBarsConfig,
        )

        config = DataContextConfig(
            store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
            analytics_enabled=False,
            progress_bars=ProgressBarsConfig(globally=False),
        )
        context = gx.get_context(mode="ephemeral", project_config=config)
        batch = (
            context.data_sources.add_pandas("data")
            .add_dataframe_asset("frame")
            .add_batch_definition_whole_dataframe("whole")
        )
        expectations = suite.to_gx()
        batches = column_batches(frame, suite) if per_column else [(None, list(range(len(expectations))))]
        for number, (columns, indices) in enumerate(batches):
            name = f"{suite.name}-{number}"
            gx_suite = context.suites.add(
                gx.ExpectationSuite(name=name, expectations=[expectations[i] for i in indices])
            )
            definition = context.validation_definitions.add(
                gx.ValidationDefinition(name=f"{name}-{suite.version}", data=batch, suite=gx_suite)
            )
            part = frame if columns is None else frame.loc[:, columns]
            outcome = definition.run(batch_parameters={"dataframe": gx_frame(part)}, result_format="SUMMARY")
            results.extend(outcome.results)

    checks: dict[int, CheckResult] = {}
    for item in results:
        if item.expectation_config is None:
            raise RuntimeError(
                "Great Expectations returned a result without its expectation; cannot report it"
            )
        order = int(item.expectation_config.meta[ORDER_META_KEY])
        checks[order] = _check(suite.expectations[order], item, frame)
    if len(checks) != len(suite.expectations):
        missing = [spec.type for i, spec in enumerate(suite.expectations) if i not in checks]
        raise RuntimeError(f"Great Expectations returned no result for {missing}")
    return [checks[order] for order in sorted(checks)]
