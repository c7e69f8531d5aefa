"""Which expectation suite the data must pass."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mlops.settings import LOCAL_FILE


class DataValidationSettings(BaseModel):
    """Settings of the validate-data step."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    expectation_suite: str = Field(
        default="",
        json_schema_extra=LOCAL_FILE,
        description="Path of a Great Expectations suite file. Empty: the built-in credit-default suite.",
    )
