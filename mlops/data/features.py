"""Feature encoding fitted on the training split and carried inside the model.

The encoded matrix keeps numeric values raw (NaN allowed) and turns each
categorical value into an integer code (0 = missing or unseen). Imputation and
standardisation happen inside :class:`training.model.TabularNet` from the
statistics stored here, so the exported ONNX model applies exactly the
preprocessing that training used and a server needs nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np
    import pandas as pd

    from mlops.data.dataset import DatasetSchema


class FeatureSpec(BaseModel):
    """Statistics and vocabularies learned from the training split."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    numeric: tuple[str, ...] = Field(description="Numeric feature names, in input order.")
    medians: tuple[float, ...] = Field(description="Per numeric feature: value that replaces NaN.")
    means: tuple[float, ...] = Field(description="Per numeric feature: mean after imputation.")
    stds: tuple[float, ...] = Field(description="Per numeric feature: std after imputation (>0).")
    categorical: tuple[str, ...] = Field(default=(), description="Categorical feature names, after numerics.")
    vocabularies: tuple[tuple[str, ...], ...] = Field(
        default=(), description="Per categorical feature: known values; value i is encoded as i + 1."
    )

    label: str = Field(default="", description="Label column the model predicts.")
    classes: tuple[str, str] = Field(
        default=("0", "1"),
        description="Label values [negative, positive]; the model's probability is of the positive one.",
    )
    # Columns a raw data row may carry that are not model inputs, so rows can be served as they are.
    protected: tuple[str, ...] = Field(
        default=(), description="Protected-attribute columns of the schema: in the data, never model inputs."
    )
    ignored: tuple[str, ...] = Field(
        default=(),
        description="Ignored columns of the schema (identifiers, free text, leaks): in the data only.",
    )
    subject: str = Field(
        default="",
        description="The schema's subject_key (the column naming the person a row is about): never a model "
        "input; the request log keeps it beside a row that carries it, so `mlops forget` finds the person's rows.",
    )

    @model_validator(mode="after")
    def _lengths_match(self) -> FeatureSpec:
        n = len(self.numeric)
        if not (len(self.medians) == len(self.means) == len(self.stds) == n):
            raise ValueError("medians, means and stds must each have one value per numeric feature")
        if len(self.vocabularies) != len(self.categorical):
            raise ValueError("vocabularies must have one entry per categorical feature")
        return self

    @property
    def names(self) -> tuple[str, ...]:
        return self.numeric + self.categorical

    @property
    def not_inputs(self) -> frozenset[str]:
        """Columns of a data row that are not model inputs: the label, protected, ignored and subject columns."""
        return frozenset((self.label, *self.protected, *self.ignored, self.subject)) - {""}

    @property
    def n_features(self) -> int:
        return len(self.numeric) + len(self.categorical)

    @classmethod
    def fit(cls, frame: pd.DataFrame, schema: DatasetSchema) -> FeatureSpec:
        import numpy as np

        medians, means, stds = [], [], []
        for col in schema.numeric_features:
            values = frame[col].astype(float)
            median = float(values.median()) if values.notna().any() else 0.0
            filled = values.fillna(median)
            std = float(filled.std(ddof=0))
            medians.append(median)
            means.append(float(filled.mean()))
            stds.append(std if np.isfinite(std) and std > 1e-12 else 1.0)
        vocabularies = tuple(
            tuple(sorted(str(v) for v in frame[col].dropna().unique())) for col in schema.categorical_features
        )
        return cls(
            numeric=schema.numeric_features,
            medians=tuple(medians),
            means=tuple(means),
            stds=tuple(stds),
            categorical=schema.categorical_features,
            vocabularies=vocabularies,
            label=schema.label,
            classes=(schema.negative_label, schema.positive_label),
            protected=schema.protected_attributes,
            ignored=schema.ignored_columns,
            subject=schema.subject_key,
        )

    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        """Return float32 [rows, n_features]: numerics raw, categoricals as codes."""
        import numpy as np

        missing = [c for c in self.names if c not in frame.columns]
        if missing:
            raise ValueError(
                f"input lacks feature column(s) {missing}; the model was trained on {list(self.names)}"
            )
        out = np.empty((len(frame), self.n_features), dtype=np.float32)
        for i, col in enumerate(self.numeric):
            try:
                out[:, i] = frame[col].to_numpy(dtype=np.float32, na_value=np.nan)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"feature {col!r} must be numeric: {exc}") from exc
        offset = len(self.numeric)
        for j, (col, vocab) in enumerate(zip(self.categorical, self.vocabularies, strict=True)):
            out[:, offset + j] = category_codes(frame[col], vocab)
        return out

    def save(self, path: Path) -> None:
        path.write_text(self.model_dump_json(indent=2))

    @classmethod
    def load(cls, path: Path) -> FeatureSpec:
        return cls.model_validate(json.loads(path.read_text()))


def category_codes(series: pd.Series, vocabulary: Sequence[str]) -> np.ndarray:
    """Each cell's 1-based place in ``vocabulary`` (by its text), 0 for missing or unseen values.

    Looked up once per distinct value where the dtype makes the values one type (at 5M rows a
    lookup per cell took seconds per column); an ``object`` column may mix ``1`` and ``True``
    (one value to a hash table, two texts), so it keeps a lookup per cell.
    """
    import numpy as np
    import pandas as pd

    index = {v: k + 1 for k, v in enumerate(vocabulary)}
    if series.dtype == object:
        return np.array(
            [index.get(str(v), 0) if v is not None and v == v else 0 for v in series], dtype=np.float32
        )
    codes, uniques = pd.factorize(series)  # missing values get code -1: the last place, 0
    places = np.array([*(index.get(str(value), 0) for value in uniques), 0], dtype=np.float32)
    return places[codes]
