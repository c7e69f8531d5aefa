"""The two reports of a check: JSON with every score, and Evidently's HTML drift report on samples."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from mlops.model.reference_profile import ReferenceProfile
from mlops.monitoring.drift_result import DriftResult
from mlops.monitoring.drift_settings import DriftSettings
from mlops.monitoring.sample import reference_rows

if TYPE_CHECKING:
    import pandas as pd


def write_json(result: DriftResult, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.as_dict(), indent=2, default=float))
    return path


def write_html(
    profile: ReferenceProfile,
    window: pd.DataFrame,
    result: DriftResult,
    settings: DriftSettings,
    path: Path,
    seed: int = 0,
) -> Path:
    """Evidently's DataDriftPreset on the window sample vs a profile resample, each column with the method and
    threshold the check judged it by (``result``), so the picture uses the same tests as the decision.

    The reference is redrawn from the profile's bins, never more rows than the profile holds (more would add
    evidence the reference does not have and shrink the tests' p-values); the figures are the samples', the
    decision the full window's.
    """
    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    numeric = [p.name for p in profile.numeric] + ["prediction"]
    categorical = [p.name for p in profile.categorical]
    definition = DataDefinition(numerical_columns=numeric, categorical_columns=categorical)
    reference = reference_rows(profile, min(len(window), profile.rows), seed)
    current = window[numeric + categorical].reset_index(drop=True)
    # Evidently runs chisquare on categorical columns only: a numeric feature judged as categories (at most
    # 5 distinct values) is left to Evidently's own choice, which is the same rule (chi-squared when small).
    judged = [f for f in result.features if not (f.kind == "numeric" and f.method == "chisquare")]
    methods = {f.name: f.method for f in judged}
    thresholds = {f.name: f.threshold for f in judged}
    if result.prediction:
        methods["prediction"] = result.prediction["method"]
        thresholds["prediction"] = result.prediction["threshold"]
    preset = DataDriftPreset(
        columns=numeric + categorical,
        drift_share=settings.share,
        per_column_method=methods,
        per_column_threshold=thresholds,
    )
    snapshot = Report([preset]).run(
        current_data=Dataset.from_pandas(current, data_definition=definition),
        reference_data=Dataset.from_pandas(reference[numeric + categorical], data_definition=definition),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    snapshot.save_html(str(path))
    return path
