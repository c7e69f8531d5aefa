"""Why one row scored what it did: per-feature contributions against reference rows, and their texts.

A feature's contribution to a row's score is the row's own score minus the mean score
of the row with that one feature replaced by its value in each reference row: how much
the score owes to the row's own value of the feature, relative to the values the model
was trained on. It needs no gradients and treats numeric, categorical and missing
values alike (it works on the encoded matrix), so any scorer serves (ONNX Runtime in
the server and in batch scoring, the validation gate's). The validation report
(``components/model_validation/explainability.py``), the model server's ``:explain``
and ``mlops score --explain`` all call :func:`attribute`, so they compute the same numbers.

All rows of a request are attributed in one call of ``predict``: for ``n`` rows, ``f``
features and ``r`` reference rows it scores ``n * (1 + f * r)`` rows at once.

The reference rows a version serves its reasons against are stored with it at
registration (:data:`REFERENCE_FILE`, the format below); the reason texts travel in the
same file, so a version's rows and texts cannot disagree.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from mlops.data.features import FeatureSpec

REFERENCE_FILE = "explain_reference.parquet"
"""The reference rows of a registered version: a Parquet file logged into the register task's run beside
``reference_profile.json`` and named on the version by ``mlops.vocabulary.EXPLAIN_REFERENCE_TAG``.

Format: one row per reference row, in the order the rows were chosen; the model's raw feature
columns as they stand in the prepared table (numerics as numbers, categoricals as strings, null for
missing), plus the schema's ``subject_key`` column when the schema names one (what erasing a
person's rows matches; the server never reads it). The Parquet schema's key-value metadata holds
:data:`REASONS_METADATA_KEY`."""
REASONS_METADATA_KEY = "mlops.reasons"
"""Key in :data:`REFERENCE_FILE`'s Parquet metadata: a JSON object ``{feature: reason text}`` as the schema
file's ``reasons:`` declared them (features not named there get :func:`default_text`)."""
REASONS_DATASET_KEY = "reasons"
"""Key of the schema file's reason texts in a Dataset artifact's metadata (the register step reads it)."""

Predict = Callable[[np.ndarray], np.ndarray]
"""Scores of encoded float32 rows ``[m, n_features]`` as ``[m]``."""


@dataclass(frozen=True)
class Attributions:
    """The contributions of every feature to each of ``n`` rows' scores."""

    features: tuple[str, ...]
    scores: np.ndarray
    """The rows' own scores ``[n]``, as ``predict`` returned them."""
    contributions: np.ndarray
    """``[n, n_features]``: own score minus the mean score with that feature taken from the reference rows."""
    order: np.ndarray
    """``[n, n_features]``: feature indices of each row, largest ``|contribution|`` first (ties in feature order)."""

    def ranked(self, row: int) -> list[tuple[str, float]]:
        """Row ``row``'s ``(feature, contribution)`` pairs, largest ``|contribution|`` first."""
        return [(self.features[j], float(self.contributions[row, j])) for j in self.order[row]]


def attribute(
    predict: Predict, rows: np.ndarray, references: np.ndarray, features: Sequence[str]
) -> Attributions:
    """Per-feature contributions of each of ``rows`` (encoded ``[n, f]``) against ``references`` (``[r, f]``).

    One call of ``predict`` scores the rows themselves and every probe (each row with each feature taken
    from each reference row).
    """
    rows = np.asarray(rows, dtype=np.float32)
    references = np.asarray(references, dtype=np.float32)
    if rows.ndim != 2 or references.ndim != 2 or rows.shape[1] != references.shape[1]:
        raise ValueError(
            f"rows {list(rows.shape)} and reference rows {list(references.shape)} must be matrices of the same "
            "width"
        )
    n, width = rows.shape
    r = len(references)
    if width != len(features):
        raise ValueError(f"{len(features)} feature names for rows of {width} features")
    if r == 0:
        raise ValueError("no reference rows to attribute against; at least one is needed")
    # probe[i, j, k] = row i with feature j taken from reference row k
    probe = np.broadcast_to(rows[:, None, None, :], (n, width, r, width)).copy()
    index = np.arange(width)
    probe[:, index, :, index] = references.T[:, None, :]
    y = np.asarray(predict(np.concatenate([rows, probe.reshape(n * width * r, width)])))
    own = y[:n]
    averaged = y[n:].reshape(n, width, r).mean(axis=2)
    contributions = own[:, None].astype(np.float64) - averaged.astype(np.float64)
    order = np.argsort(-np.abs(contributions), axis=1, kind="stable")
    return Attributions(tuple(features), own, contributions, order)


