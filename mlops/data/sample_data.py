"""A deterministic credit-default-like dataset for demos, tests and benchmarks.

Twenty features (14 numeric, 6 categorical), one protected attribute (``sex``)
that the model never sees, a label with a learnable but noisy signal, and
missing values at a realistic rate. Two knobs make later stages testable:
``drift`` shifts feature distributions (for the drift monitor) and ``bias``
makes the label depend on the protected group (for the fairness gate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from mlops.data.behaviour import DirectionalTest, InvarianceTest
from mlops.data.dataset import DatasetSchema
from mlops.settings import SETTINGS_CONFIG

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

CATEGORIES: dict[str, tuple[str, ...]] = {
    "employment_type": ("salaried", "self_employed", "unemployed", "retired"),
    "home_ownership": ("rent", "own", "mortgage"),
    "loan_purpose": ("debt_consolidation", "home_improvement", "car", "education", "business", "other"),
    "education": ("high_school", "bachelor", "master", "phd"),
    "marital_status": ("single", "married", "divorced"),
    "region": ("north", "south", "east", "west"),
}
NUMERIC = (
    "age",
    "income",
    "loan_amount",
    "loan_term_months",
    "interest_rate",
    "credit_score",
    "debt_to_income",
    "num_open_accounts",
    "num_delinquencies",
    "months_employed",
    "credit_utilization",
    "savings_balance",
    "num_dependents",
    "years_at_address",
)
SAMPLE_SCHEMA = DatasetSchema(
    label="default",
    numeric_features=NUMERIC,
    categorical_features=tuple(CATEGORIES),
    protected_attributes=("sex",),
)
SAMPLE_ALLOWED_LEAKS: tuple[str, ...] = ("credit_score",)
"""Features of the sample known before the outcome that the leakage gate would blame: the generator draws the
label mostly from the credit score, a bureau figure known when the loan is applied for, and from about 50,000
rows taking it away costs 0.11 of test AUC, more than ``gate.leakage.column_drop`` (the sample's own fact, so
added to the run's schema only when the data is the sample, as its behavioural tests are)."""
# What the generator makes true, so the sample's behavioural tests: region and years_at_address
# do not drive the label; delinquencies, debt-to-income and interest rate raise the risk.
SAMPLE_INVARIANCE_TESTS: tuple[InvarianceTest, ...] = (
    InvarianceTest(feature="region", perturbation="permute"),
    InvarianceTest(feature="years_at_address", perturbation="shift", shift=5.0),
)
SAMPLE_DIRECTIONAL_TESTS: tuple[DirectionalTest, ...] = (
    DirectionalTest(feature="num_delinquencies", delta=2.0, expectation="non_decreasing"),
    DirectionalTest(feature="debt_to_income", delta=0.2, expectation="non_decreasing"),
    DirectionalTest(feature="interest_rate", delta=0.05, expectation="non_decreasing"),
    DirectionalTest(feature="credit_score", delta=50.0, expectation="non_increasing"),
)
# Columns that never have missing values: identifiers of the applicant and the loan terms.
_NEVER_MISSING = {"age", "loan_amount", "loan_term_months", "interest_rate"}


class SampleDataConfig(BaseModel):
    """How to generate the sample dataset (``data.sample``; used when ``data.uri`` is empty)."""

    model_config = SETTINGS_CONFIG

    rows: int = Field(default=5000, ge=1)
    """Rows of the sample dataset."""
    seed: int = Field(default=0, ge=0)
    """Seed of the sample dataset; the same settings always yield the same bytes."""
    missing_rate: float = Field(default=0.03, ge=0, lt=0.5)
    """Fraction of values blanked in the sample's nullable numeric and categorical columns."""
    drift: float = Field(default=0.0, ge=0, le=5)
    """0 = reference distribution; 1 = strongly shifted income, credit score, utilisation and purpose mix."""
    bias: float = Field(default=0.0, ge=0, le=10)
    """0 = label independent of sex given the features; > 0 raises default odds for sex == 'female'."""
    minority_fraction: float = Field(default=0.5, gt=0, lt=1)
    """Share of sample rows with sex == 'female'; small values make a tiny group for fairness tests."""


def generate(config: SampleDataConfig | None = None) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    cfg = config or SampleDataConfig()
    rng = np.random.default_rng(cfg.seed)
    n, d = cfg.rows, cfg.drift

    sex = np.where(rng.random(n) < cfg.minority_fraction, "female", "male")
    age = np.clip(rng.normal(41, 12, n), 18, 85).round()
    income = np.exp(rng.normal(10.8 - 0.25 * d, 0.5, n)).round(-2)
    loan_amount = np.clip(income * rng.uniform(0.1, 0.9, n), 1000, None).round(-2)
    loan_term = rng.choice([12, 24, 36, 48, 60], n, p=[0.1, 0.2, 0.35, 0.15, 0.2]).astype(float)
    credit_score = np.clip(rng.normal(680 - 40 * d, 60, n), 300, 850).round()
    interest_rate = np.clip(0.28 - (credit_score - 300) / 550 * 0.22 + rng.normal(0, 0.015, n), 0.02, 0.35)
    debt_to_income = np.clip(rng.beta(2, 5, n) + 0.1 * d, 0, 1.5)
    open_accounts = rng.poisson(6, n).astype(float)
    delinquencies = rng.poisson(0.3 + 0.3 * d, n).astype(float)
    months_employed = np.clip(rng.exponential(60, n), 0, 480).round()
    utilisation = np.clip(rng.beta(2 + 2 * d, 4, n), 0, 1)
    savings = np.exp(rng.normal(8.5, 1.2, n)).round(-1)
    dependents = rng.poisson(1.1, n).astype(float)
    years_at_address = np.clip(rng.exponential(6, n), 0, 50).round(1)

    purpose_p = np.array([0.35, 0.15, 0.2, 0.1, 0.1, 0.1])
    purpose_p = (1 - min(d, 1) * 0.5) * purpose_p + min(d, 1) * 0.5 * np.array([0.1, 0.1, 0.1, 0.1, 0.5, 0.1])

    def draw(column: str, p: Any = None) -> np.ndarray:
        """``rng.choice(CATEGORIES[column], n, p)``'s values (the same draws), as an object array whose
        cells share one string per category: numpy's own result is a fixed-width unicode array that
        becomes one new string per cell as objects (at 5M rows about 0.7 GB per column)."""
        values = np.array(CATEGORIES[column], dtype=object)
        return values[rng.choice(len(values), n, p=p)]

    categorical = {
        "employment_type": draw("employment_type", [0.6, 0.2, 0.08, 0.12]),
        "home_ownership": draw("home_ownership", [0.4, 0.25, 0.35]),
        "loan_purpose": draw("loan_purpose", purpose_p / purpose_p.sum()),
        "education": draw("education", [0.35, 0.4, 0.2, 0.05]),
        "marital_status": draw("marital_status", [0.4, 0.45, 0.15]),
        "region": draw("region"),
    }

    signal = (
        -0.015 * (credit_score - 680)
        + 2.5 * (debt_to_income - 0.3)
        + 2.0 * (utilisation - 0.33)
        + 0.6 * delinquencies
        + 8.0 * (interest_rate - 0.15)
        - 0.5 * (np.log(income) - 10.8)
        - 0.005 * (months_employed - 60)
        + 1.0 * (categorical["employment_type"] == "unemployed")
        + 0.5 * (categorical["loan_purpose"] == "business")
        - 0.4 * (categorical["home_ownership"] == "own")
    )
    # Irreducible noise keeps the signal imperfect (a well-fitted model reaches ROC AUC ~0.8).
    logit = -1.7 + signal + cfg.bias * (sex == "female") + rng.normal(0, 0.5, n)
    label = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)

    frame = pd.DataFrame(
        {
            "age": age,
            "income": income,
            "loan_amount": loan_amount,
            "loan_term_months": loan_term,
            "interest_rate": interest_rate.round(4),
            "credit_score": credit_score,
            "debt_to_income": debt_to_income.round(4),
            "num_open_accounts": open_accounts,
            "num_delinquencies": delinquencies,
            "months_employed": months_employed,
            "credit_utilization": utilisation.round(4),
            "savings_balance": savings,
            "num_dependents": dependents,
            "years_at_address": years_at_address,
            **categorical,
            "sex": sex,
            "default": label,
        }
    )
    for col in (*NUMERIC, *CATEGORIES):
        if col in _NEVER_MISSING:
            continue
        mask = rng.random(n) < cfg.missing_rate
        frame.loc[mask, col] = np.nan if col in NUMERIC else None
    return frame


def write(path: str, config: SampleDataConfig | None = None) -> str:
    """Write the sample dataset as CSV or Parquet (by suffix) and return the path."""
    frame = generate(config)
    if path.lower().endswith((".parquet", ".pq")):
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return path
