"""The metrics gate's thresholds: the ``gate`` section."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

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
