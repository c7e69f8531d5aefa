"""Generated tables shaped like three public datasets, with the leaks a new user meets in them.

- census income: mostly categorical strings, label ``>50K``/``<=50K``, no leak;
- bank marketing: ``;``-separated, ``yes``/``no`` label, a call ``duration`` known only after the
  call, tied to the label but scoring only about 0.8 alone (below data init's 0.9 warning);
- COMPAS two-year recidivism: columns recorded after the outcome (``is_recid``, ``event``, ``end``,
  ``r_*`` defined only for people who reoffended, ``vr_*``) beside honest ones.

Each honest signal is moderate and spread over several columns, as in the real files, so an
honest model scores about 0.7-0.85 and none of its columns carries it alone.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from mlops.data.dataset import DatasetSchema

COMPAS_LEAKS = ("is_recid", "event", "end", "r_days_from_arrest", "r_charge_degree", "vr_charge_degree")
"""The COMPAS-like table's post-outcome feature columns."""
COMPAS_ONE_CLASS = ("r_days_from_arrest", "r_charge_degree")
"""Of those, the ones defined only for people who reoffended (within or after two years)."""


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


def census_frame(rows: int = 3000, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 80, rows)
    hours = rng.normal(40, 12, rows).round().clip(1, 99).astype(int)
    education = rng.choice(["HS-grad", "Some-college", "Bachelors", "Masters", "11th", "Doctorate"], rows,
                           p=[0.32, 0.22, 0.2, 0.1, 0.1, 0.06])  # fmt: skip
    marital = rng.choice(
        ["Married-civ-spouse", "Never-married", "Divorced", "Widowed"], rows, p=[0.46, 0.33, 0.14, 0.07]
    )
    relationship = np.where(
        marital == "Married-civ-spouse",
        rng.choice(["Husband", "Wife"], rows, p=[0.85, 0.15]),
        rng.choice(["Not-in-family", "Own-child", "Unmarried"], rows),
    )
    occupation = rng.choice(["Exec-managerial", "Prof-specialty", "Craft-repair", "Sales", "Other-service", "?"], rows,
                            p=[0.13, 0.13, 0.2, 0.2, 0.3, 0.04])  # fmt: skip
    workclass = rng.choice(["Private", "Self-emp", "Local-gov", "?"], rows, p=[0.7, 0.12, 0.13, 0.05])
    capital_gain = np.where(rng.random(rows) < 0.08, rng.integers(1000, 20000, rows), 0)
    lift = {
        "HS-grad": -0.2,
        "Some-college": 0.0,
        "Bachelors": 0.4,
        "Masters": 0.6,
        "11th": -0.6,
        "Doctorate": 0.8,
    }
    job = {
        "Exec-managerial": 0.5,
        "Prof-specialty": 0.4,
        "Craft-repair": 0.0,
        "Sales": 0.1,
        "Other-service": -0.5,
        "?": -0.4,
    }
    logit = (
        -1.4
        + 0.025 * (age - 40)
        + 0.025 * (hours - 40)
        + np.vectorize(lift.get)(education)
        + np.vectorize(job.get)(occupation)
        + 0.8 * (marital == "Married-civ-spouse")
        + 1.2 * (capital_gain > 0)
    )
    income = np.where(rng.random(rows) < _sigmoid(logit), ">50K", "<=50K")
    return pd.DataFrame(
        {
            "age": age,
            "workclass": workclass,
            "education": education,
            "marital_status": marital,
            "occupation": occupation,
            "relationship": relationship,
            "sex": rng.choice(["Male", "Female"], rows),
            "capital_gain": capital_gain,
            "hours_per_week": hours,
            "native_country": rng.choice(["United-States", "Mexico", "?"], rows, p=[0.9, 0.06, 0.04]),
            "income": income,
        }
    )


CENSUS_SCHEMA = DatasetSchema(
    label="income",
    positive_label=">50K",
    negative_label="<=50K",
    numeric_features=("age", "capital_gain", "hours_per_week"),
    categorical_features=(
        "workclass",
        "education",
        "marital_status",
        "occupation",
        "relationship",
        "native_country",
    ),
    protected_attributes=("sex",),
    missing_values=("?",),
)


