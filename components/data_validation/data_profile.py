"""Profile a table and propose its declaration: a schema file and an expectation suite.

Great Expectations 1.x has no profiler (0.x's ``UserConfigurableProfiler`` and Data
Assistants were removed in 1.0), so the suite is built here from the data's own
statistics, as GX 1.x expectation configurations (``type`` + ``kwargs``) that
:meth:`Suite.to_gx` turns into GX expectation classes — GX checks every one before
the file is written. Both files are proposals meant to be read, edited and versioned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from components.data_validation.column_findings import (
    high_cardinality_finding,
    is_date_column,
    leak_finding,
    near_constant_finding,
    single_feature_auc,
)
from components.data_validation.config import ProfileSettings
from components.data_validation.numeric_cells import BadCells, bad_cells, coerce_numeric
from components.data_validation.suite import ExpectationSpec, Suite
from components.data_validation.suite_scope import TEXT_AS_MISSING
from mlops.data.dataset import DatasetError, DatasetSchema, label_text, read_missing
from mlops.data.schema_file import SchemaFile

if TYPE_CHECKING:
    import pandas as pd

COMMON_MISSING_MARKERS = (
    "?",
    "-",
    "--",
    "NA",
    "N/A",
    "n/a",
    "na",
    "NaN",
    "nan",
    "null",
    "NULL",
    "None",
    "#N/A",
    "unknown",
    "Unknown",
    "UNKNOWN",
    "",
)
"""Cell values that mean "unknown" in exported tables; detected when a column holds one of them
("" is a cell of blanks only: an empty cell is always missing). Listed for the user to confirm."""
OBVIOUS_POSITIVE = ("1", "true", "yes", "y", "positive", "pos")
"""Label values taken as the positive class without --positive (case-insensitive)."""
ID_NAME_HINTS = ("id", "uuid", "guid", "key", "index", "row")
RANGE_MARGIN = 0.1
"""Numeric ranges are widened by this share of the observed span on each side."""
NULL_MARGIN = 0.02
"""A column may have this much more missing share than observed (plus as much again)."""
LABEL_BALANCE_MARGIN = 0.1
"""The positive share may move this far (absolute) from the observed share."""
MAX_CATEGORY_SHARE = 0.5
"""A text column with more distinct values than this share of rows is free text: ignored."""


@dataclass
class Profile:
    """What ``data init`` found, for the files and for the console."""

    schema: SchemaFile
    suite: Suite
    rows: int
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Findings the user should decide on: leaks, near-constant and high-cardinality columns, bad cells."""
    leaks: list[str] = field(default_factory=list)
    """Features whose single-feature ROC AUC is above ``profile.leak_auc`` (each also a warning)."""
    table: pd.DataFrame | None = None
    """The prepared table (declared columns, markers as missing, label 0/1): what further checks read."""


def detect_missing_markers(frame: pd.DataFrame) -> tuple[str, ...]:
    """The common missing-value markers that occur as whole cells (whitespace stripped) in text columns."""
    import pandas as pd

    found: set[str] = set()
    for col in frame.columns:
        series = frame[col]
        if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            continue
        values = set(series.dropna().astype(str).str.strip().unique())
        found |= values & set(COMMON_MISSING_MARKERS)
    return tuple(sorted(found))


def positive_value(values: list[str], given: str | None, label: str) -> tuple[str, str]:
    """(positive, negative) label values; ``given`` names the positive one, else an obvious value does."""
    if len(values) != 2:
        raise DatasetError(
            f"label {label!r} has {len(values)} distinct value(s) {values[:10]}; a binary classifier needs "
            "exactly two. Pick another --label or recode the column."
        )
    if given is not None:
        text = label_text(given)
        if text not in values:
            raise DatasetError(
                f"--positive {given!r} is not a value of label {label!r}; its values are {values}"
            )
        return text, next(v for v in values if v != text)
    obvious = [v for v in values if v.lower() in OBVIOUS_POSITIVE]
    if len(obvious) != 1:
        raise DatasetError(
            f"label {label!r} has values {values}; say which one is the positive class with --positive VALUE"
        )
    return obvious[0], next(v for v in values if v != obvious[0])


