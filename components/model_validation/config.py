"""What the model-validation gate checks, and how strictly.

Every threshold is a field here so that an operator changes policy through
pipeline parameters, never by editing code. Behavioural tests given here replace
the ones the dataset declares (its schema file; the built-in sample declares
its own, ``mlops.data.sample_data``); with neither, none run and the report says so.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from mlops.data.behaviour import BehaviouralSuite, DirectionalTest, InvarianceTest
from mlops.data.sample_data import SAMPLE_DIRECTIONAL_TESTS, SAMPLE_INVARIANCE_TESTS
from mlops.settings import SETTINGS_CONFIG

__all__ = [
    "SAMPLE_DIRECTIONAL_TESTS",
    "SAMPLE_INVARIANCE_TESTS",
    "BehaviouralSuite",
    "DirectionalTest",
    "ExplainabilityPolicy",
    "FairnessPolicy",
    "InvarianceTest",
    "ValidationConfig",
]


class FairnessPolicy(BaseModel):
    """Group-fairness thresholds, applied to every protected attribute."""

    model_config = SETTINGS_CONFIG

    decision_threshold: float = Field(default=0.5, gt=0.0, lt=1.0)
    """Score at or above which a row counts as predicted positive."""
    favourable_outcome: Literal["schema", "positive", "negative"] = Field(default="schema")
    """The predicted class that benefits the person: positive (an approval) or negative (no default predicted: the loan is granted). schema: the dataset schema's favourable_class. The demographic-parity ratio compares the groups' rates of this outcome, as the four-fifths rule does."""

    def favourable_prediction(self, favourable_class: Literal["positive", "negative"]) -> int:
        """The favourable predicted label (0/1), given the dataset schema's favourable class."""
        outcome = favourable_class if self.favourable_outcome == "schema" else self.favourable_outcome
        return 1 if outcome == "positive" else 0

    max_demographic_parity_difference: float = Field(default=0.1, ge=0.0, le=1.0)
    """Largest allowed gap between group selection rates."""
    min_demographic_parity_ratio: float = Field(default=0.8, ge=0.0, le=1.0)
    """Smallest allowed ratio lowest/highest group rate of the favourable outcome (four-fifths rule)."""
    max_equalized_odds_difference: float = Field(default=0.1, ge=0.0, le=1.0)
    """Largest allowed gap between groups in true-positive rate or false-positive rate."""
    min_group_size: int = Field(default=30, ge=1)
    """Rows a group needs for its selection and favourable rates (demographic parity) to be decided on; a smaller group is reported and named, never decided on."""
    min_group_positives: int = Field(default=30, ge=1)
    """Positive labels a group needs for its true-positive rate (equalised odds) to be decided on; with fewer, the TPR is reported and named, never decided on."""
    min_group_negatives: int = Field(default=30, ge=1)
    """Negative labels a group needs for its false-positive rate (equalised odds) to be decided on; with fewer, the FPR is reported and named, never decided on."""
    gate_on_intervals: bool = Field(default=True)
    """true: a threshold fails only when the whole confidence interval lies beyond it (a disparity that could be sampling noise is reported, not gated). false: compare the point estimates with the thresholds."""
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)
    """Coverage of the two-sided interval of each disparity (Wilson/Newcombe score intervals, simultaneous over the groups)."""
    quantile_bins: int = Field(default=4, ge=2, le=20)
    """Bins, at the data's quantiles, of a numeric protected attribute for which the schema file declares no protected_bins."""
    max_numeric_values: int = Field(default=10, ge=2)
    """A numeric protected attribute with at most this many distinct values (codes such as 1/2) is grouped by value; with more it is binned."""


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


class ValidationConfig(BaseModel):
    """Everything the model-validation gate needs besides the model and the data."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "model_validation"

    fairness: FairnessPolicy = Field(default_factory=FairnessPolicy)
    """Group-fairness thresholds."""
    explainability: ExplainabilityPolicy = Field(default_factory=ExplainabilityPolicy)
    """Attribution settings and stability threshold."""
    behavioural: BehaviouralSuite = Field(default_factory=BehaviouralSuite)
    """Behavioural tests."""
    max_rows: int = Field(default=4000, ge=20)
    """Rows (random sample) used by attributions and behavioural tests; fairness uses every row."""
    seed: int = Field(default=0, ge=0)
    """Seed of the model-validation row sampling and permutations."""
    pass_not_conclusive: Literal["never", "estimate_within_limit", "always"] = Field(
        default="estimate_within_limit"
    )
    """Which checks the data could not decide (an interval reaching across its limit) may still let the model through, each listed in the reason, the report, the card and the console. never: any undecided check holds the model back until more test rows decide it. estimate_within_limit (default): only those whose measured value lies within the limit pass; one measured beyond its limit, or not measured at all (fewer than two groups large enough), holds the model back. always: every undecided check passes, listed. The default is what a regulated deployment expects: a measured breach (a 0.22 parity gap against 0.1) is never shipped because the rows were too few to prove it, nor an attribute whose fairness was not measured; a value within its limit whose interval is wide is shipped with that uncertainty on record rather than blocking every model tested on a few thousand rows."""
