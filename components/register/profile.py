"""The reference profile a version is registered with (see :mod:`mlops.profile`).

Logged as ``reference_profile.json`` in the register task's run and named on the
version by :data:`mlops.registry.PROFILE_TAG`, so the drift monitor finds it from
the version alone and never reads the training data again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlops.profile import PROFILE_FILE, build_profile
from mlops.registry import PROFILE_TAG

if TYPE_CHECKING:
    import pandas as pd

    from mlops.onnx_model import OnnxScorer


def log_reference_profile(
    scorer: OnnxScorer, frame: pd.DataFrame, label: str | None, model_name: str, version: str
) -> str:
    """Profile ``frame`` (and the model's scores on it) into the active run; tag the version; return the URI."""
    import mlflow

    labels = frame[label].to_numpy() if label and label in frame.columns else None
    profile = build_profile(frame, scorer.spec, scorer.predict_encoded(scorer.spec.encode(frame)), labels)
    mlflow.log_text(profile.to_json(), PROFILE_FILE)
    uri = f"{mlflow.get_artifact_uri()}/{PROFILE_FILE}"
    mlflow.MlflowClient().set_model_version_tag(model_name, version, PROFILE_TAG, uri)
    return uri
