"""What the model-validation gate checks, and how strictly.

Every threshold is a field here so that an operator changes policy through
pipeline parameters, never by editing code. The behavioural tests default to
expectations that hold for the built-in sample dataset (whose generator makes
``region`` and ``years_at_address`` irrelevant to the label and makes
delinquencies, debt-to-income and interest rate raise the default risk); other
data declares its own.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from mlops.settings import SETTINGS_CONFIG


class FairnessPolicy(BaseModel):
    """Group-fairness thresholds, applied to every protected attribute."""

    model_config = SETTINGS_CONFIG

    decision_threshold: float = Field(default=0.5, gt=0.0, lt=1.0)
    """Score at or above which a row counts as predicted positive."""
    favourable_prediction: Literal[0, 1] = Field(default=0)
    """The predicted class that benefits the person (credit default: 0, the loan is granted). The demographic-parity ratio compares the groups' rates of this outcome, as the four-fifths rule does."""
    max_demographic_parity_difference: float = Field(default=0.1, ge=0.0, le=1.0)
    """Largest allowed gap between group selection rates."""
    min_demographic_parity_ratio: float = Field(default=0.8, ge=0.0, le=1.0)
    """Smallest allowed ratio lowest/highest group rate of the favourable outcome (four-fifths rule)."""
    max_equalized_odds_difference: float = Field(default=0.1, ge=0.0, le=1.0)
    """Largest allowed gap between groups in true-positive rate or false-positive rate."""
    min_group_size: int = Field(default=30, ge=1)
    """Groups with fewer rows are reported as too small and left out of the threshold checks."""
    bootstrap_resamples: int = Field(default=200, ge=0, le=10_000)
    """Bootstrap draws for the disparity intervals. A threshold then fails only when the whole interval lies beyond it (a disparity that could be sampling noise is reported, not gated). 0: compare the point estimates with the thresholds."""
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)
    """Coverage of the two-sided bootstrap interval."""


class ExplainabilityPolicy(BaseModel):
    """How attributions are computed and how stable they must be."""

    model_config = SETTINGS_CONFIG

    permutation_repeats: int = Field(default=3, ge=1, le=50)
    """Independent shuffles per feature, averaged."""
    n_examples: int = Field(default=5, ge=0, le=100)
    """Rows that get a per-example explanation."""
    n_references: int = Field(default=50, ge=1, le=1000)
    """Background rows a per-example attribution averages over."""
    min_rank_agreement: float = Field(default=0.6, ge=-1.0, le=1.0)
    """Smallest allowed Spearman correlation between the feature rankings of two disjoint halves of the data; -1 disables the check."""
    top_k: int = Field(default=5, ge=1)
    """Size of the top-feature set whose overlap is reported."""


class InvarianceTest(BaseModel):
    """Perturbing ``feature`` must barely move the predicted probability."""

    model_config = SETTINGS_CONFIG

    feature: str = Field(min_length=1)
    """Model feature that must not matter."""
    perturbation: Literal["permute", "shift"] = Field(default="permute")
    """permute: shuffle the column across rows (any feature); shift: add `shift` (numeric only)."""
    shift: float = Field(default=0.0)
    """Amount added to the feature when perturbation is 'shift'."""
    max_mean_abs_change: float = Field(default=0.03, ge=0.0, le=1.0)
    """Largest allowed mean |change| in probability over rows."""
    max_abs_change: float = Field(default=0.2, ge=0.0, le=1.0)
    """Largest allowed |change| in probability on any single row."""

    @model_validator(mode="after")
    def _shift_given(self) -> InvarianceTest:
        if self.perturbation == "shift" and self.shift == 0.0:
            raise ValueError(f"invariance test on {self.feature!r} uses perturbation 'shift' but shift is 0")
        return self

    @property
    def name(self) -> str:
        how = f"shift {self.shift:+g}" if self.perturbation == "shift" else "permute"
        return f"invariance:{self.feature}:{how}"


class DirectionalTest(BaseModel):
    """Adding ``delta`` to ``feature`` must move the probability in the expected direction (or not at all)."""

    model_config = SETTINGS_CONFIG

    feature: str = Field(min_length=1)
    """Numeric model feature to raise or lower."""
    delta: float
    """Amount added to the feature (negative to lower it); must not be 0."""
    expectation: Literal["non_decreasing", "non_increasing"]
    """non_decreasing: the probability must not fall; non_increasing: it must not rise."""
    tolerance: float = Field(default=0.01, ge=0.0, le=1.0)
    """Move against the expectation that a row may still make."""
    min_pass_fraction: float = Field(default=0.95, ge=0.0, le=1.0)
    """Share of rows that must meet the expectation."""

    @model_validator(mode="after")
    def _delta_nonzero(self) -> DirectionalTest:
        if self.delta == 0.0:
            raise ValueError(f"directional test on {self.feature!r} has delta 0; give the amount to add")
        return self

    @property
    def name(self) -> str:
        return f"directional:{self.feature}:{self.delta:+g}:{self.expectation}"


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


class BehaviouralSuite(BaseModel):
    """The behavioural tests to run; the defaults suit the built-in sample dataset."""

    model_config = SETTINGS_CONFIG

    invariance: tuple[InvarianceTest, ...] = Field(default=SAMPLE_INVARIANCE_TESTS)
    """Features whose perturbation must not matter."""
    directional: tuple[DirectionalTest, ...] = Field(default=SAMPLE_DIRECTIONAL_TESTS)
    """Features whose change must move the score one way."""


class ValidationConfig(BaseModel):
    """Everything the model-validation gate needs besides the model and the data."""

    model_config = SETTINGS_CONFIG

    fairness: FairnessPolicy = Field(default_factory=FairnessPolicy)
    """Group-fairness thresholds."""
    explainability: ExplainabilityPolicy = Field(default_factory=ExplainabilityPolicy)
    """Attribution settings and stability threshold."""
    behavioural: BehaviouralSuite = Field(default_factory=BehaviouralSuite)
    """Behavioural tests."""
    validation_max_rows: int = Field(default=4000, ge=20)
    """Rows (random sample) used by attributions and behavioural tests; fairness uses every row."""
    validation_seed: int = Field(default=0, ge=0)
    """Seed of the model-validation row sampling and permutations."""
