"""The pipeline's input data: a file, or the built-in sample and the knobs that shape it."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from mlops.data.sample_data import SampleDataConfig
from mlops.settings import LOCAL_FILE, SETTINGS_CONFIG


class DataSettings(BaseModel):
    """Which data a run reads."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "data"

    uri: str = Field(default="", json_schema_extra=LOCAL_FILE)
    """CSV or Parquet file (local path or s3:// URI). Empty: generate the built-in sample dataset."""
    sample: SampleDataConfig = Field(default_factory=SampleDataConfig)
    """The sample dataset, used when data.uri is empty."""
