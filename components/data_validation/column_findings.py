"""What ``mlops data init`` warns about in a column: a leak of the label, a near-constant or
high-cardinality feature, a date or timestamp, a repeated column name.

Each finding is a line for the console and for the schema file's header, with the figure that
raised it, so the user can decide (``--ignore``, or edit the file) before anything trains.
"""

from __future__ import annotations

import csv
import io
import re
import shlex
from collections import Counter
from typing import TYPE_CHECKING

from mlops.data.dataset import PARQUET_MAGIC, csv_delimiter

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

DATE_PATTERN = re.compile(
    r"^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}"  # 2024-01-31, 31/01/2024, 01.31.24
    r"([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?"  # an optional time
    r"\s*(Z|[+-]\d{2}:?\d{2})?$"  # an optional offset
)
"""A cell that looks like a calendar date or timestamp (checked again by parsing it)."""
PARSED_SAMPLE = 2000
"""How many date-looking cells are parsed to confirm a date column."""


def rank_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """ROC AUC of ``scores`` for 0/1 ``labels`` (the Mann-Whitney statistic, ties counted half); 0.5 when a
    class is absent."""
    import pandas as pd

    positive = labels == 1
    n_pos = int(positive.sum())
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        return 0.5
    ranks = pd.Series(scores).rank(method="average").to_numpy()
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def single_feature_auc(series: pd.Series, labels: pd.Series) -> float:
    """How well this one column alone separates the label: ROC AUC in its better direction (0.5 to 1).

    Numbers score as they are (missing below every value, so missingness that predicts the label
    counts); categories score by the positive rate of their category in the *other* half of the
    rows (out-of-fold), so a column with many rare values is not a leak by overfitting alone.
    """
    import numpy as np
    import pandas as pd

    y = labels.to_numpy(dtype=float)
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        values = series.to_numpy(dtype=float)
        finite = values[~np.isnan(values)]
        floor = float(finite.min()) - 1.0 if finite.size else 0.0
        scores = np.where(np.isnan(values), floor, values)
    else:
        codes = series.astype(object).where(series.notna(), "\x00missing").astype(str).to_numpy()
        fold = np.arange(len(series)) % 2
        scores = np.empty(len(series), dtype=float)
        for half in (0, 1):
            other = fold != half
            rates = pd.Series(y[other]).groupby(codes[other]).mean()
            default = float(y[other].mean()) if other.any() else 0.5
            scores[~other] = pd.Series(codes[~other]).map(rates).fillna(default).to_numpy()
    auc = rank_auc(scores, y.astype(int))
    return max(auc, 1.0 - auc)


def leak_finding(column: str, auc: float, threshold: float) -> str | None:
    """A warning when ``auc`` is above ``threshold`` (strictly), else None."""
    if auc <= threshold:
        return None
    return (
        f"{column}: may leak the label, single-feature ROC AUC {auc:.4f} > {threshold:g} (profile.leak_auc). "
        "A column recorded after the outcome makes a model that cannot work in use"
    )


def near_constant_finding(series: pd.Series, column: str, share: float) -> str | None:
    """A warning when one value fills at least ``share`` of the rows."""
    counts = series.value_counts(dropna=False, normalize=True)
    if counts.empty or float(counts.iloc[0]) < share:
        return None
    value = counts.index[0]
    return (
        f"{column}: near constant, {value!r} in {float(counts.iloc[0]):.2%} of rows (profile.near_constant_share "
        f"{share:g}); it tells the model little, consider --ignore {shlex.quote(column)}"
    )


def high_cardinality_finding(series: pd.Series, column: str, limit: int) -> str | None:
    """A warning when a categorical feature has more than ``limit`` distinct values."""
    distinct = int(series.nunique(dropna=True))
    if distinct <= limit:
        return None
    return (
        f"{column}: high-cardinality categorical, {distinct} distinct values (profile.high_cardinality "
        f"{limit}); rare values are learnt from few rows: group them, or --ignore {shlex.quote(column)}"
    )


def is_date_column(series: pd.Series, share: float) -> bool:
    """A datetime column, or text whose non-missing cells look like and parse as dates at least ``share`` often."""
    import pandas as pd

    if pd.api.types.is_datetime64_any_dtype(series):
        return True
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return False
    text = series.dropna().astype(str).str.strip()
    if text.empty:
        return False
    looks = text.str.match(DATE_PATTERN)
    if float(looks.mean()) < share:
        return False
    sample = text[looks].head(PARSED_SAMPLE)
    parsed = pd.to_datetime(sample, errors="coerce", format="mixed")
    return float(parsed.notna().mean()) >= share


def repeated_names(data: bytes) -> dict[str, str]:
    """CSV columns whose name repeats an earlier one: the name pandas gives each repeat (``x.1``) → ``x``."""
    if data[:4] == PARQUET_MAGIC:
        return {}
    first = data[:65536].split(b"\n", 1)[0].decode("utf-8-sig", errors="replace").rstrip("\r")
    header = next(csv.reader(io.StringIO(first), delimiter=csv_delimiter(data)), [])
    seen: Counter[str] = Counter()
    repeats: dict[str, str] = {}
    for name in header:
        if seen[name]:
            repeats[f"{name}.{seen[name]}"] = name
        seen[name] += 1
    return repeats
