"""The metrics gate's thresholds: the ``gate`` section."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field, field_validator

from mlops.settings import SETTINGS_CONFIG


class LeakagePolicy(BaseModel):
    """When the leakage gate calls a column a likely leak: a model that a few columns carry, or a column
    that only one label class fills. Each rule names the columns, so the user can ignore or acknowledge them."""

    model_config = SETTINGS_CONFIG

    enforce: bool = Field(default=True)
    """A likely leak rejects the version (false: the findings are recorded and the version may still be promoted)."""
    undefined_share: float = Field(default=0.9, gt=0.5, le=1.0)
    """A column is undefined for a label class when one filler (missing, or a single value) fills at least this share of that class's test rows."""
    defined_share: float = Field(default=0.9, gt=0.5, le=1.0)
    """A column undefined for one class is a likely leak when it holds another value in at least this share of the other class's rows (a value recorded only once the outcome happened)."""
    column_drop: float = Field(default=0.1, gt=0.0, le=0.5)
    """A likely leak: taking one column away (its values shuffled across the test rows) lowers the model's test AUC by at least this."""
    group_min_auc: float = Field(default=0.95, ge=0.5, le=1.0)
    """The group rule applies to a model whose test AUC is at least this (honest tabular models rarely reach it)."""
    group_drop: float = Field(default=0.15, gt=0.0, le=0.5)
    """A likely leak: taking a group of at most max_group columns away lowers such a model's test AUC by at least this (toward what the other columns alone achieve)."""
    max_group: int = Field(default=5, ge=1, le=20)
    """The largest group of columns taken away together (chosen greedily: each step the column whose removal costs most)."""
    min_class_rows: int = Field(default=20, ge=1)
    """Fewer test rows of either label class: the leakage checks are not conclusive (named in the reason), never a silent pass."""
    max_rows: int = Field(default=20000, ge=100)
    """Test rows the ablation scores (a fixed random sample above this): its cost grows with rows x columns x max_group."""
    repeats: int = Field(default=3, ge=1, le=20)
    """Shuffles averaged per ablation: fewer is faster, more is steadier."""
    seed: int = Field(default=0)
    """Seed of the row sample and the shuffles: the same model and test rows give the same findings."""


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
    leakage: LeakagePolicy = Field(default_factory=LeakagePolicy)
    """The leakage gate's rules (components/promotion_gate/leakage.py): columns only one label class fills, one column or a small group that carries the model."""
    # --- slice floors: a declared slice below a floor rejects the version ---
    slice_floors: dict[str, float] = Field(default_factory=dict)
    """Per-slice floors by metric, e.g. {"roc_auc": 0.6}: a declared slice (schema file slices:) whose whole interval lies below a floor rejects the version. Empty: slices are reported, not gated."""
    slice_min_rows: int = Field(default=50, ge=1)
    """Slices with fewer test rows are named in the reason as too small to decide, never silently passed or failed."""
    require_approval: bool = Field(default=False)
    """A version whose gates pass is not made champion but waits as pending-approval until a trusted approver who neither trained nor registered it signs it off (mlops approve NAME@VERSION); on for production."""

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
