"""Which expectation suite the data must pass."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from mlops.settings import LOCAL_FILE, SETTINGS_CONFIG


class DataValidationSettings(BaseModel):
    """Settings of the validate-data step."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "validation"

    expectation_suite: str = Field(default="", json_schema_extra=LOCAL_FILE)
    """Path or s3:// URI of a Great Expectations suite file. Empty: the one the schema file names; on the built-in sample, the built-in credit-default suite."""
    schema_uri: str = Field(default="", json_schema_extra=LOCAL_FILE)
    """Schema file of the data (YAML from `mlops data init`; path or s3:// URI): column roles, label values, missing markers, suite and behavioural tests. It replaces label, the feature lists and the other schema parameters. Empty: those parameters (the built-in sample's by default)."""
