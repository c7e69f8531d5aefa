"""Tabular datasets: the declared schema, loading from a path or s3://, and the digest.

Every component that touches data goes through :func:`load_table` so that local
files and S3 objects behave the same and every failure names the file and the fix.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, Field, model_validator

from mlops.data.slice_spec import SliceSpec
from mlops.settings import SETTINGS_CONFIG

if TYPE_CHECKING:
    import pandas as pd


PARQUET_MAGIC = b"PAR1"


class DatasetError(ValueError):
    """A dataset cannot be used as declared; the message says what and how to fix it."""


def read_missing(
    frame: pd.DataFrame, markers: tuple[str, ...], numeric: tuple[str, ...] = ()
) -> pd.DataFrame:
    """A copy with every marker cell (whitespace stripped) as NaN; a ``numeric`` column that held a
    marker (so was read as text) parsed as numbers when every other value is one."""
    import pandas as pd

    # A shallow copy: pandas 3 copies on write, so replacing a column here never touches ``frame``, and
    # the columns left alone are not duplicated (at 5M rows a deep copy was about 0.5 GB per call).
    out = frame.copy(deep=False)
    wanted = {m.strip() for m in markers}
    for col in out.columns:
        series = out[col]
        if not wanted or pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            continue
        is_marker = series.astype(str).str.strip().isin(wanted) & series.notna()
        if not is_marker.any():
            continue  # text where numbers are declared stays text: a type change the checks report
        series = series.where(~is_marker)
        if col in numeric:
            parsed = pd.to_numeric(series, errors="coerce")
            if (parsed.isna() == series.isna()).all():
                series = parsed
        out[col] = series
    return out


def binary_label_problem(labels: pd.Series, name: str, single_class_fix: str) -> str | None:
    """What keeps ``labels`` from being a binary classifier's label (0/1, no missing value, both
    classes present), in words, or None; ``single_class_fix`` says why both classes are needed."""
    import pandas as pd

    if labels.isna().any():
        return f"label {name!r} has {int(labels.isna().sum())} NaN value(s); drop or fill those rows"
    values = set(pd.unique(labels).tolist())
    if not values <= {0, 1}:
        return f"label {name!r} must be 0/1, found {sorted(map(str, values))}"
    if len(values) < 2:
        return f"label {name!r} has a single class {sorted(map(str, values))}; {single_class_fix}"
    return None


def labels_text(labels: pd.Series) -> pd.Series:
    """``labels.map(label_text)``, computed once per distinct value where the dtype makes the values
    one type (numbers, strings): a label column holds two values, and at 5M rows a Python call per
    row took seconds. An ``object`` column may mix ``1`` and ``True`` (equal as dict keys, different
    as text), so it keeps the per-row map; so does a column with missing values (callers reject those)."""
    import pandas as pd

    if labels.dtype == object or labels.hasnans:  # missing values: as the per-row map writes them
        return labels.map(label_text)
    return labels.map({value: label_text(value) for value in pd.unique(labels)})


def label_text(value: Any) -> str:
    """A label value as the schema writes it: whole numbers without a decimal point, text stripped."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return label_text(value.item())
    text = str(value).strip()
    if "." in text:  # "1.0" as text (a CSV read as strings, a hand-edited schema) is the number 1
        try:
            number = float(text)
        except ValueError:
            return text
        return str(int(number)) if number.is_integer() else text
    return text


