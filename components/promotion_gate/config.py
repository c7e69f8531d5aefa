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
    """How much lower than the champion's AUC (same data) is tolerated."""
