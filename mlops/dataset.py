"""Tabular datasets: the declared schema, loading from a path or s3://, and the digest.

Every component that touches data goes through :func:`load_table` so that local
files and S3 objects behave the same and every failure names the file and the fix.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, model_validator

from mlops.settings import SETTINGS_CONFIG

if TYPE_CHECKING:
    import pandas as pd


PARQUET_MAGIC = b"PAR1"


class DatasetError(ValueError):
    """A dataset cannot be used as declared; the message says what and how to fix it."""


class DatasetSchema(BaseModel):
    """Which columns of a table play which role."""

    model_config = SETTINGS_CONFIG

    label: str
    """Binary label column (0/1)."""
    numeric_features: tuple[str, ...]
    """Numeric feature columns; NaN allowed."""
    categorical_features: tuple[str, ...] = Field(default=())
    """String category columns."""
    protected_attributes: tuple[str, ...] = Field(default=())
    """Columns used only for fairness checks, never as model inputs."""

    @model_validator(mode="after")
    def _columns_distinct(self) -> DatasetSchema:
        if not self.numeric_features and not self.categorical_features:
            raise ValueError("schema declares no features; list numeric_features and/or categorical_features")
        seen: dict[str, str] = {}
        for role, cols in (
            ("label", (self.label,)),
            ("numeric_features", self.numeric_features),
            ("categorical_features", self.categorical_features),
            ("protected_attributes", self.protected_attributes),
        ):
            for col in cols:
                if col in seen:
                    raise ValueError(f"column {col!r} is declared as both {seen[col]} and {role}")
                seen[col] = role
        return self

    @property
    def features(self) -> tuple[str, ...]:
        return self.numeric_features + self.categorical_features

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.label, *self.features, *self.protected_attributes)

    def check(self, frame: pd.DataFrame, source: str = "dataset") -> None:
        """Raise :class:`DatasetError` when ``frame`` cannot be used with this schema."""
        if frame.empty:
            raise DatasetError(f"{source} has no rows; provide a file with data")
        missing = [c for c in self.columns if c not in frame.columns]
        if missing:
            raise DatasetError(
                f"{source} lacks column(s) {missing}; present: {sorted(frame.columns)}. "
                "Fix the file or declare the schema that matches it."
            )
        import pandas as pd

        for col in self.numeric_features:
            if not pd.api.types.is_numeric_dtype(frame[col]):
                sample = frame[col].dropna().astype(str).head(3).tolist()
                raise DatasetError(
                    f"{source} column {col!r} must be numeric but has dtype {frame[col].dtype} "
                    f"(values like {sample}); clean it or declare it categorical"
                )
        labels = frame[self.label]
        if labels.isna().any():
            raise DatasetError(
                f"{source} label {self.label!r} has {int(labels.isna().sum())} NaN value(s); "
                "drop or fill those rows"
            )
        values = set(pd.unique(labels))
        if not values <= {0, 1}:
            raise DatasetError(f"{source} label {self.label!r} must be 0/1, found {sorted(map(str, values))}")
        if len(values) < 2:
            raise DatasetError(
                f"{source} label {self.label!r} has a single class {sorted(map(str, values))}; "
                "a classifier needs both 0 and 1"
            )


SCHEMA_METADATA_KEY = "schema"
"""Key of the schema in a Dataset artifact's metadata: the schema travels with the data from validate-data on."""


def schema_from_metadata(metadata: Mapping[str, Any], source: str) -> DatasetSchema:
    """The schema a Dataset artifact carries; a clear error when it carries none."""
    raw = metadata.get(SCHEMA_METADATA_KEY)
    if not isinstance(raw, Mapping):
        raise DatasetError(
            f"{source} carries no {SCHEMA_METADATA_KEY!r} in its metadata; pass a Dataset produced by "
            "validate-data (or train-model's test_data), which record the schema they were checked against"
        )
    return DatasetSchema.model_validate(dict(raw))


def read_bytes(uri: str) -> bytes:
    """Read a local path, ``file://`` URI or ``s3://bucket/key`` object (through :mod:`mlops.storage`)."""
    from mlops import storage

    try:
        return storage.read_bytes(uri)
    except storage.ObjectNotFound as exc:
        if uri.startswith("s3://"):
            raise DatasetError(f"{exc}; check --data") from exc
        path = Path(uri.removeprefix("file://"))
        raise DatasetError(f"dataset file {path} does not exist or is not a file; check --data") from exc
    except storage.StorageError as exc:
        raise DatasetError(str(exc)) from exc


def sha256_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse_table(data: bytes, uri: str) -> pd.DataFrame:
    """Parse Parquet (recognised by its ``PAR1`` magic bytes, whatever the name) or CSV bytes."""
    import pandas as pd

    if not data:
        raise DatasetError(f"dataset {uri} is empty (0 bytes); provide a CSV or Parquet file with rows")
    is_parquet = data[:4] == PARQUET_MAGIC
    try:
        if is_parquet:
            return pd.read_parquet(io.BytesIO(data))
        return pd.read_csv(io.BytesIO(data))
    except Exception as exc:  # pandas/pyarrow raise many parser errors
        kind = "Parquet" if is_parquet else "CSV"
        raise DatasetError(f"cannot parse dataset {uri} as {kind}: {exc}") from exc


def load_table(uri: str) -> tuple[pd.DataFrame, str]:
    """Load a table and return it with the SHA-256 digest of the bytes it came from."""
    data = read_bytes(uri)
    return parse_table(data, uri), sha256_digest(data)
