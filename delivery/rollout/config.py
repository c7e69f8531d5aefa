"""The typed rollout configuration: stages, bake interval, traffic floor and the analysis thresholds.

One :class:`RolloutConfig` describes a whole progressive delivery, in the style of
Flagger / Argo Rollouts: an optional shadow stage (the challenger scores a copy of
live requests, its answers are never returned), then canary steps, each held for
``bake_interval_s`` and judged at every interval. Its field names are the
``mlops rollout start`` flags and the training pipeline's ``canary`` parameters.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field, field_validator

from mlops.settings import SETTINGS_CONFIG

SHADOW = "shadow"
"""The name of the shadow stage in a rollout's plan and history."""


class RolloutConfig(BaseModel):
    """How a challenger moves towards champion, and what it must show at every interval."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "rollout"

    shadow: bool = True
    """Start with a shadow stage: the challenger scores a copy of every request, the champion answers."""
    canary_steps: tuple[int, ...] = (5, 25, 50, 100)
    """Percent of requests the challenger answers at each canary step, increasing, ending at 100."""
    bake_interval_s: float = Field(default=60.0, gt=0.0)
    """Seconds of traffic in one analysis interval."""
    intervals_per_step: int = Field(default=1, ge=1)
    """Passing intervals a stage needs before the next one starts."""
    min_requests: int = Field(default=100, ge=1)
    """Requests the challenger must score in an interval for it to be judged; fewer means waiting."""
    failure_threshold: int = Field(default=2, ge=1)
    """Failed intervals (counted over the whole rollout) that trigger a rollback."""
    max_waiting_intervals: int = Field(default=0, ge=0)
    """Intervals with too little traffic tolerated in a row before the rollout rolls back; 0 waits forever."""
    max_error_rate_increase: float = Field(default=0.01, ge=0.0, le=1.0)
    """How much the challenger's error rate may exceed the champion's over the same interval."""
    max_p99_latency_ratio: float = Field(default=1.5, gt=0.0)
    """The challenger's p99 scoring latency may be at most this multiple of the champion's."""
    max_p99_latency_ms: float = Field(default=250.0, gt=0.0)
    """The challenger's p99 scoring latency may never exceed this many milliseconds."""
    min_latency_increase_ms: float = Field(default=1.0, ge=0.0)
    """A p99 increase smaller than this never fails the ratio check (histogram resolution, scheduler noise)."""
    max_disagreement: float = Field(default=0.05, ge=0.0, le=1.0)
    """Shadow stage: the largest share of rows on which the two models predict different classes."""
    agreement_threshold: float = Field(default=0.5, gt=0.0, lt=1.0)
    """Score at or above which a row counts as the positive class when comparing predictions."""
    max_score_shift: float = Field(default=0.2, ge=0.0, le=1.0)
    """Largest Kolmogorov-Smirnov distance between the two models' score distributions in an interval."""
    significance: float = Field(default=0.01, gt=0.0, lt=0.5)
    """Significance level of the score-shift and disagreement tests: a difference the interval's sample
    cannot tell from noise (a 5 % step sees few challenger rows) never fails a check."""

    quality_alpha: float = Field(default=0.05, gt=0.0, lt=0.5)
    """Quality test (when the rollout has a quality feed): bound on a false rollback of a challenger as good as
    the champion, and on a false promotion of one worse by the margin, over the whole rollout however often
    it is analysed (an always-valid sequential test, :mod:`delivery.rollout.sequential`)."""
    quality_auc_margin: float = Field(default=0.01, ge=0.0, lt=0.5)
    """Quality test: a challenger whose realised ROC AUC is lower by less than this counts as not worse."""
    quality_accuracy_margin: float = Field(default=0.01, ge=0.0, lt=0.5)
    """Quality test: the same margin for the label-free estimate of accuracy."""
    quality_min_pairs: int = Field(default=100, ge=1)
    """Quality test: paired units a figure needs before it may decide (the test itself needs evidence too)."""

    @field_validator("canary_steps")
    @classmethod
    def _steps_rise_to_100(cls, steps: tuple[int, ...]) -> tuple[int, ...]:
        if not steps:
            raise ValueError("canary_steps is empty; give at least one step ending at 100, e.g. 5,25,50,100")
        if any(not 0 < step <= 100 for step in steps):
            raise ValueError(f"canary_steps {list(steps)}: every step must be within 1..100 percent")
        if any(b <= a for a, b in zip(steps, steps[1:], strict=False)):
            raise ValueError(f"canary_steps {list(steps)} must increase strictly, e.g. 5,25,50,100")
        if steps[-1] != 100:
            raise ValueError(
                f"canary_steps {list(steps)} must end at 100 so the challenger serves all traffic"
            )
        return steps

    @property
    def stages(self) -> tuple[str, ...]:
        """The plan: ``shadow`` (when on) then each canary percentage, as text (``"5"``, ``"25"`` …)."""
        return ((SHADOW,) if self.shadow else ()) + tuple(str(step) for step in self.canary_steps)
