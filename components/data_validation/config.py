"""Which expectation suite the data must pass."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DataValidationSettings(BaseModel):
    """Settings of the validate-data step."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    expectation_suite: str = Field(
        default="",
        description="Path of a Great Expectations suite file. Empty: the built-in credit-default suite.",
    )
