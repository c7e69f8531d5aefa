"""Hand-built inputs for gate tests: feature specs, stub scorers and scored group frames.

Gate thresholds are pinned with exact values, so these helpers produce numbers that
floating point represents exactly (multiples of powers of two), never model outputs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from components.model_validation.scoring import ModelUnderCheck
from mlops.data.features import FeatureSpec

POSITIVE_SCORE = 0.75
"""A score above the default decision threshold 0.5: predicted positive."""
NEGATIVE_SCORE = 0.25
"""A score below the default decision threshold 0.5: predicted negative."""


def numeric_spec(*numeric: str, categorical: dict[str, tuple[str, ...]] | None = None) -> FeatureSpec:
    """A spec that leaves numerics as they are (median 0, mean 0, std 1)."""
    categorical = categorical or {}
    n = len(numeric)
    return FeatureSpec(
        numeric=numeric,
        medians=(0.0,) * n,
        means=(0.0,) * n,
        stds=(1.0,) * n,
        categorical=tuple(categorical),
        vocabularies=tuple(categorical.values()),
    )


def stub_scorer(spec: FeatureSpec, probability: Callable[[np.ndarray], np.ndarray]) -> ModelUnderCheck:
    """A :class:`ModelUnderCheck` whose probability is ``probability(encoded matrix)``, computed in float64."""
    return ModelUnderCheck(
        spec, lambda x: np.asarray(probability(np.asarray(x, dtype=np.float64)), dtype=np.float64)
    )


def confusion_group(tp: int, fn: int, fp: int, tn: int) -> tuple[list[int], list[float]]:
    """Labels and scores of one group with exactly these confusion-matrix counts at threshold 0.5."""
    labels = [1] * tp + [1] * fn + [0] * fp + [0] * tn
    scores = [POSITIVE_SCORE] * tp + [NEGATIVE_SCORE] * fn + [POSITIVE_SCORE] * fp + [NEGATIVE_SCORE] * tn
    return labels, scores


def scored_groups(
    groups: dict[str, tuple[list[int], list[float]]], attribute: str = "g", label: str = "y"
) -> tuple[pd.DataFrame, np.ndarray]:
    """One frame (label + protected attribute) and its scores from per-group (labels, scores)."""
    labels: list[int] = []
    scores: list[float] = []
    names: list[str] = []
    for name, (y, s) in groups.items():
        labels += y
        scores += s
        names += [name] * len(y)
    return pd.DataFrame({label: labels, attribute: names}), np.array(scores, dtype=np.float64)
