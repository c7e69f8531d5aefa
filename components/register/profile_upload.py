"""The reference profile a version is registered with (see :mod:`mlops.model.reference_profile`).

Logged as ``reference_profile.json`` in the register task's run and named on the
version by :data:`mlops.vocabulary.PROFILE_TAG`, so the drift monitor finds it from
the version alone and never reads the training data again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlops.model.reference_profile import build_profile

if TYPE_CHECKING:
    import pandas as pd

    from mlops.model.onnx_model import OnnxScorer
    from mlops.tracking.store import TrackingStore


def log_reference_profile(
    store: TrackingStore,
    run_id: str,
    scorer: OnnxScorer,
    frame: pd.DataFrame,
    label: str | None,
    model_name: str,
) -> str:
    """Profile ``frame`` (and the model's scores on it) into the register run ``run_id``; return the URI the
    version will name (empty, and no tag, when the model scores no row finitely)."""
    import numpy as np

    labels = frame[label].to_numpy() if label and label in frame.columns else None
    scores = scorer.predict_encoded(scorer.spec.encode(frame))
    if not np.isfinite(scores).any():
        # A model that scores nothing has no score distribution to drift from; the gates reject it
        # (its test AUC is undefined) and monitoring refuses the version for want of a profile.
        print(f"the {model_name} model scores no finite value on the reference rows: no reference profile")
        return ""
    profile = build_profile(frame, scorer.spec, scores, labels)
    return store.log_reference_profile(run_id, profile)
