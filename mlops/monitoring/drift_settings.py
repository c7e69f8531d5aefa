"""Settings of the drift check: which window, which tests, what counts as drift."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field, model_validator

from mlops.settings import SETTINGS_CONFIG
from mlops.vocabulary import NAME_PATTERN

Method = Literal["auto", "wasserstein", "jensenshannon", "psi", "ks", "chisquare"]
METHODS: tuple[str, ...] = ("auto", "wasserstein", "jensenshannon", "psi", "ks", "chisquare")
TESTS: tuple[str, ...] = ("ks", "chisquare")
"""Methods whose score is a p-value, drifting below the threshold (``p_value``); the others are distances,
drifting at or above theirs."""
Trigger = Literal["drift", "performance", "both"]


class WindowSettings(BaseModel):
    """Which requests a check reads: one model's request log between two instants."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "window"

    model_name: str = Field(default="credit-default", pattern=NAME_PATTERN)
    """Registered model whose traffic is checked (its request log folder has the same name)."""
    model_version: str = Field(default="")
    """Version whose requests and reference profile are compared. Empty: the version the champion alias names."""
    since: str = Field(default="")
    """Window start (ISO 8601, UTC if no zone; inclusive). Empty: 24 hours before the window end."""
    until: str = Field(default="")
    """Window end (ISO 8601, UTC if no zone; exclusive); also the step of the monitoring metrics. Empty: now."""
    request_log_uri: str = Field(default="")
    """Request log root (local path or s3:// URI) holding <model_name>/requests-*.parquet. Empty: <workspace>/request-logs."""
    min_rows: int = Field(default=100, ge=1)
    """Fewest logged rows a window must hold; fewer is an error that triggers nothing."""
    report_rows: int = Field(default=5000, ge=0)
    """Rows of the window (sampled) and of the reference (resampled from its profile) in the Evidently HTML
    report; the JSON report's scores always cover the whole window. 0: no HTML report."""
    request_log_retention_days: int = Field(default=0, ge=0)
    """Days of raw request-log rows kept: each check deletes the model's rows from before the UTC midnight this
    many days before today (after storing the checked version's day summaries, which keep month-long windows
    working) and records it in the audit trail. 0: keep every row."""


