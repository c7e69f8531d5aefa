"""Which split a row belongs to, decided by the row itself: a stable hash, not a random draw.

A row's split is a function of its key (the declared ``split_key`` column, else its declared
content: label, features and protected attributes, cell by cell as text) and the split
fractions, never of the seed or of the other rows. So a second run with another seed, or a
run on data that grew, keeps every old test row in test; the same rule, recorded on the
registered version (``mlops.split``), tells evaluate-model which of today's test rows a
champion trained on.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np
    import pandas as pd

SALT = b"mlops-row-split-v1\x00"
"""Fixed: a row hashes to the same place in every run and every version of this code."""
TRAIN, VAL, TEST = "train", "val", "test"


def cell_text(value: Any) -> str:
    """A cell as the same text however it was read: 3, 3.0 and '3' alike; missing as ''."""
    if value is None:
        return ""
    if hasattr(value, "item") and callable(value.item):  # numpy scalars: np.float64 is a float whose repr
        return cell_text(value.item())  # is "np.float64(3.5)", so first the Python value
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return str(int(value)) if value.is_integer() else repr(value)
    text = str(value).strip()
    if text.lower() in {"nan", "<na>", "nat"}:
        return ""
    try:
        number = float(text)
    except ValueError:
        return text
    return cell_text(number) if math.isfinite(number) else text


CHUNK_ROWS = 100_000
"""Rows whose cell texts exist at once while hashing: at 5M rows × 21 columns all of them took GBs."""


def column_texts(series: pd.Series) -> Sequence[str]:
    """``[cell_text(v) for v in series]``, with :func:`cell_text` called once per distinct value (the
    texts shared) where the dtype makes the values one type; an ``object`` column may mix ``1`` and
    ``True`` (one value to a hash table, two texts), so it keeps a call per cell."""
    import numpy as np
    import pandas as pd

    if series.dtype == object:
        return series.map(cell_text).tolist()
    codes, uniques = pd.factorize(series)  # missing values get code -1: the last text, ""
    texts = np.array([*(cell_text(value) for value in uniques), ""], dtype=object)
    return texts[codes].tolist()


@dataclass(frozen=True)
class SplitRule:
    """How rows were assigned: the key columns and the fractions (what a version records as ``mlops.split``)."""

    key_columns: tuple[str, ...]
    """Columns whose values, as text, are hashed (sorted by name so column order never matters)."""
    val_fraction: float
    """Share of hash space given to validation."""
    test_fraction: float
    """Share of hash space given to test (the lowest part)."""
    method: str = "hash"

    def positions(self, frame: pd.DataFrame) -> np.ndarray:
        """Each row's place in [0, 1): the first 8 bytes of a salted BLAKE2b of its key, as a fraction."""
        import numpy as np

        missing = [c for c in self.key_columns if c not in frame.columns]
        if missing:
            raise KeyError(
                f"split key column(s) {missing} are not in the table; present: {sorted(frame.columns)}"
            )
        out = np.empty(len(frame), dtype=np.float64)
        for begin in range(0, len(frame), CHUNK_ROWS):  # the cells' texts of one chunk at a time
            part = frame.iloc[begin : begin + CHUNK_ROWS]
            columns = [column_texts(part[c]) for c in self.key_columns]
            for i, cells in enumerate(zip(*columns, strict=True), start=begin):
                digest = hashlib.blake2b(SALT + "\x1f".join(cells).encode("utf-8"), digest_size=8).digest()
                out[i] = int.from_bytes(digest, "big") / 2.0**64
        return out

    def assign(self, frame: pd.DataFrame) -> np.ndarray:
        """``train``/``val``/``test`` per row: test below test_fraction, then validation, then train."""
        import numpy as np

        where = self.positions(frame)
        return np.where(
            where < self.test_fraction,
            TEST,
            np.where(where < self.test_fraction + self.val_fraction, VAL, TRAIN),
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> SplitRule:
        """The rule a version recorded; a ``ValueError`` when the text is not one."""
        try:
            raw = json.loads(text)
            return cls(
                key_columns=tuple(raw["key_columns"]),
                val_fraction=float(raw["val_fraction"]),
                test_fraction=float(raw["test_fraction"]),
                method=str(raw.get("method", "hash")),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"not a split rule: {text[:200]!r} ({exc})") from exc


def rule_for(key_columns: tuple[str, ...], val_fraction: float, test_fraction: float) -> SplitRule:
    return SplitRule(tuple(sorted(key_columns)), val_fraction, test_fraction)
