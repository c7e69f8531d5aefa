"""The two reports of a check: JSON with every score, and Evidently's HTML drift report on samples."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from components.drift_monitor.config import DriftSettings
from components.drift_monitor.drift_monitor import DriftResult
from components.drift_monitor.sample import reference_rows
from mlops.model.reference_profile import ReferenceProfile

if TYPE_CHECKING:
    import pandas as pd


def write_json(result: DriftResult, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.as_dict(), indent=2, default=float))
    return path


def write_html(
    profile: ReferenceProfile, window: pd.DataFrame, settings: DriftSettings, path: Path, seed: int = 0
) -> Path:
    """Evidently's DataDriftPreset (our methods and thresholds) on the window sample vs a profile resample."""
    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    numeric = [p.name for p in profile.numeric] + ["prediction"]
    categorical = [p.name for p in profile.categorical]
    definition = DataDefinition(numerical_columns=numeric, categorical_columns=categorical)
    reference = reference_rows(profile, len(window), seed)
    current = window[numeric + categorical].reset_index(drop=True)
    preset = DataDriftPreset(
        columns=numeric + categorical,
        drift_share=settings.share,
        num_method=settings.numeric_method,
        cat_method=settings.categorical_method,
        per_column_method=dict(settings.feature_methods) or None,
        per_column_threshold=dict(settings.feature_thresholds) or None,
        num_threshold=settings.threshold(settings.numeric_method),
        cat_threshold=settings.threshold(settings.categorical_method),
    )
    snapshot = Report([preset]).run(
        current_data=Dataset.from_pandas(current, data_definition=definition),
        reference_data=Dataset.from_pandas(reference[numeric + categorical], data_definition=definition),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    snapshot.save_html(str(path))
    return path
