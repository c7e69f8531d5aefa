"""The metrics gate's thresholds: the ``gate`` section."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field, field_validator

from mlops.settings import SETTINGS_CONFIG


class MetricsGatePolicy(BaseModel):
    """Thresholds a challenger must clear on held-out test data."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "gate"

    auc_floor: float = Field(default=0.7, ge=0.0, le=1.0)
    """Minimum test ROC AUC."""
    max_auc_regression: float = Field(default=0.01, ge=0.0, le=1.0)
    """How much lower than the champion's AUC (on the test rows the champion did not learn from) is tolerated."""
    too_good_auc: float = Field(default=0.99, ge=0.5, le=1.0)
    """A test AUC at or above this is too good to be true when one feature alone explains it (see leak_margin)."""
    leak_margin: float = Field(default=0.02, ge=0.0, le=0.5)
    """One feature explains the model when its own AUC is at least the model's minus this: rejected, naming it."""
    # --- slice floors (issue 29) ---
    slice_floors: dict[str, float] = Field(default_factory=dict)
    """Per-slice floors by metric, e.g. {"roc_auc": 0.6}: a declared slice (schema file slices:) whose whole interval lies below a floor rejects the version. Empty: slices are reported, not gated."""
    slice_min_rows: int = Field(default=50, ge=1)
    """Slices with fewer test rows are named in the reason as too small to decide, never silently passed or failed."""

    @field_validator("slice_floors")
    @classmethod
    def _known_metrics(cls, floors: dict[str, float]) -> dict[str, float]:
        known = {"roc_auc", "pr_auc", "accuracy", "f1", "positive_rate"}  # higher is better
        unknown = sorted(set(floors) - known)
        if unknown:
            raise ValueError(
                f"slice_floors names unknown metric(s) {unknown}; floors apply to {sorted(known)}"
            )
        bad = {k: v for k, v in floors.items() if not 0.0 <= v <= 1.0}
        if bad:
            raise ValueError(f"slice_floors must lie in [0, 1], got {bad}")
        return floors