def bank_frame(rows: int = 3000, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, rows)
    balance = rng.normal(1400, 1500, rows).round().astype(int)
    housing = rng.choice(["yes", "no"], rows)
    loan = rng.choice(["yes", "no"], rows, p=[0.15, 0.85])
    campaign = rng.integers(1, 12, rows)
    previous = rng.poisson(0.6, rows)
    job = rng.choice(["admin.", "technician", "blue-collar", "management", "retired", "student"], rows)
    lift = {
        "admin.": 0.0,
        "technician": -0.1,
        "blue-collar": -0.5,
        "management": 0.2,
        "retired": 0.7,
        "student": 0.8,
    }
    logit = (
        -1.0
        + 0.0003 * (balance - 1400)
        - 0.6 * (housing == "yes")
        - 0.4 * (loan == "yes")
        - 0.12 * (campaign - 3)
        + 0.45 * previous
        + np.vectorize(lift.get)(job)
    )
    y = rng.random(rows) < _sigmoid(logit)
    # Known only once the call has ended: longer calls end in a subscription more often.
    duration = np.exp(5.2 + 0.9 * y + rng.normal(0, 0.8, rows)).round().astype(int)
    return pd.DataFrame(
        {
            "age": age,
            "job": job,
            "marital": rng.choice(["married", "single", "divorced"], rows),
            "balance": balance,
            "housing": housing,
            "loan": loan,
            "contact": rng.choice(["cellular", "telephone", "unknown"], rows),
            "duration": duration,
            "campaign": campaign,
            "previous": previous,
            "y": np.where(y, "yes", "no"),
        }
    )


def bank_csv(rows: int = 3000, seed: int = 7) -> bytes:
    buffer = io.StringIO()
    bank_frame(rows, seed).to_csv(buffer, sep=";", index=False)
    return buffer.getvalue().encode("utf-8")


BANK_SCHEMA = DatasetSchema(
    label="y",
    positive_label="yes",
    negative_label="no",
    numeric_features=("balance", "duration", "campaign", "previous"),
    categorical_features=("job", "marital", "housing", "loan", "contact"),
    protected_attributes=("age",),
    missing_values=("unknown",),
)


def compas_frame(rows: int = 3000, seed: int = 9) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 70, rows)
    priors = rng.poisson(3.0, rows)
    juvenile = rng.poisson(0.2, rows)
    degree = rng.choice(["F", "M"], rows, p=[0.64, 0.36])
    logit = -0.3 - 0.028 * (age - 34) + 0.24 * (priors - 3.0) + 0.5 * juvenile + 0.3 * (degree == "F")
    risk = _sigmoid(logit)
    two_year = rng.random(rows) < risk
    decile = np.clip(np.ceil(10 * _sigmoid(logit + rng.normal(0, 0.9, rows))), 1, 10).astype(int)
    # After the outcome: reoffending after the two years counts too, so a few negatives are recidivists.
    is_recid = two_year | (rng.random(rows) < 0.07)
    event = is_recid & (rng.random(rows) < 0.96)
    end = np.where(two_year, rng.integers(1, 730, rows), rng.integers(600, 1200, rows))
    violent = is_recid & (rng.random(rows) < 0.25)
    offence = pd.Timestamp("2014-01-01") + pd.to_timedelta(rng.integers(0, 700, rows), unit="D")
    return pd.DataFrame(
        {
            "id": np.arange(1, rows + 1),
            "name": [f"person {i}" for i in range(rows)],
            "sex": rng.choice(["Male", "Female"], rows, p=[0.8, 0.2]),
            "race": rng.choice(
                ["African-American", "Caucasian", "Hispanic", "Other"], rows, p=[0.5, 0.34, 0.09, 0.07]
            ),
            "age": age,
            "juv_fel_count": juvenile,
            "priors_count": priors,
            "c_charge_degree": degree,
            "decile_score": decile,
            "is_recid": is_recid.astype(int),
            "event": event.astype(int),
            "end": end,
            "r_days_from_arrest": np.where(is_recid, rng.integers(0, 30, rows), np.nan),
            "r_charge_degree": np.where(is_recid, rng.choice(["(F3)", "(M1)", "(M2)", "(F2)"], rows), None),
            "r_offense_date": np.where(is_recid, offence.strftime("%Y-%m-%d"), None),
            "vr_charge_degree": np.where(violent, rng.choice(["(F3)", "(M1)"], rows), None),
            "two_year_recid": two_year.astype(int),
        }
    )


COMPAS_HONEST = ("age", "juv_fel_count", "priors_count", "decile_score")


def compas_schema(leaks: bool = True) -> DatasetSchema:
    """The schema data init proposes (leaks as features), or the one with every leak ignored."""
    numeric = (*COMPAS_HONEST, *(("is_recid", "event", "end", "r_days_from_arrest") if leaks else ()))
    categorical = ("c_charge_degree", *(("r_charge_degree", "vr_charge_degree") if leaks else ()))
    ignored = ("id", "name", "r_offense_date", *(() if leaks else COMPAS_LEAKS))
    return DatasetSchema(
        label="two_year_recid",
        numeric_features=numeric,
        categorical_features=categorical,
        protected_attributes=("sex", "race"),
        ignored_columns=ignored,
    )
