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


class ProfileSettings(BaseModel):
    """How `mlops data init` reads a table: when a column is a leak, near constant, a date, mostly numbers."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "profile"

    leak_auc: float = Field(default=0.9, gt=0.5, le=1.0)
    """A feature whose single-feature ROC AUC (either direction) is above this is flagged as leaking the label."""
    numeric_share: float = Field(default=0.95, gt=0.5, le=1.0)
    """A text column whose non-missing cells are numbers at least this often is numeric; the rest are bad cells."""
    near_constant_share: float = Field(default=0.99, gt=0.5, le=1.0)
    """A feature whose most common value fills at least this share of the rows is flagged as near constant."""
    high_cardinality: int = Field(default=50, ge=2)
    """A categorical feature with more distinct values than this is flagged as high-cardinality."""
    date_share: float = Field(default=0.95, gt=0.5, le=1.0)
    """A text column whose non-missing cells read as dates/timestamps at least this often is a date column."""
