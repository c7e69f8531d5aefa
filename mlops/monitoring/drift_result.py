"""What a drift check found and decided: per feature its score and verdict, the window's figures, the
decision and its reasons. The JSON report is :meth:`DriftResult.as_dict`; :mod:`mlops.monitoring.judge`
fills it in."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

RETRAIN = "retrain"
NO_ACTION = "none"


@dataclass(frozen=True)
class FeatureDrift:
    name: str
    kind: str
    method: str
    """The test or distance the verdict comes from: wasserstein, jensenshannon, psi (distances), ks, chisquare."""
    score: float
    """The figure judged against ``threshold``: the distance, or the test's p-value."""
    threshold: float
    """A distance drifts at or above it; a test's p-value drifts below it."""
    drifted: bool
    reference_missing_rate: float
    window_missing_rate: float
    statistic: float = float("nan")
    """The test's statistic (KS D, chi²) or the distance itself."""
    p_value: float | None = None
    """The test's p-value (the score); None for a distance."""
    reference_rows: int = 0
    """Non-missing reference values of the feature (the sample size the method was chosen by)."""
    window_rows: int = 0
    """Non-missing window values of the feature."""
    rule: str = ""
    """Why this method and threshold, in words: the setting that chose it and the drift rule."""


@dataclass
class DriftResult:
    model_name: str
    version: str
    start: str
    end: str
    rows: int
    files: int
    features: list[FeatureDrift]
    share_drifted: float
    dataset_drift: bool
    prediction_score: float
    """The scores' normalised Wasserstein distance (reported at every size; judged when the sample is large)."""
    prediction_drift: bool
    estimated: dict[str, float]
    """CBPE from calibrated scores: accuracy and ROC AUC without labels."""
    reference_metrics: dict[str, float]
    """The checked version's test-split metrics, from its profile (the champion's only when it is the champion)."""
    realised: dict[str, float] = field(default_factory=dict)
    """Accuracy and ROC AUC on the window's rows with feedback labels; empty without labels."""
    other_versions: dict[str, int] = field(default_factory=dict)
    trigger: str = "both"
    """What could ask for a retraining (``drift.trigger``)."""
    estimated_bands: dict[str, dict[str, float]] = field(default_factory=dict)
    """The label-free estimate's bands: metric -> value, low, high (window sampling + calibration error)."""
    realised_bands: dict[str, dict[str, float]] = field(default_factory=dict)
    reference_bands: dict[str, dict[str, float]] = field(default_factory=dict)
    """The checked version's test metrics with their bands."""
    performance_drop: bool = False
    bias: list[dict[str, Any]] = field(default_factory=list)
    """Per protected attribute and group, the window's figures against the gate's (feedback named the groups)."""
    attribution: dict[str, Any] = field(default_factory=dict)
    """Attribution drift: rank agreement, whether the ranking changed, the features that moved most, and the
    window's and the gate's importances; or ``not_checked`` with the reason (empty: switched off)."""
    findings: list[str] = field(default_factory=list)
    """Monitoring findings that do not ask for a retraining: bias and attribution drift, or why they were not checked."""
    rows_from_summaries: int = 0
    """Rows of the window counted from stored daily summaries, not read again from the request log."""
    summary_days: list[str] = field(default_factory=list)
    """Days (YYYY-MM-DD) served from stored summaries."""
    prediction: dict[str, Any] = field(default_factory=dict)
    """How the scores were judged: method (wasserstein or ks), statistic, p_value, threshold, rule, sizes."""
    decision: str = NO_ACTION
    reasons: list[str] = field(default_factory=list)

    @property
    def drifted_features(self) -> list[str]:
        return [f.name for f in self.features if f.drifted]

    @property
    def headline(self) -> str:
        """The report's first line: the decision's leading reason (a performance drop leads when there is one)."""
        return f"{self.decision}: {self.reasons[0]}" if self.reasons else self.decision

    def as_dict(self) -> dict[str, Any]:
        return {"headline": self.headline, **asdict(self), "drifted_features": self.drifted_features}
