"""Which expectation suite the data must pass."""

from __future__ import annotations

from pydantic import BaseModel, Field

from mlops.settings import LOCAL_FILE, SETTINGS_CONFIG


class DataValidationSettings(BaseModel):
    """Settings of the validate-data step."""

    model_config = SETTINGS_CONFIG

    expectation_suite: str = Field(default="", json_schema_extra=LOCAL_FILE)
    """Path of a Great Expectations suite file. Empty: the built-in credit-default suite."""
