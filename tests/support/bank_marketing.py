"""A bank-marketing-like table, written as a user would get it from a public archive.

Shaped like the UCI bank-marketing export: ``;``-separated, ``unknown`` for missing values,
a numeric protected attribute (``age``), a call ``duration`` recorded after the outcome (it
leaks the label: single-feature AUC about 0.99), a ``balance`` column that is numbers with
about 0.5 % bad cells (``abc``), a ``contact_date`` column, a repeated column name
(``campaign`` twice), a near-constant ``default`` and a high-cardinality ``branch``.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

BAD_BALANCE = "abc"
LEAK = "duration"
DATE = "contact_date"
REPEATED = "campaign"
NEAR_CONSTANT = "default"
HIGH_CARDINALITY = "branch"
LABEL = "y"


def bank_frame(rows: int = 3000, seed: int = 11, bad_cells: int | None = None) -> pd.DataFrame:
    """The table as pandas reads the file (the repeated name as ``campaign.1``)."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 96, rows)
    balance = rng.normal(1500, 900, rows).round().astype(int)
    housing = rng.choice(["yes", "no"], rows)
    campaign = rng.integers(1, 11, rows)
    job = rng.choice(["admin.", "technician", "services", "management", "retired", "unknown"], rows,
                     p=[0.25, 0.2, 0.2, 0.2, 0.12, 0.03])  # fmt: skip
    education = rng.choice(["primary", "secondary", "tertiary", "unknown"], rows, p=[0.2, 0.45, 0.31, 0.04])
    logit = -1.2 + 0.0006 * (balance - 1500) + 0.02 * (age - 45) - 0.5 * (housing == "yes") - 0.1 * campaign
    y = rng.random(rows) < 1 / (1 + np.exp(-logit))
    frame = pd.DataFrame(
        {
            "age": age,
            "job": job,
            "marital": rng.choice(["married", "single", "divorced"], rows),
            "education": education,
            NEAR_CONSTANT: np.where(rng.random(rows) < 0.995, "no", "yes"),
            "balance": balance.astype(object),
            "housing": housing,
            DATE: pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365, rows), unit="D"),
            HIGH_CARDINALITY: [f"B{n:03d}" for n in rng.integers(0, 80, rows)],
            REPEATED: campaign,
            f"{REPEATED}.1": campaign + rng.integers(0, 2, rows),
            LEAK: (180 + 420 * y + rng.normal(0, 90, rows)).round().astype(int).clip(0),
            LABEL: np.where(y, "yes", "no"),
        }
    )
    frame[DATE] = frame[DATE].dt.strftime("%Y-%m-%d")
    count = max(1, rows // 200) if bad_cells is None else bad_cells
    frame.loc[rng.choice(rows, count, replace=False), "balance"] = BAD_BALANCE
    return frame


def bank_csv(rows: int = 3000, seed: int = 11, bad_cells: int | None = None) -> bytes:
    """The file: ``;``-separated, the second ``campaign`` column under its own (repeated) name."""
    frame = bank_frame(rows, seed, bad_cells)
    buffer = io.StringIO()
    frame.rename(columns={f"{REPEATED}.1": REPEATED}).to_csv(buffer, sep=";", index=False)
    return buffer.getvalue().encode("utf-8")
