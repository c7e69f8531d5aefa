"""The train/validation/test split and the encoded arrays the training processes receive.

The split is by each row's stable hash (:mod:`training.row_split`), so a
retried task, a resumed run, a run with another seed and a run on grown data
all keep a row in the same split. The :class:`FeatureSpec` is fitted on the training rows
only: statistics of validation or test rows leaking into the model's
preprocessing would make both metrics optimistic.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mlops.data.dataset import DatasetError, DatasetSchema
from mlops.data.features import FeatureSpec
from training.config import TrainConfig
from training.row_split import TEST, TRAIN, VAL, SplitRule, rule_for

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


@dataclass(frozen=True)
class Splits:
    """Disjoint row subsets of the input frame, original index and columns kept."""

    train: pd.DataFrame
    """Rows the model (and the feature statistics) learn from."""
    val: pd.DataFrame
    """Rows for per-epoch validation and early stopping."""
    test: pd.DataFrame
    """Rows never seen during training; for the evaluation step."""


@dataclass(frozen=True)
class EncodedData:
    """What every training process needs: plain arrays, cheap to pickle to spawned workers."""

    spec: FeatureSpec
    """Encoding fitted on the training split."""
    x_train: np.ndarray
    """float32 [rows, features] from :meth:`FeatureSpec.encode`."""
    y_train: np.ndarray
    """float32 [rows] of 0/1 labels."""
    x_val: np.ndarray
    """Validation features, encoded like ``x_train``."""
    y_val: np.ndarray
    """Validation labels."""

    def check_finite(self) -> None:
        """Refuse infinite features (NaN is a missing value the model imputes; ±inf is not): training
        would go on with NaN losses and fail later, unclearly.

        Raises :class:`DatasetError` naming each affected feature and its count of bad rows.
        """
        import numpy as np

        names = self.spec.names
        bad: dict[str, int] = {}
        for x in (self.x_train, self.x_val):
            counts = np.isinf(x).sum(axis=0)
            for column in np.flatnonzero(counts):
                name = names[column] if x.shape[1] == len(names) else f"column {column}"
                bad[name] = bad.get(name, 0) + int(counts[column])
        if bad:
            listed = ", ".join(f"{name!r} ({count} rows)" for name, count in sorted(bad.items()))
            raise DatasetError(
                f"infinite feature values after encoding to float32: {listed}. Values beyond float32's "
                "range (about 3.4e38, e.g. 1e300) do this; clip or drop them, or declare them missing "
                "in the schema, then train again."
            )

    def fingerprint(self) -> str:
        """SHA-256 of the arrays and the spec: a checkpoint only resumes on exactly the same data."""
        digest = hashlib.sha256(self.spec.model_dump_json().encode())
        for array in (self.x_train, self.y_train, self.x_val, self.y_val):
            digest.update(str(array.shape).encode())
            digest.update(array.tobytes())
        return digest.hexdigest()


def split_frame(frame: pd.DataFrame, schema: DatasetSchema, config: TrainConfig) -> Splits:
    """Train/val/test by each row's stable hash (:mod:`training.row_split`): the same row lands in the
    same split in every run, whatever the seed, and however many rows were added since."""
    rule = split_rule(schema, config)
    labels = frame[schema.label].astype(int)
    counts = labels.value_counts()
    smallest = min(config.val_fraction, config.test_fraction)
    needed = int(3 / smallest) + 1
    if len(frame) < needed or counts.min() < 3:
        raise DatasetError(
            f"dataset has {len(frame)} rows (class counts {counts.to_dict()}); a "
            f"{config.val_fraction:.0%}/{config.test_fraction:.0%} validation/test split needs at least "
            f"{needed} rows and 3 of each class. Provide more data or raise val_fraction/test_fraction."
        )
    where = rule.assign(frame)
    # Positions, not index labels: a user's frame may carry a duplicated index.
    parts = {name: frame.iloc[(where == name).nonzero()[0]] for name in (TRAIN, VAL, TEST)}
    for name, part in parts.items():
        classes = set(part[schema.label].astype(int).unique().tolist())
        if classes != {0, 1}:
            raise DatasetError(
                f"the {name} split holds {len(part)} rows of class(es) {sorted(classes)} only; each split needs "
                f"both classes. Provide more rows, raise val_fraction/test_fraction, or check split_key "
                f"{schema.split_key!r} (rows sharing a key stay together)"
                if schema.split_key
                else f"the {name} split holds {len(part)} rows of class(es) {sorted(classes)} only; each split "
                "needs both classes. Provide more rows or raise val_fraction/test_fraction."
            )
    return Splits(train=parts[TRAIN], val=parts[VAL], test=parts[TEST])


def split_rule(schema: DatasetSchema, config: TrainConfig) -> SplitRule:
    """The rule this run splits by, as recorded on the registered version."""
    return rule_for(schema.split_columns, config.val_fraction, config.test_fraction)


def encode_splits(splits: Splits, schema: DatasetSchema) -> EncodedData:
    import numpy as np

    spec = FeatureSpec.fit(splits.train, schema)
    data = EncodedData(
        spec=spec,
        x_train=spec.encode(splits.train),
        y_train=splits.train[schema.label].to_numpy(dtype=np.float32),
        x_val=spec.encode(splits.val),
        y_val=splits.val[schema.label].to_numpy(dtype=np.float32),
    )
    data.check_finite()
    return data