def _is_id_like(series: pd.Series, name: str, rows: int) -> bool:
    import pandas as pd

    if rows < 2 or series.isna().any() or series.nunique() != rows:
        return False
    if pd.api.types.is_float_dtype(series):
        return False  # a continuous measurement is unique per row without being an identifier
    if not pd.api.types.is_integer_dtype(series):
        return True  # text unique per row: an identifier (or free text), never a feature
    words = name.lower().replace("-", "_").split("_")
    consecutive = int(series.max()) - int(series.min()) == rows - 1
    return consecutive or any(hint in words for hint in ID_NAME_HINTS)


@dataclass
class Roles:
    """Each column's role as proposed, and why."""

    numeric: list[str] = field(default_factory=list)
    categorical: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    bad: dict[str, BadCells] = field(default_factory=dict)
    """Mostly-numeric columns: their cells that are not numbers."""


def column_roles(
    frame: pd.DataFrame,
    label: str,
    protected: tuple[str, ...],
    settings: ProfileSettings | None = None,
    skip: tuple[str, ...] = (),
) -> Roles:
    """The role of every column but the label, the protected and the ``skip`` ones."""
    import pandas as pd

    settings = settings or ProfileSettings()
    roles = Roles()
    rows = len(frame)
    for col in frame.columns:
        if col == label or col in protected or col in skip:
            continue
        series = frame[col]
        if series.notna().sum() == 0 or series.nunique(dropna=True) <= 1:
            roles.ignored.append(col)
            roles.notes.append(f"{col}: ignored, a single value (or none) in every row")
        elif is_date_column(series, settings.date_share):
            example = series.dropna().astype(str).iloc[0]
            roles.ignored.append(col)
            roles.notes.append(
                f"{col}: ignored, dates/timestamps (e.g. {example!r}); to use it, derive a feature from it "
                "(a month, an age in days) and declare that column"
            )
        elif _is_id_like(series, str(col), rows):
            roles.ignored.append(col)
            roles.notes.append(f"{col}: ignored, unique per row (an identifier)")
        elif pd.api.types.is_bool_dtype(series):
            roles.categorical.append(col)
        elif pd.api.types.is_numeric_dtype(series) or _mostly_numeric(
            series, col, settings.numeric_share, roles
        ):
            roles.numeric.append(col)
        elif series.nunique() > MAX_CATEGORY_SHARE * rows:
            roles.ignored.append(col)
            roles.notes.append(
                f"{col}: ignored, {series.nunique()} distinct texts in {rows} rows (free text)"
            )
        else:
            roles.categorical.append(col)
    return roles


def _mostly_numeric(series: pd.Series, col: str, share: float, roles: Roles) -> bool:
    """Whether a text column is numbers with a few bad cells (recorded in ``roles.bad``)."""
    cells = bad_cells(series, col)
    present = int(series.notna().sum())
    numbers = present - cells.count
    if numbers == 0 or numbers / present < share:
        return False
    roles.bad[col] = cells
    return True


def _round_down(value: float) -> float:
    return float(f"{math.floor(value * 1e4) / 1e4:.4f}")


def _numeric_expectations(series: pd.Series, col: str) -> list[ExpectationSpec]:
    low, high = float(series.min()), float(series.max())
    span = high - low or abs(high) or 1.0
    min_value = low - RANGE_MARGIN * span
    if low >= 0 > min_value:
        min_value = 0.0  # a non-negative quantity stays non-negative
    max_value = high + RANGE_MARGIN * span
    if series.dtype.kind in "iu":
        min_value, max_value = math.floor(min_value), math.ceil(max_value)
    return [
        ExpectationSpec(
            type="expect_column_values_to_be_in_type_list",
            kwargs={"column": col, "type_list": ["int64", "int32", "int16", "int8", "float64", "float32"]},
        ),
        ExpectationSpec(
            type="expect_column_values_to_be_between",
            kwargs={"column": col, "min_value": _plain(min_value), "max_value": _plain(max_value)},
            notes=f"observed {low:g} to {high:g}, widened by {RANGE_MARGIN:.0%} of the span",
        ),
    ]