class DriftSettings(BaseModel):
    """Drift tests and thresholds; the defaults are Evidently's: tests for small samples, distances for large."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "drift"

    numeric_method: Method = "auto"
    """Test for numeric features. ``auto`` (Evidently's rule, by sample size): a two-sample Kolmogorov-Smirnov
    test (``ks``) when the reference or the window holds at most ``small_sample_rows`` values of the feature,
    else the normalised Wasserstein distance (``wasserstein``). Numeric features with at most 5 distinct
    reference values are judged as categories (``chisquare`` / ``jensenshannon``), as Evidently does. A named
    method is used at every size."""
    categorical_method: Method = "auto"
    """Test for categorical features. ``auto``: the chi-squared test of homogeneity (``chisquare``) for small
    samples (``small_sample_rows``), else the Jensen-Shannon distance (``jensenshannon``)."""
    small_sample_rows: int = Field(default=1000, ge=0)
    """``auto`` judges a feature with a statistical test when its reference or its window holds at most this
    many values (Evidently: at most 1000 reference rows); above it, with a distance. Distances alarm on
    sampling noise below it: a normalised Wasserstein of 0.1 is noise between a 78-row reference and 400 rows.
    0: distances at every size."""
    p_value: float = Field(default=0.05, gt=0, lt=1)
    """A feature judged by a test (``ks``, ``chisquare``) drifts when its p-value is below this (at it: no
    drift). Also the prediction's, when ``auto`` judges the scores with ``ks``."""
    wasserstein_threshold: float = Field(default=0.1, gt=0)
    """A feature drifts when its Wasserstein distance / reference std is at least this."""
    jensenshannon_threshold: float = Field(default=0.1, gt=0, le=1)
    """A feature drifts when its Jensen-Shannon distance (natural log) is at least this."""
    psi_threshold: float = Field(default=0.1, gt=0)
    """A feature drifts when its population stability index is at least this."""
    share: float = Field(default=0.5, gt=0, le=1)
    """The window drifts (dataset drift) when at least this share of features drift."""
    prediction_threshold: float = Field(default=0.1, gt=0)
    """Prediction drift when the scores' Wasserstein distance / reference std is at least this. With
    ``numeric_method`` auto and a small sample of scores (``small_sample_rows``), the scores are judged by
    the KS test instead (p-value below ``p_value``)."""
    trigger_on_prediction_drift: bool = True
    """Retrain on prediction drift alone too (not only on dataset drift)."""
    trigger: Trigger = "both"
    """What asks for a retraining. ``drift``: dataset drift (``share``) or prediction drift
    (``trigger_on_prediction_drift``); ``performance``: a performance drop, the window's band of
    ``performance_metric`` (label-free estimate, or realised from feedback labels) wholly below the
    checked version's test band; ``both``: either of the two."""
    performance_metric: Literal["roc_auc", "accuracy"] = "roc_auc"
    """The figure whose drop triggers a retraining (``trigger`` performance or both)."""
    confidence: float = Field(default=0.95, gt=0.5, lt=1)
    """Confidence of every performance band (estimated, realised, and the checked version's test band)."""
    bootstrap_samples: int = Field(default=200, ge=20, le=10000)
    """Bootstrap draws behind the estimated and realised bands."""
    min_labelled_rows: int = Field(default=100, ge=1)
    """Fewest labelled rows of the window for the realised figures to be judged (fewer: reported only)."""
    bias_tolerance: float = Field(default=0.05, gt=0, lt=1)
    """Bias drift: a group's selection rate may move this far from the gate's (beyond its Wilson band), and the
    equalised-odds gap may grow this much over the gate's, before it is a finding."""
    bias_min_group_rows: int = Field(default=30, ge=1)
    """Bias drift: fewest rows of a group (of each label class, for the equalised-odds gap) to be judged."""
    attribution_rows: int = Field(default=2000, ge=0)
    """Attribution drift: rows of the window's sample the served version's shuffle importance is measured on,
    against the model-validation gate's ranking (0: not checked)."""
    attribution_min_agreement: float = Field(default=0.8, gt=-1, lt=1)
    """Attribution drift: the window's importance ranking has changed (a finding) when its Spearman rank
    agreement with the gate's falls below this."""
    feature_methods: dict[str, str] = Field(default_factory=dict)
    """Per-feature test, overriding the defaults, e.g. {"income": "psi"}."""
    feature_thresholds: dict[str, float] = Field(default_factory=dict)
    """Per-feature threshold of the feature's method, overriding the method's, e.g. {"income": 0.2}: a distance
    for a distance, a p-value (below 1) for a test. A test that ``auto`` picks for a small sample always uses
    ``p_value`` (the threshold set was the distance's)."""

    @model_validator(mode="after")
    def _known_methods(self) -> DriftSettings:
        if self.categorical_method in ("wasserstein", "ks"):
            raise ValueError(
                f"categorical_method {self.categorical_method}: needs numbers; use auto, chisquare, jensenshannon or psi"
            )
        bad = {k: v for k, v in self.feature_methods.items() if v not in METHODS}
        if bad:
            raise ValueError(f"feature_methods {bad}: each method must be one of {', '.join(METHODS)}")
        negative = {k: v for k, v in self.feature_thresholds.items() if not v > 0}
        if negative:
            raise ValueError(f"feature_thresholds {negative}: thresholds must be > 0")
        not_p = {
            k: v
            for k, v in self.feature_thresholds.items()
            if self.feature_methods.get(k) in TESTS and v >= 1
        }
        if not_p:
            raise ValueError(f"feature_thresholds {not_p}: a test's threshold is a p-value, below 1")
        return self

    def threshold(self, method: str) -> float:
        """The threshold of a distance, or the p-value of a test (``p_value``)."""
        return {
            "wasserstein": self.wasserstein_threshold,
            "jensenshannon": self.jensenshannon_threshold,
            "psi": self.psi_threshold,
            "ks": self.p_value,
            "chisquare": self.p_value,
        }[method]
