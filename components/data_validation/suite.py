"""The expectation suite file: a versioned, reviewable contract for a dataset.

The file uses Great Expectations' own expectation shape (``type`` + ``kwargs``,
optional ``notes``/``meta``) plus a semantic ``version``, so that a suite can
be diffed in code review, pinned by a pipeline run and recorded next to the
model it admitted. A suite exported from GE (``suite.to_json_dict()``) becomes a
valid file once a ``version`` is added.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

if TYPE_CHECKING:
    from great_expectations.expectations import Expectation

DEFAULT_SUITE_PATH = Path(__file__).with_name("suites") / "credit_default.json"

# Index of each expectation in its suite, carried through GE so results come back in file order.
ORDER_META_KEY = "mlops_order"


class SuiteError(ValueError):
    """An expectation suite file cannot be used; the message names the file and the fix."""


class ExpectationSpec(BaseModel):
    """One expectation as written in the suite file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str = Field(
        description="GE expectation type in snake case, e.g. expect_column_values_to_be_between."
    )
    kwargs: dict[str, Any] = Field(default_factory=dict, description="Arguments of the expectation.")
    notes: str | None = Field(default=None, description="Why this expectation exists; shown in the report.")
    meta: dict[str, Any] = Field(default_factory=dict, description="Free-form metadata kept by GE.")
    id: str | None = Field(
        default=None, description="Ignored; accepted so GE-exported suites load unchanged."
    )

    @property
    def column(self) -> str | None:
        column = self.kwargs.get("column")
        return str(column) if column is not None else None


class Suite(BaseModel):
    """A named, versioned list of expectations."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, description="Suite name, recorded with every validation.")
    version: str = Field(
        pattern=r"^\d+\.\d+\.\d+$",
        description="Semantic version of the suite; bump it on every change so runs record which rules applied.",
    )
    description: str = Field(default="", description="What the suite guards.")
    meta: dict[str, Any] = Field(default_factory=dict, description="Free-form metadata kept by GE.")
    notes: str | None = Field(default=None, description="Accepted for GE-exported suites; shown nowhere.")
    expectations: tuple[ExpectationSpec, ...] = Field(min_length=1, description="The expectations, in order.")

    def to_gx(self) -> list[Expectation]:
        """Build GE expectation objects, naming the entry when GE rejects its type or arguments."""
        from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

        built = []
        for index, spec in enumerate(self.expectations):
            meta = {**spec.meta, ORDER_META_KEY: index}
            try:
                configuration = ExpectationConfiguration(
                    type=spec.type, kwargs=spec.kwargs, meta=meta, notes=spec.notes
                )
                built.append(configuration.to_domain_obj())
            except Exception as exc:  # GE raises registry, pydantic and its own errors here
                raise SuiteError(
                    f"suite {self.name!r} expectation #{index} ({spec.type}, kwargs {spec.kwargs}) is not a valid "
                    f"Great Expectations 1.x expectation: {_first_line(exc)}. Fix the type name or its kwargs."
                ) from exc
        return built


def _first_line(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())[:500]


def _read_text(uri: str) -> str:
    if uri.startswith("s3://"):
        from mlops.data.dataset import DatasetError, read_bytes

        try:
            data = read_bytes(uri)
        except DatasetError as exc:
            raise SuiteError(f"cannot read expectation suite {uri}: {exc}") from exc
    else:
        path = Path(uri.removeprefix("file://"))
        if not path.is_file():
            raise SuiteError(
                f"expectation suite {path} does not exist or is not a file; pass the path of a suite JSON "
                f"file, or an empty string for the built-in suite"
            )
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise SuiteError(f"cannot read expectation suite {path}: {exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SuiteError(f"expectation suite {uri} is not UTF-8 text: {exc}") from exc


def load_suite(uri: str | Path) -> Suite:
    """Read and check a suite file (local path, ``file://`` or ``s3://``); GE objects are built as a check."""
    text = _read_text(str(uri))
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SuiteError(f"expectation suite {uri} is not valid JSON: {exc}") from exc
    try:
        suite = Suite.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}" for err in exc.errors()
        )
        raise SuiteError(
            f'expectation suite {uri} is malformed: {problems}. Expected keys: name, version (e.g. "1.0.0"), '
            "expectations (a list of {type, kwargs})."
        ) from exc
    suite.to_gx()
    return suite