class DatasetSchema(BaseModel):
    """Which columns of a table play which role."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "schema"

    label: str
    """Binary label column; its two values are positive_label and negative_label."""
    positive_label: str = "1"
    """Label value of the positive class: encoded 1, the class whose probability the model returns."""
    negative_label: str = "0"
    """Label value of the negative class: encoded 0. Any other label value is an error."""
    favourable_class: Literal["positive", "negative"] = "negative"
    """The label class that benefits the person: positive (e.g. an approval) or negative (e.g. no default)."""
    numeric_features: tuple[str, ...]
    """Numeric feature columns; NaN allowed."""
    categorical_features: tuple[str, ...] = Field(default=())
    """String category columns."""
    protected_attributes: tuple[str, ...] = Field(default=())
    """Columns used only for fairness checks, never as model inputs."""
    ignored_columns: tuple[str, ...] = Field(default=())
    """Columns dropped before validation and training: identifiers, free text, leaks."""
    missing_values: tuple[str, ...] = Field(default=())
    """Cell values read as missing in every column, e.g. '?' (blank cells always are)."""
    allowed_leaks: tuple[str, ...] = Field(default=())
    """Features the leakage checks flagged that you know are recorded before the outcome: the gate neither blames nor removes them (`mlops data init --allow-leaks`)."""

    @model_validator(mode="after")
    def _allowed_leaks_are_features(self) -> DatasetSchema:
        self.require_features(
            "allowed_leaks",
            self.allowed_leaks,
            "a column left out (ignored_columns) needs no allowance: remove it from allowed_leaks",
        )
        return self

    def require_features(self, field: str, names: Iterable[str], fix: str) -> None:
        """A field that names features names nothing else: a ``ValueError`` naming the strays and ``fix``."""
        strays = [name for name in names if name not in self.features]
        if strays:
            raise ValueError(f"{field} names {strays}, which are not features {list(self.features)}; {fix}")

    # --- slices: the segments evaluation and the model card report metrics for ---
    slices: tuple[SliceSpec, ...] = Field(default=())
    """Segments evaluation reports every metric for: columns crossed, numeric ones binned (mlops.data.slice_spec)."""

    # --- fairness: bins of numeric protected attributes ---
    protected_bins: dict[str, tuple[float, ...]] = Field(default_factory=dict)
    """Bin edges per numeric protected attribute, e.g. {age: [25, 40, 60]} for < 25, [25, 40), [40, 60), >= 60. A numeric protected attribute not named here gets quantile bins (model_validation.fairness.quantile_bins)."""

    @model_validator(mode="after")
    def _protected_bins_valid(self) -> DatasetSchema:
        for column, edges in self.protected_bins.items():
            if column not in self.protected_attributes:
                raise ValueError(
                    f"protected_bins names {column!r}, which is not a protected attribute "
                    f"{list(self.protected_attributes)}; list it under protected_attributes or remove it"
                )
            if not edges or any(not math.isfinite(e) for e in edges) or list(edges) != sorted(set(edges)):
                raise ValueError(
                    f"protected_bins for {column!r} must be finite, strictly increasing edges such as "
                    f"[25, 40, 60]; got {list(edges)}"
                )
        return self

    # --- end fairness block ---

    # --- the stable split: a row's split never changes between runs ---
    split_key: str = ""
    """Column whose value decides a row's train/validation/test split (a stable row ID); empty: the row's declared content."""

    # --- the data subject: whose row it is, for erasure requests ---
    subject_key: str = ""
    """Column that names the person a row is about (e.g. customer_id): what `mlops forget --key COLUMN=VALUE` matches in every store of rows; empty: rows cannot be erased by person."""

    @model_validator(mode="after")
    def _subject_key_not_label(self) -> DatasetSchema:
        if self.subject_key and self.subject_key == self.label:
            raise ValueError(
                f"subject_key {self.subject_key!r} is the label; name the column that identifies the person "
                "(e.g. customer_id), or leave subject_key empty"
            )
        return self

    @property
    def split_columns(self) -> tuple[str, ...]:
        """What a row's split is hashed from: ``split_key``, else the label, features and protected attributes."""
        return (self.split_key,) if self.split_key else tuple(sorted(self.columns))

    @model_validator(mode="after")
    def _columns_distinct(self) -> DatasetSchema:
        if not self.numeric_features and not self.categorical_features:
            raise ValueError("schema declares no features; list numeric_features and/or categorical_features")
        if label_text(self.positive_label) == label_text(self.negative_label):
            raise ValueError(
                f"positive_label and negative_label are both {self.positive_label!r}; name two values"
            )
        seen: dict[str, str] = {}
        for role, cols in (
            ("label", (self.label,)),
            ("numeric_features", self.numeric_features),
            ("categorical_features", self.categorical_features),
            ("protected_attributes", self.protected_attributes),
            ("ignored_columns", self.ignored_columns),
        ):
            for col in cols:
                if col in seen:
                    raise ValueError(f"column {col!r} is declared as both {seen[col]} and {role}")
                seen[col] = role
        problems = [
            p
            for spec in self.slices
            for p in spec.check_roles(
                self.numeric_features, self.categorical_features, self.protected_attributes
            )
        ]
        if problems:
            raise ValueError("; ".join(problems))
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
                cells = frame[col].dropna()
                bad = cells[pd.to_numeric(cells, errors="coerce").isna()].astype(str)
                shown = bad.value_counts().head(5).to_dict()  # the offending values, not valid ones
                raise DatasetError(
                    f"{source} column {col!r} must be numeric but has dtype {frame[col].dtype}: "
                    f"{len(bad)} of {len(frame)} cells ({len(bad) / len(frame):.2%}) are not numbers "
                    f"({', '.join(f'{v!r} ×{n}' for v, n in shown.items())}); clean them, list the marker in "
                    "missing_values, or declare the column categorical"
                )
        problem = binary_label_problem(frame[self.label], self.label, "a classifier needs both 0 and 1")
        if problem:
            raise DatasetError(f"{source} {problem}")

    def read_missing(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A copy with every missing-value marker as NaN and numeric features parsed as numbers."""
        return read_missing(frame, self.missing_values, self.numeric_features)

    def prepare(self, frame: pd.DataFrame, source: str = "dataset") -> pd.DataFrame:
        """The table the pipeline works on: markers read as missing, the declared columns only,
        the label encoded 0/1 (1 = positive_label). Raises :class:`DatasetError` naming what is wrong."""
        if frame.empty:
            raise DatasetError(f"{source} has no rows; provide a file with data")
        absent = [c for c in self.columns if c not in frame.columns]
        if absent:
            self.check(frame, source)  # names the absent columns and what is present
        if self.split_key and self.split_key not in frame.columns:
            raise DatasetError(
                f"{source} lacks the split_key column {self.split_key!r}; name a column of the data, or "
                "leave split_key empty to split by each row's content"
            )
        if self.subject_key and self.subject_key not in frame.columns:
            raise DatasetError(
                f"{source} lacks the subject_key column {self.subject_key!r}; name the column that identifies "
                "the person a row is about, or leave subject_key empty"
            )
        declared = {*self.columns, *self.split_columns, *((self.subject_key,) if self.subject_key else ())}
        table = self.read_missing(frame.loc[:, [c for c in frame.columns if c in declared]])
        labels = table[self.label]
        if labels.isna().any():
            raise DatasetError(
                f"{source} label {self.label!r} has {int(labels.isna().sum())} missing value(s); "
                "drop or fill those rows"
            )
        text = labels_text(labels)
        known = {label_text(self.positive_label), label_text(self.negative_label)}
        unknown = sorted(set(text) - known)
        if unknown:
            raise DatasetError(
                f"{source} label {self.label!r} has value(s) {unknown[:10]} besides positive_label "
                f"{self.positive_label!r} and negative_label {self.negative_label!r}; fix the data or the schema"
            )
        table[self.label] = (text == label_text(self.positive_label)).astype("int64")
        self.check(table, source)
        return table


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
        sep = csv_delimiter(data)
        return pd.read_csv(io.BytesIO(data), sep=sep, quotechar=csv_quotechar(data, sep))
    except Exception as exc:  # pandas/pyarrow raise many parser errors
        kind = "Parquet" if is_parquet else "CSV"
        raise DatasetError(f"cannot parse dataset {uri} as {kind}: {exc}") from exc


def csv_delimiter(data: bytes) -> str:
    """The CSV's delimiter: comma, or the tab/semicolon/pipe that splits its header line instead."""
    header = data[:65536].split(b"\n", 1)[0].decode("utf-8", errors="replace")
    counts = {sep: header.count(sep) for sep in (",", "\t", ";", "|")}
    best = max(counts, key=lambda sep: counts[sep])
    return best if counts[best] > counts[","] else ","


def csv_quotechar(data: bytes, sep: str) -> str:
    """``'`` when every header name is wrapped in single quotes (as R's and statsmodels' files write
    them: ``'age'\t'vote'``), else the usual ``"``; without this the columns are named ``'age'``."""
    header = data[:65536].split(b"\n", 1)[0].decode("utf-8", errors="replace").rstrip("\r")
    names = [name.strip() for name in header.split(sep)]
    quoted = all(len(n) >= 2 and n[0] == n[-1] == "'" for n in names)
    return "'" if names and quoted else '"'


def load_table(uri: str) -> tuple[pd.DataFrame, str]:
    """Load a table and return it with the SHA-256 digest of the bytes it came from."""
    data = read_bytes(uri)
    return parse_table(data, uri), sha256_digest(data)
