"""The reference rows a version is registered with, which its served reasons are measured against.

Logged as :data:`~mlops.model.row_attribution.REFERENCE_FILE` in the register task's run (beside
``reference_profile.json``) and named on the version by
:data:`~mlops.vocabulary.EXPLAIN_REFERENCE_TAG`, so the server finds them from the version alone. The
file keeps the model's raw feature columns and the schema's ``subject_key`` column (when it names one),
so erasing a person's rows can find them here too; the schema file's reason texts travel in its metadata.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mlops.model.row_attribution import REFERENCE_FILE, choose_reference_rows, reference_table

if TYPE_CHECKING:
    import pandas as pd

    from mlops.data.features import FeatureSpec
    from mlops.tracking.store import TrackingStore

DEFAULT_REFERENCE_ROWS = 64
"""How many rows a version keeps for its reasons (the setting ``registration.explain_reference_rows``): enough
for a stable mean per feature, few enough that an explained row costs ``1 + features * rows`` scores (a
20-feature model: 1,281 per row)."""


def reference_rows(frame: pd.DataFrame, spec: FeatureSpec, rows: int, subject_key: str = "") -> pd.DataFrame:
    """``rows`` rows of ``frame`` (chosen by their features' content, so a re-run keeps the same ones): the
    model's raw feature columns, then ``subject_key`` when the schema names one and the frame has it."""
    if rows < 0:
        raise ValueError(f"explain reference rows must be 0 or more, got {rows}")
    missing = [name for name in spec.names if name not in frame.columns]
    if missing:
        raise ValueError(
            f"the reference rows lack the model's feature column(s) {missing}; register with the test split "
            "train-model wrote"
        )
    columns = [*spec.names, *([subject_key] if subject_key and subject_key in frame.columns else [])]
    return choose_reference_rows(frame, rows, spec.names).loc[:, columns]


def log_explain_reference(
    store: TrackingStore,
    run_id: str,
    spec: FeatureSpec,
    frame: pd.DataFrame,
    texts: Mapping[str, str],
    rows: int = DEFAULT_REFERENCE_ROWS,
    subject_key: str = "",
) -> str:
    """Store the reference rows and reason texts in the register run ``run_id``; return the URI the version
    names (empty, and no tag, when ``rows`` is 0 or the frame has none)."""
    stray = [name for name in texts if name not in spec.names]
    if stray:
        raise ValueError(
            f"reason texts name {stray}, which are not features of the model {list(spec.names)}; fix the schema "
            "file's reasons:"
        )
    chosen = reference_rows(frame, spec, rows, subject_key)
    if chosen.empty:
        return ""
    with tempfile.TemporaryDirectory(prefix="mlops-explain-reference-") as tmp:
        (Path(tmp) / REFERENCE_FILE).write_bytes(reference_table(chosen, texts))
        store.log_run_artifacts(run_id, tmp)
    return f"{store.get_run(run_id).info.artifact_uri.rstrip('/')}/{REFERENCE_FILE}"
