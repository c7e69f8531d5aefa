"""Where the Feast environment lives and how long its commands may take."""

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
