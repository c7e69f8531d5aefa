"""The leakage gate as a pipeline step: the model and its test rows in, a recorded decision out.

The rules and their thresholds are :mod:`components.promotion_gate.leakage`; this reads the
trained model and the prepared test split, ranks the columns by the evaluation's single-feature
AUCs, and records the decision like every other gate (version tags, JSON report, MLflow run, audit
record), plus the blamed and the acknowledged columns as version tags.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.promotion_gate.config import LeakagePolicy
from components.promotion_gate.leakage import LeakageResult, assess, decide, report, version_tags
from components.promotion_gate.promotion import record
from mlops.gates import Decision

if TYPE_CHECKING:
    import pandas as pd

    from mlops.data.dataset import DatasetSchema
    from mlops.tracking.store import TrackingStore


def assess_model(
    model_dir: Path,
    frame: pd.DataFrame,
    label: str,
    policy: LeakagePolicy,
    allowed: Sequence[str] = (),
    ranking: Sequence[str] = (),
) -> LeakageResult:
    """:func:`assess` for the saved torch model in ``model_dir`` on the prepared test rows ``frame``."""
    import numpy as np

    from training.model import load_model
    from training.onnx_export import torch_probabilities

    model = load_model(Path(model_dir))
    spec = model.spec
    labels = frame[label].to_numpy().astype(np.int64)
    classes = (str(spec.classes[0]), str(spec.classes[1]))
    return assess(
        lambda x: torch_probabilities(model, x),
        spec.encode(frame),
        frame,
        labels,
        spec.names,
        policy,
        allowed,
        classes,
        ranking,
    )


def ranking_of(evaluation: Mapping[str, Any]) -> list[str]:
    """The columns best first by their own AUC, from the evaluation report (empty when it has none)."""
    return [str(item["feature"]) for item in evaluation.get("single_feature_auc") or ()]


def judge_leakage(
    policy: LeakagePolicy,
    model_dir: Path,
    test_data: Path,
    schema: DatasetSchema,
    evaluation: Mapping[str, Any],
    model_name: str,
    version: str,
    store: TrackingStore,
) -> Decision:
    """Check the model on its test rows, decide, and record it on ``model_name``/``version``."""
    import pandas as pd

    frame = pd.read_parquet(test_data)
    allowed = schema.allowed_leaks
    result = assess_model(model_dir, frame, schema.label, policy, allowed, ranking_of(evaluation))
    decision = decide(policy, result, schema.ignored_columns, allowed)
    with tempfile.TemporaryDirectory(prefix="leakage-gate-") as tmp:
        record(decision, model_name, version, store, Path(tmp) / "leakage.json", report(result, allowed))
    store.tag_version(model_name, version, version_tags(result, allowed))
    return decision
