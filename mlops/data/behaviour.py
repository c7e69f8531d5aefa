"""Behavioural tests a dataset's declaration names: what must (not) move the model's score.

They live here, below the components, because two steps read them: validate-data checks
every named column exists before any training, and the model-validation gate runs them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from mlops.settings import SETTINGS_CONFIG


class InvarianceTest(BaseModel):
    """Perturbing ``feature`` must barely move the predicted probability."""

    model_config = SETTINGS_CONFIG

    feature: str = Field(min_length=1)
    """Model feature that must not matter."""
    perturbation: Literal["permute", "shift"] = Field(default="permute")
    """permute: shuffle the column across rows (any feature); shift: add `shift` (numeric only)."""
    shift: float = Field(default=0.0, allow_inf_nan=False)
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
    delta: float = Field(allow_inf_nan=False)
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


class BehaviouralSuite(BaseModel):
    """Behavioural tests that replace the dataset's declared ones (empty: the declared ones run)."""

    model_config = SETTINGS_CONFIG

    invariance: tuple[InvarianceTest, ...] = Field(default=())
    """Features whose perturbation must not matter. Empty: the dataset schema's invariance tests (the built-in sample's on the sample)."""
    directional: tuple[DirectionalTest, ...] = Field(default=())
    """Features whose change must move the score one way. Empty: the dataset schema's directional tests (the built-in sample's on the sample)."""