def raw_values(spec: FeatureSpec, x: np.ndarray) -> list[list[Any]]:
    """Encoded rows ``x`` back to the values a person reads: numbers, category strings, None for missing."""
    out: list[list[Any]] = []
    offset = len(spec.numeric)
    for row in x:
        values: list[Any] = [None if np.isnan(v) else float(v) for v in row[:offset]]
        for j, vocab in enumerate(spec.vocabularies):
            code = row[offset + j]
            values.append(vocab[int(code) - 1] if not np.isnan(code) and 1 <= code <= len(vocab) else None)
        out.append(values)
    return out


def value_text(value: Any) -> str:
    """A raw value as a reason shows it (``None``: ``missing``; whole floats without ``.0``)."""
    if value is None:
        return "missing"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def default_text(feature: str, value: Any) -> str:
    """The reason text of a feature the schema file gave none: ``<feature> = <value>``."""
    return f"{feature} = {value_text(value)}"


def reason_text(texts: Mapping[str, str], feature: str, value: Any) -> str:
    """The declared text of ``feature`` (the schema file's ``reasons:``), else :func:`default_text`."""
    found = texts.get(feature)
    return found if found else default_text(feature, value)


def reasons(
    attributions: Attributions,
    values: Sequence[Sequence[Any]],
    texts: Mapping[str, str],
    top_k: int,
) -> list[list[dict[str, Any]]]:
    """Per row its ``top_k`` reasons, largest ``|contribution|`` first: ``feature``, ``value`` (raw),
    ``contribution`` (to the score) and ``text``."""
    out = []
    for i, row in enumerate(values):
        found = []
        for j in attributions.order[i][:top_k]:
            name, value = attributions.features[j], row[j]
            found.append(
                {
                    "feature": name,
                    "value": value,
                    "contribution": float(attributions.contributions[i, j]),
                    "text": reason_text(texts, name, value),
                }
            )
        out.append(found)
    return out


def choose_reference_rows(frame: pd.DataFrame, n: int, columns: Sequence[str]) -> pd.DataFrame:
    """``n`` rows of ``frame`` chosen by a hash of their ``columns``' content: the same rows whatever the row
    order, and a row stays chosen while no row with a smaller hash is added (a stable sample)."""
    import pandas as pd

    if n <= 0 or frame.empty:
        return frame.iloc[0:0]
    hashes = pd.util.hash_pandas_object(frame.loc[:, list(columns)], index=False).to_numpy()
    chosen = np.argsort(hashes, kind="stable")[:n]
    return frame.iloc[np.sort(chosen)]


def reference_table(frame: pd.DataFrame, texts: Mapping[str, str]) -> bytes:
    """:data:`REFERENCE_FILE`'s bytes: ``frame`` (raw features, the subject key) with ``texts`` in its metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame.reset_index(drop=True), preserve_index=False)
    metadata = dict(table.schema.metadata or {})
    metadata[REASONS_METADATA_KEY.encode()] = json.dumps(dict(texts), sort_keys=True).encode()
    buffer = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata(metadata), buffer)
    return bytes(buffer.getvalue())


def read_reference(data: bytes, where: str) -> tuple[pd.DataFrame, dict[str, str]]:
    """A :data:`REFERENCE_FILE`'s rows and reason texts; ``ValueError`` naming ``where`` when it is not one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowInvalid, OSError) as exc:
        raise ValueError(f"{where} is not a readable {REFERENCE_FILE}: {exc}") from exc
    raw = (table.schema.metadata or {}).get(REASONS_METADATA_KEY.encode(), b"{}")
    try:
        texts = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{where} carries unreadable {REASONS_METADATA_KEY} metadata: {exc}") from exc
    if not isinstance(texts, dict) or not all(isinstance(v, str) for v in texts.values()):
        raise ValueError(f"{where}: {REASONS_METADATA_KEY} must map feature names to texts, got {texts!r}")
    return table.to_pandas(), {str(k): v for k, v in texts.items()}
