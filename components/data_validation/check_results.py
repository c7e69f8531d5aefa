"""What a validation found: per-check outcomes and the exception that carries them.

Kept apart from the GE code so reports, tests and the pipeline can read results
without importing Great Expectations (4 s).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class CheckResult(BaseModel):
    """The outcome of one expectation (or of the schema check)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    expectation: str = Field(
        description="GE expectation type, or 'dataset_schema' / 'load_*' for our checks."
    )
    column: str | None = Field(description="Column the expectation is about; None for table-level checks.")
    success: bool = Field(description="Whether the expectation held.")
    observed: Any = Field(description="What was measured, as plain JSON values.")
    observed_text: str = Field(description="The observation in words, for reports and error messages.")
    kwargs: dict[str, Any] = Field(description="The expectation's arguments (bounds, value sets, mostly).")
    notes: str | None = Field(default=None, description="Why the expectation exists, from the suite file.")

    def describe(self) -> str:
        args = ", ".join(f"{k}={_brief(v)}" for k, v in self.kwargs.items() if k != "column")
        target = f"column {self.column!r}" if self.column else "table"
        return f"{self.expectation} on {target}" + (f" ({args})" if args else "") + f": {self.observed_text}"


class DataValidationResult(BaseModel):
    """Everything a report needs: which suite, which data, and each check's outcome in suite order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    suite_name: str = Field(description="Name of the suite; empty when it could not be loaded.")
    suite_version: str = Field(description="Version of the suite; empty when it could not be loaded.")
    source: str = Field(description="Where the data came from (URI or a description).")
    dataset_digest: str = Field(default="", description="SHA-256 of the bytes the data was parsed from.")
    rows: int = Field(ge=0, description="Rows in the dataset.")
    columns: int = Field(ge=0, description="Columns in the dataset.")
    duration_s: float = Field(ge=0, description="Wall time of schema check plus GE validation.")
    checks: tuple[CheckResult, ...] = Field(description="Schema check first, then the suite's expectations.")
    notes: tuple[str, ...] = Field(
        default=(),
        description="What the run noticed without failing: suite entries skipped because the schema file no "
        "longer uses their column, declared columns no expectation checks, columns the schema does not know.",
    )

    @property
    def success(self) -> bool:
        return all(check.success for check in self.checks)

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return tuple(check for check in self.checks if not check.success)


class ValidationFailed(Exception):
    """The data broke the suite; the one-line message names every failed check, column and observation."""

    def __init__(self, result: DataValidationResult) -> None:
        self.result = result
        failed = result.failed
        suite = f"suite {result.suite_name} {result.suite_version}" if result.suite_name else "no suite"
        details = "; ".join(f"[{i}] {check.describe()}" for i, check in enumerate(failed, 1))
        super().__init__(
            f"data validation failed: {len(failed)} of {len(result.checks)} checks failed ({suite}, data "
            f"{result.source}): {details}"
        )


def _brief(value: Any, limit: int = 80) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
