"""How closely the ONNX export must reproduce the torch model."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from mlops.settings import SETTINGS_CONFIG


class ExportSettings(BaseModel):
    """Settings of the export-onnx step."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "export"

    tolerance: float = Field(default=1e-4, gt=0.0, lt=1.0)
    """Largest allowed absolute difference between ONNX Runtime and torch probabilities."""
