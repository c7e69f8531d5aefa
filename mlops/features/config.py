"""Where the Feast environment lives, how long its commands may take, and how much training/serving skew a
feature may show."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, Field

from mlops.settings import SETTINGS_CONFIG

FEAST_PIN = "0.67.0"
"""The one Feast version the seam speaks to (its CLI flags, feature-server body, repo layout); also pinned in
infra/testing/install_feast.sh, which builds the venv named after it."""

HOME_ENV = "MLOPS_FEAST_HOME"
"""Where the install script builds, and the platform looks for, the Feast venvs."""

INSTALL_SCRIPT = Path(__file__).resolve().parents[2] / "infra" / "testing" / "install_feast.sh"
"""The script that builds the Feast venv (idempotent, cached per machine)."""


class FeastSettings(BaseModel):
    """How the platform reaches Feast: a venv of its own, its CLI, its feature server."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "features"

    home: Path = Field(default_factory=lambda: Path(os.environ.get(HOME_ENV, "~/.cache/mlops-feast")))
    """Directory holding the Feast venvs, one per pinned version (venv-<pin>); default $MLOPS_FEAST_HOME, which the install script reads too, else ~/.cache/mlops-feast."""
    command_timeout_s: float = Field(default=600.0, gt=0)
    """Longest a Feast command (apply, materialize, the historical join) may run before it is stopped and reported."""
    server_start_timeout_s: float = Field(default=180.0, gt=0)
    """Longest `feast serve` may take to answer /health before the start is reported as failed (with its log); it imports all of Feast, seconds on a quiet machine, tens on a loaded one."""
    request_timeout_s: float = Field(default=10.0, gt=0)
    """Longest one online lookup (a batched get-online-features request) may wait for the feature server."""

    @property
    def venv(self) -> Path:
        return self.home.expanduser() / f"venv-{FEAST_PIN}"


class SkewPolicy(BaseModel):
    """How much online/offline disagreement a feature may show, and how many rows a verdict needs."""

    model_config = SETTINGS_CONFIG

    max_share: float = Field(default=0.01, ge=0.0, le=1.0)
    """Largest share of compared rows whose online value may differ from the offline one before the feature fails."""
    min_rows: int = Field(default=20, ge=1)
    """Fewest rows with an offline value for a feature to be judged at all; fewer is not conclusive."""
    sample_rows: int = Field(default=1000, ge=1)
    """Most served rows compared (a seeded random sample of the window): the offline join costs seconds per thousand."""
    relative_tolerance: float = Field(default=1e-6, ge=0.0)
    """Numbers closer than this (relative to the larger) are equal: float32 on one side, float64 on the other."""
    seed: int = 0
    """Seed of the sample, so a report can be reproduced."""
