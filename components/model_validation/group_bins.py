"""The groups of a protected attribute: its values, or bins of a numeric one.

A numeric attribute such as age would otherwise give one group per value: 73 groups of a
few rows each, compared pairwise ("23 vs 56"), none large enough to decide on. A numeric
attribute with more than ``FairnessPolicy.max_numeric_values`` distinct values is therefore
binned: at the edges the schema file declares (``protected_bins: {age: [25, 40, 60]}``:
``< 25``, ``[25, 40)``, ``[40, 60)``, ``>= 60``), else into ``FairnessPolicy.quantile_bins``
bins at the data's quantiles (``[18, 29)`` … ``[48, 90]``, edges taken from observed values so
integer ages give integer edges). Bins are left-closed; the last quantile bin includes the
maximum. A column of codes (1/2, or a handful of values) stays grouped by value. Missing
values form their own visible group, as in every grouping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

MISSING_GROUP = "<missing>"


@dataclass(frozen=True)
class Grouping:
    """Each row's group label, the groups in display order, and how they were formed."""

    labels: np.ndarray
    order: tuple[str, ...]
    description: str
    """Empty when grouped by value; otherwise which bins and why, for the report."""


def number(value: float) -> str:
    """An edge as a person writes it: ``29``, ``37.5``, ``0.125``."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"


def _as_numbers(column: pd.Series) -> pd.Series | None:
    """The column as floats when every present value is a number (strings such as ``"39"`` too), else None."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(column):
        return None
    if pd.api.types.is_numeric_dtype(column):
        return column.astype("float64")
    parsed = pd.to_numeric(column.where(column.notna()), errors="coerce")
    return parsed if (parsed.notna() == column.notna()).all() and column.notna().any() else None


def _by_value(column: pd.Series) -> Grouping:

    labels = column.astype(object).where(column.notna(), MISSING_GROUP).astype(str).to_numpy()
    present = sorted(set(labels) - {MISSING_GROUP})
    return Grouping(labels, (*present, *([MISSING_GROUP] if MISSING_GROUP in labels else [])), "")


def _binned(
    values: pd.Series, interior: Sequence[float], names: Sequence[str]
) -> tuple[np.ndarray, tuple[str, ...]]:
    import numpy as np

    index = np.digitize(values.fillna(0.0).to_numpy(), np.asarray(interior, dtype=np.float64), right=False)
    labels = np.where(values.isna().to_numpy(), MISSING_GROUP, np.asarray(names, dtype=object)[index]).astype(
        str
    )
    order = tuple(n for n in names if n in set(labels))
    return labels, (*order, *([MISSING_GROUP] if values.isna().any() else []))


def declared_names(edges: Sequence[float]) -> list[str]:
    """Bin names for declared edges ``[25, 40, 60]``: ``< 25``, ``[25, 40)``, ``[40, 60)``, ``>= 60``."""
    inner = [f"[{number(a)}, {number(b)})" for a, b in zip(edges, edges[1:], strict=False)]
    return [f"< {number(edges[0])}", *inner, f">= {number(edges[-1])}"]


def quantile_names(edges: Sequence[float]) -> list[str]:
    """Bin names for quantile edges (minimum … maximum): left-closed, the last closed on both sides."""
    names = [f"[{number(a)}, {number(b)})" for a, b in zip(edges[:-1], edges[1:-1], strict=False)]
    return [*names, f"[{number(edges[-2])}, {number(edges[-1])}]"]


def group_rows(
    frame: pd.DataFrame,
    attribute: str,
    declared: Sequence[float] | None = None,
    quantile_bins: int = 4,
    max_numeric_values: int = 10,
) -> Grouping:
    """The groups of ``frame[attribute]``: declared bins, quantile bins of a numeric column, or its values."""
    import numpy as np

    column = frame[attribute]
    values = _as_numbers(column)
    if declared:
        if values is None:
            sample = sorted(map(str, column.dropna().unique()))[:5]
            raise ValueError(
                f"protected_bins declares edges {list(declared)} for {attribute!r}, but its values are not "
                f"all numbers (e.g. {sample}); remove {attribute!r} from protected_bins in the schema file "
                "or clean the column"
            )
        labels, order = _binned(values, declared, declared_names(declared))
        return Grouping(
            labels, order, f"grouped by the schema file's protected_bins {[number(e) for e in declared]}"
        )
    if values is None:
        return _by_value(column)
    distinct = np.unique(values.dropna().to_numpy())
    if len(distinct) <= max_numeric_values:
        return _by_value(column)
    quantiles = np.quantile(
        values.dropna().to_numpy(), np.linspace(0.0, 1.0, quantile_bins + 1), method="inverted_cdf"
    )
    edges = [float(e) for e in np.unique(quantiles)]
    labels, order = _binned(values, edges[1:-1], quantile_names(edges))
    return Grouping(
        labels,
        order,
        f"numeric with {len(distinct)} distinct values: grouped into {len(edges) - 1} quantile bin(s) "
        f"(quantile_bins {quantile_bins}); declare protected_bins: {{{attribute}: [edges]}} in the schema "
        "file to choose the edges",
    )
