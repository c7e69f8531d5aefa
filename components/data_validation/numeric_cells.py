"""Cells that are not numbers in a column that is mostly numbers: found, counted, named, read as missing.

``mlops data init`` keeps a column numeric when almost every cell is a number (200 ``abc``
among 32,561 ages is a data-entry problem, not a 74-value category); validate-data reads
those cells as missing, so the suite's ``mostly`` on the column's null share bounds them,
and every message names the offending values with their true count and fraction.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

SHOWN_VALUES = 5
"""How many distinct offending values a message names (the most frequent first)."""


@dataclass(frozen=True)
class BadCells:
    """The cells of one column that are not numbers."""

    column: str
    counts: Counter[str]
    """Offending value (as text) → how many cells hold it."""
    rows: int
    """Rows in the column (the denominator of :attr:`fraction`)."""

    @property
    def count(self) -> int:
        return sum(self.counts.values())

    @property
    def fraction(self) -> float:
        return self.count / self.rows if self.rows else 0.0

    def describe(self) -> str:
        """``200 of 32561 cells (0.61%) are not numbers: 'abc' ×200``."""
        shown = ", ".join(f"{value!r} ×{n}" for value, n in self.counts.most_common(SHOWN_VALUES))
        more = len(self.counts) - SHOWN_VALUES
        extra = f" and {more} other value(s)" if more > 0 else ""
        return f"{self.count} of {self.rows} cells ({self.fraction:.2%}) are not numbers: {shown}{extra}"


def bad_cells(series: pd.Series, column: str) -> BadCells:
    """The non-missing cells of ``series`` that do not parse as numbers."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return BadCells(column, Counter(), len(series))
    parsed = pd.to_numeric(series, errors="coerce")
    offending = series[parsed.isna() & series.notna()]
    return BadCells(column, Counter(offending.astype(str).tolist()), len(series))


def coerce_numeric(
    frame: pd.DataFrame, columns: tuple[str, ...] | list[str]
) -> tuple[pd.DataFrame, dict[str, BadCells]]:
    """A copy with each of ``columns`` that holds text parsed as numbers (the bad cells as NaN), and
    the bad cells of every column that had some."""
    import pandas as pd

    out = frame.copy(deep=False)  # copy-on-write (pandas 3): a replaced column never reaches ``frame``
    found: dict[str, BadCells] = {}
    for column in columns:
        if column not in out.columns:
            continue
        series = out[column]
        if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            continue
        cells = bad_cells(series, column)
        out[column] = pd.to_numeric(series, errors="coerce")
        if cells.count:
            found[column] = cells
    return out, found
