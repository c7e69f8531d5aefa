"""The ``registration`` section: which registered model a training run adds a version to, and why the run was
started. Its own module because the pipeline, the register step and the retrain trigger (which sets
``registration.trigger`` on the run it starts) all read it."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from mlops.settings import SETTINGS_CONFIG
from mlops.vocabulary import NAME_PATTERN


class RegistrationSettings(BaseModel):
    """Which registered model a run adds a version to, and the code it came from."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "registration"

    model_name: str = Field(default="credit-default", pattern=NAME_PATTERN)
    """Registered model name in the MLflow model registry."""
    git_commit: str = Field(default="")
    """Commit of the pipeline code, recorded on the model version."""
    trigger: str = Field(default="")
    """Why this run was started, recorded on the model version: empty for a manual run, else set by the monitor."""
    explain_reference_rows: int = Field(default=64, ge=0, le=10_000)
    """Rows of the test split stored with the version (explain_reference.parquet, with the subject_key column) that its served reasons are measured against; 0 stores none, and the version then answers no reasons."""
