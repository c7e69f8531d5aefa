"""Rows for the Evidently HTML report: a uniform sample of the window, and reference rows redrawn from the profile.

The profile holds bin counts, not rows, so the reference shown in the HTML report is
a resample: numeric values drawn bin by bin (uniformly inside a quantile bin, exact
values for discrete features), categories by frequency, missing values at the
reference's rate. The report is for looking at; the decision and the JSON scores come
from the full window against the profile itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from mlops.model.reference_profile import ReferenceProfile

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


@dataclass
class Reservoir:
    """Keeps a uniform random sample of at most ``size`` rows of everything added (random keys, smallest kept)."""

    size: int
    seed: int = 0
    frame: pd.DataFrame | None = None
    _rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)

    def add(self, table: pa.Table, columns: list[str]) -> None:
        import pandas as pd

        if self.size == 0 or table.num_rows == 0:
            return
        keys = self._rng.random(table.num_rows)
        keep = np.argsort(keys)[: self.size]
        part = table.select(columns).take(keep).to_pandas()
        part["_key"] = keys[keep]
        merged = part if self.frame is None else pd.concat([self.frame, part], ignore_index=True)
        self.frame = merged.nsmallest(self.size, "_key")


def reference_rows(profile: ReferenceProfile, rows: int, seed: int = 0) -> pd.DataFrame:
    import pandas as pd

    rng = np.random.default_rng(seed)
    columns: dict[str, object] = {}
    for p in (*profile.numeric, profile.score):
        edges = np.asarray(p.edges)
        counts = np.asarray(p.counts, dtype=float)
        bins = rng.choice(len(counts), size=rows, p=counts / counts.sum())
        if p.discrete:
            values = edges[np.minimum(bins, len(edges) - 1)]
        else:
            low = edges[np.clip(bins - 1, 0, len(edges) - 1)]
            high = edges[np.minimum(bins, len(edges) - 1)]
            values = rng.uniform(low, high)
        missing = rng.random(rows) < p.missing / max(p.missing + p.rows, 1)
        columns[p.name] = np.where(missing, np.nan, values)
    for c in profile.categorical:
        freq = np.asarray(c.counts, dtype=float)
        values = np.asarray(c.categories, dtype=object)[rng.choice(len(freq), size=rows, p=freq / freq.sum())]
        missing = rng.random(rows) < c.missing / max(c.missing + c.rows, 1)
        values[missing] = None
        columns[c.name] = values
    return pd.DataFrame(columns)