def _plain(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(float(value), 6)


def _column_expectations(
    table: pd.DataFrame, schema: DatasetSchema, bad: dict[str, BadCells] | None = None
) -> list[ExpectationSpec]:
    import pandas as pd

    specs: list[ExpectationSpec] = []
    for col in (*schema.features, *schema.protected_attributes):
        series = table[col]
        specs.append(ExpectationSpec(type="expect_column_to_exist", kwargs={"column": col}))
        null_share = float(series.isna().mean())
        mostly = _round_down(max(0.0, 1.0 - 2 * null_share - NULL_MARGIN))
        cells = (bad or {}).get(col)
        text_cells = f", of which {cells.describe()} (read as missing)" if cells else ""
        specs.append(
            ExpectationSpec(
                type="expect_column_values_to_not_be_null",
                kwargs={"column": col, "mostly": mostly},
                notes=f"observed {null_share:.2%} missing{text_cells}",
                meta={TEXT_AS_MISSING: True} if cells else {},
            )
        )
        numeric_protected = (
            col in schema.protected_attributes
            and pd.api.types.is_numeric_dtype(series)
            and not pd.api.types.is_bool_dtype(series)
        )
        # A numeric protected attribute (an age) gets a range: its seen values are not the only allowed ones.
        if col in schema.numeric_features or numeric_protected:
            specs += _numeric_expectations(series.dropna(), col)
        else:
            values = sorted(series.dropna().unique().tolist(), key=str)
            specs.append(
                ExpectationSpec(
                    type="expect_column_values_to_be_in_set",
                    kwargs={"column": col, "value_set": values},
                    notes=f"the {len(values)} categories observed; an unseen one is encoded as missing",
                )
            )
    return specs


def build_suite(
    table: pd.DataFrame, schema: DatasetSchema, name: str, bad: dict[str, BadCells] | None = None
) -> Suite:
    """Expectations for the prepared table (markers read as missing, label 0/1) as GX 1.x configurations."""
    rows = len(table)
    positive_share = float(table[schema.label].mean())
    specs = [
        ExpectationSpec(
            type="expect_table_row_count_to_be_between",
            kwargs={"min_value": max(1, rows // 2), "max_value": rows * 100},
            notes=f"profiled on {rows} rows; fewer than half as many is likely a truncated extract",
        ),
        ExpectationSpec(type="expect_column_to_exist", kwargs={"column": schema.label}),
        ExpectationSpec(
            type="expect_column_values_to_be_in_set",
            kwargs={"column": schema.label, "value_set": [0, 1]},
            notes=f"1 = {schema.positive_label!r}, 0 = {schema.negative_label!r}",
        ),
        ExpectationSpec(
            type="expect_column_mean_to_be_between",
            kwargs={
                "column": schema.label,
                "min_value": round(max(0.0, positive_share - LABEL_BALANCE_MARGIN), 4),
                "max_value": round(min(1.0, positive_share + LABEL_BALANCE_MARGIN), 4),
            },
            notes=f"share of {schema.positive_label!r}: observed {positive_share:.2%}",
        ),
        *_column_expectations(table, schema, bad),
    ]
    return Suite(
        name=name,
        version="1.0.0",
        description=f"Proposed by `mlops data init` from {rows} rows: types, null rates, ranges, categories, "
        "row count and label balance. Review, edit, and bump the version on every change.",
        expectations=tuple(specs),
    )


def profile(
    frame: pd.DataFrame,
    label: str,
    *,
    name: str,
    positive: str | None = None,
    protected: tuple[str, ...] = (),
    favourable: Literal["positive", "negative"] = "negative",
    suite_file: str = "",
    ignore: tuple[str, ...] = (),
    repeated: dict[str, str] | None = None,
    settings: ProfileSettings | None = None,
    subjects: tuple[str, ...] = (),
) -> Profile:
    """Declare ``frame``: column roles, missing markers, label values, and the suite the data passes.

    ``ignore`` names columns the user drops (``subjects``, those of them that identify the person, noted as
    such); ``repeated`` maps the names pandas gave repeated
    header names (``x.1``) to the name they repeat (ignored, with a note).
    """
    settings = settings or ProfileSettings()
    columns = [str(c) for c in frame.columns]
    unknown = [c for c in (label, *protected, *ignore) if c not in columns]
    if unknown:
        raise DatasetError(f"column(s) {unknown} not in the data; its columns are {columns}")
    clash = [c for c in ignore if c == label or c in protected]
    if clash:
        raise DatasetError(f"--ignore {clash}: the label and protected attributes cannot be ignored")
    if frame.empty:
        raise DatasetError("the data has no rows; profile a file with data")
    repeats = {m: o for m, o in (repeated or {}).items() if m in columns and m not in (label, *protected)}
    skip = (*ignore, *repeats)
    markers = detect_missing_markers(frame.drop(columns=list(skip)))
    # Columns read as text only because of a marker become numbers, as validate-data reads them.
    table = read_missing(frame, markers, numeric=tuple(c for c in columns if c != label))
    values = sorted({label_text(v) for v in table[label].dropna()})
    pos, neg = positive_value(values, positive, label)
    roles = column_roles(table, label, protected, settings, skip)
    notes = [f"{c}: ignored, as --ignore asked" for c in ignore if c not in subjects]
    notes += [f"{c}: ignored, the subject key (an identifier is never a model input)" for c in subjects]
    notes += [
        f"{m}: ignored, a repeat of column name {o!r} in the header (pandas renamed it)"
        for m, o in repeats.items()
    ]
    notes += roles.notes
    if not roles.numeric and not roles.categorical:
        raise DatasetError(f"no usable feature columns besides label {label!r} (ignored: {roles.ignored})")
    dropped = set(skip) | set(roles.ignored)
    schema = SchemaFile(
        label=label,
        positive_label=pos,
        negative_label=neg,
        favourable_class=favourable,
        numeric_features=tuple(roles.numeric),
        categorical_features=tuple(roles.categorical),
        protected_attributes=protected,
        ignored_columns=tuple(c for c in columns if c in dropped),
        missing_values=markers,
        expectation_suite=suite_file,
    )
    coerced, _ = coerce_numeric(table, list(roles.bad))
    prepared = schema.dataset_schema.prepare(coerced, "the data")
    if markers:
        notes.append(
            f"read as missing: {', '.join(repr(m) for m in markers)} (missing_values: confirm each is a marker, "
            "not a real value)"
        )
    warnings = [
        f"{col}: kept numeric, {cells.describe()}; read as missing, the suite allows it with `mostly`"
        for col, cells in roles.bad.items()
    ]
    leaks: list[str] = []
    warnings += _findings(prepared, schema, settings, leaks)
    suite = build_suite(prepared, schema.dataset_schema, name, roles.bad)
    suite.to_gx()  # GX builds every expectation: a wrong kwarg fails here, not at the first run
    return Profile(
        schema=schema,
        suite=suite,
        rows=len(frame),
        notes=notes,
        warnings=warnings,
        leaks=leaks,
        table=prepared,
    )


def _findings(
    prepared: pd.DataFrame, schema: SchemaFile, settings: ProfileSettings, leaks: list[str]
) -> list[str]:
    """Leaks (their columns also appended to ``leaks``), near-constant and high-cardinality features, in
    column order."""
    found: list[str] = []
    labels = prepared[schema.label]
    for col in schema.features:
        series = prepared[col]
        auc = single_feature_auc(series, labels)
        leak = leak_finding(col, auc, settings.leak_auc)
        if leak:
            leaks.append(col)
        found += [
            text
            for text in (
                leak,
                near_constant_finding(series, col, settings.near_constant_share),
                high_cardinality_finding(series, col, settings.high_cardinality)
                if col in schema.categorical_features
                else None,
            )
            if text
        ]
    return found
