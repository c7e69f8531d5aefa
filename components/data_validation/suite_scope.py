"""The suite follows the schema file: what a run checks when the two disagree, and the notes that say so.

A user edits the schema file (a column moved to ``ignored_columns``, a role changed) and
re-runs; the suite ``mlops data init`` wrote beside it still has expectations on the old
columns. Those expectations are skipped with a note naming them (never a false "column
does not exist in the data"), features the suite does not check are named, and columns in
the data that the schema file does not know are named too instead of being dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.data_validation.suite import Suite, SuiteError
from mlops.data.dataset import DatasetSchema

REGENERATE = "regenerate the suite with `mlops data init ... --force` (or edit it) to silence this note"
NOT_NULL = "expect_column_values_to_not_be_null"
TEXT_AS_MISSING = "text_as_missing"
"""Meta key of a null expectation whose column's text cells are read as missing (a mostly-numeric column)."""


@dataclass(frozen=True)
class ScopedSuite:
    """The expectations that apply to the declared columns, and what was noticed on the way."""

    suite: Suite
    notes: tuple[str, ...]


def scope_suite(suite: Suite, schema: DatasetSchema, data_columns: list[str]) -> ScopedSuite:
    """``suite`` without the expectations on columns ``schema`` does not use, and the notes about both files."""
    declared = set(schema.columns)
    skipped: dict[str, int] = {}
    kept = []
    for spec in suite.expectations:
        column = spec.column
        if column is not None and column not in declared:
            skipped[column] = skipped.get(column, 0) + 1
        else:
            kept.append(spec)
    notes: list[str] = []
    if skipped:
        ignored = sorted(c for c in skipped if c in schema.ignored_columns)
        other = sorted(c for c in skipped if c not in schema.ignored_columns)
        why = []
        if ignored:
            why.append(f"{ignored} are in the schema file's ignored_columns")
        if other:
            why.append(f"{other} are not declared in the schema file")
        notes.append(
            f"the suite follows the schema file: skipped {sum(skipped.values())} expectation(s) of suite "
            f"{suite.name!r} on column(s) the schema no longer uses ({'; '.join(why)}); {REGENERATE}"
        )
    if not kept:
        raise SuiteError(
            f"suite {suite.name!r} has no expectation on a column the schema file declares; regenerate it with "
            "`mlops data init ... --force`"
        )
    checked = {spec.column for spec in kept}
    unchecked = [c for c in (*schema.features, *schema.protected_attributes) if c not in checked]
    if unchecked:
        notes.append(
            f"no expectation of suite {suite.name!r} checks declared column(s) {unchecked}; {REGENERATE}"
        )
    known = declared | set(schema.ignored_columns)
    extra = [c for c in data_columns if c not in known]
    if extra:
        notes.append(
            f"column(s) {extra} are in the data but not in the schema file: dropped before validation and "
            "training. Declare each one in a role (numeric_features, categorical_features, "
            "protected_attributes) or in ignored_columns"
        )
    scoped = suite if not skipped else suite.model_copy(update={"expectations": tuple(kept)})
    return ScopedSuite(scoped, tuple(notes))


def text_as_missing_columns(suite: Suite, schema: DatasetSchema) -> tuple[str, ...]:
    """Numeric features whose null expectation is marked ``meta: {"text_as_missing": true}`` (``mlops data
    init`` marks a mostly-numeric column so): their text cells are read as missing and counted against the
    expectation's ``mostly``. Every other numeric feature holding text fails the schema check, naming the text."""
    marked = {
        spec.column for spec in suite.expectations if spec.type == NOT_NULL and spec.meta.get(TEXT_AS_MISSING)
    }
    return tuple(c for c in schema.numeric_features if c in marked)
