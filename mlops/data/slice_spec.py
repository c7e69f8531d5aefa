"""Slices a dataset declares: the segments evaluation reports every metric for.

A slice specification names one or more columns (a model feature or a protected attribute);
each categorical column contributes one slice per value, each numeric column one slice per
bin of the edges it declares, and several columns make every combination. In a schema file::

    slices:
      - columns: [region]                       # one slice per region
      - columns: [age]
        bins: {age: [18, 30, 50, 90]}           # [18, 30), [30, 50), [50, 90]
      - columns: [sex, region]                  # every sex x region combination

Rows outside every bin, and missing values, form a slice of their own (``(outside)``,
``(missing)``) so no row silently disappears.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field, model_validator

from mlops.settings import SETTINGS_CONFIG


class SliceSpec(BaseModel):
    """One declared slicing: the columns it crosses and the bin edges of its numeric columns."""

    model_config = SETTINGS_CONFIG

    columns: tuple[str, ...] = Field(min_length=1, max_length=3)
    """Columns whose values (or bins) define the slices; several columns give every combination."""
    bins: dict[str, tuple[float, ...]] = Field(default_factory=dict)
    """Bin edges per numeric column, increasing, at least two; the last bin includes its upper edge."""

    @model_validator(mode="after")
    def _edges(self) -> SliceSpec:
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"slice columns {list(self.columns)} name a column twice")
        for column, edges in self.bins.items():
            if column not in self.columns:
                raise ValueError(
                    f"slice bins name {column!r}, which is not one of its columns {list(self.columns)}"
                )
            increasing = all(a < b for a, b in zip(edges, edges[1:], strict=False))  # False beside a NaN
            if len(edges) < 2 or not increasing or not all(math.isfinite(e) for e in edges):
                raise ValueError(
                    f"slice bins of {column!r} must be at least two finite, strictly increasing edges, got {list(edges)}"
                )
        return self

    @property
    def name(self) -> str:
        return " x ".join(self.columns)

    def check_roles(
        self, numeric: tuple[str, ...], categorical: tuple[str, ...], protected: tuple[str, ...] = ()
    ) -> list[str]:
        """Problems with this spec against the schema's columns; a protected attribute is sliced by value,
        or by bins when it is numeric and bins are given."""
        problems = []
        for column in self.columns:
            if column in protected:
                continue
            if column in numeric and column not in self.bins:
                problems.append(
                    f"slice column {column!r} is numeric: give its bin edges (bins: {{{column}: [...]}})"
                )
            elif column not in numeric and column not in categorical:
                problems.append(
                    f"slice column {column!r} is not a declared feature or protected attribute; "
                    "slices are taken on columns the test split keeps"
                )
            elif column in categorical and column in self.bins:
                problems.append(f"slice column {column!r} is categorical: it takes no bins")
        return problems
