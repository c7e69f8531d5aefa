"""The fairness objective of a tuning trial: how unequally the trial's model treats the protected groups.

``fairness_gap`` is the largest, over the protected attributes, of the demographic-parity
difference (gap between the groups' selection rates) and the equalized-odds difference
(largest gap in true- or false-positive rate), the disparities the model-validation gate
limits (``model_validation.fairness``), on the *validation* split (the test split stays
unseen until evaluation). Groups under :data:`MIN_GROUP_ROWS` rows are left out, as the
gate leaves out groups under its default ``min_group_size``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from mlops.data.dataset import DatasetSchema
    from training.config import TrainConfig
    from training.trainer import TrainResult

MIN_GROUP_ROWS = 30
THRESHOLD = 0.5


def attribute_gap(y: np.ndarray, predicted: np.ndarray, groups: np.ndarray) -> float:
    """max(demographic-parity difference, equalized-odds difference) over the groups of one attribute."""
    import numpy as np

    rates = []
    for group in np.unique(groups):
        rows = groups == group
        if rows.sum() < MIN_GROUP_ROWS:
            continue
        positives, negatives = rows & (y == 1), rows & (y == 0)
        rates.append(
            (
                predicted[rows].mean(),
                predicted[positives].mean() if positives.any() else np.nan,
                predicted[negatives].mean() if negatives.any() else np.nan,
            )
        )
    if len(rates) < 2:
        return 0.0
    table = np.asarray(rates, dtype=float)
    spans = [np.nanmax(column) - np.nanmin(column) for column in table.T if np.isfinite(column).sum() >= 2]
    return float(max(spans)) if spans else 0.0


def fairness_gap(y: np.ndarray, probability: np.ndarray, groups: Sequence[np.ndarray]) -> float:
    """The largest gap over every protected attribute's groups (0 with no attribute)."""
    import numpy as np

    predicted = (np.asarray(probability) >= THRESHOLD).astype(float)
    return max(
        (attribute_gap(np.asarray(y), predicted, np.asarray(g).astype(str)) for g in groups), default=0.0
    )


def trial_gap(result: TrainResult, frame: pd.DataFrame, schema: DatasetSchema, config: TrainConfig) -> float:
    """The trial model's fairness gap on the validation split the training core held out (same seed)."""
    from training.data_splits import split_frame
    from training.onnx_export import torch_probabilities

    if not schema.protected_attributes:
        raise ValueError(
            "tune.objectives asks for fairness_gap but the schema declares no protected_attributes; "
            "declare them (schema file) or tune val_auc alone"
        )
    val = split_frame(frame, schema, config).val
    probability = torch_probabilities(result.model, result.model.spec.encode(val))
    y = val[schema.label].astype(int).to_numpy()
    return fairness_gap(y, probability, [val[a].to_numpy() for a in schema.protected_attributes])
