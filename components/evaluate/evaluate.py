"""Score the trained model on the held-out test split, and the current champion on the same rows.

The gate decides "promote or not" from these numbers, so both models must be
measured identically: same rows, same metric code, same threshold. The champion
is scored from its registered ONNX file (what is actually being served), the
challenger from its torch weights (the export step proves the two agree).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from components.evaluate.binary_metrics import (
    THRESHOLD,
    BinaryMetrics,
    EvaluationError,
    EvaluationResult,
    score_probabilities,
)
from mlops.data.dataset import binary_label_problem
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import CHAMPION, HAS_CHAMPION_TAG

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from mlops.data.features import FeatureSpec
    from mlops.data.slice_spec import SliceSpec

METRICS_FILE = "metrics.json"
CONFUSION_FILE = "confusion_matrix.png"
ROC_FILE = "roc_curve.png"


@dataclass(frozen=True)
class ChampionResult:
    version: str
    """Registry version that held the ``champion`` alias when it was scored."""
    evaluation: EvaluationResult

    @property
    def metrics(self) -> BinaryMetrics:
        return self.evaluation.metrics


class EvaluationOutcome(NamedTuple):
    test_auc: float
    champion_auc: float
    has_champion: bool


def labels_of(frame: pd.DataFrame, label_column: str) -> np.ndarray:
    """The validated 0/1 label vector; both classes must occur or ROC AUC is undefined."""
    import numpy as np

    if frame.empty:
        raise EvaluationError("test data has no rows; evaluation needs a non-empty test split")
    if label_column not in frame.columns:
        raise EvaluationError(
            f"test data has no label column {label_column!r}; present: {sorted(map(str, frame.columns))}. "
            "Declare the label the model was trained with (schema setting label)."
        )
    labels = frame[label_column]
    problem = binary_label_problem(
        labels, label_column, "ROC AUC needs both classes, so use a larger or stratified test split"
    )
    if problem:
        raise EvaluationError(f"test data {problem}")
    return labels.to_numpy().astype(np.int64)


def _encode(spec: FeatureSpec, frame: pd.DataFrame, who: str) -> np.ndarray:
    try:
        return spec.encode(frame)
    except ValueError as exc:
        raise EvaluationError(f"{who} cannot score the test data: {exc}") from exc


def evaluate(model_dir: Path, test_frame: pd.DataFrame, label_column: str) -> EvaluationResult:
    """Score the saved torch model in ``model_dir`` on ``test_frame``."""
    labels = labels_of(test_frame, label_column)
    return score_probabilities(labels, probabilities(model_dir, test_frame))


def probabilities(model_dir: Path, test_frame: pd.DataFrame) -> np.ndarray:
    """The saved torch model's probability of the positive class for each row of ``test_frame``."""
    from training.model import load_model
    from training.onnx_export import torch_probabilities

    model = load_model(Path(model_dir))
    return torch_probabilities(model, _encode(model.spec, test_frame, f"model {model_dir}"))


def _champion_version(store: TrackingStore, model_name: str) -> str | None:
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE, RESOURCE_DOES_NOT_EXIST, ErrorCode

    client = store.client
    try:
        return str(client.get_model_version_by_alias(model_name, CHAMPION).version)
    except MlflowException as exc:
        if exc.error_code == ErrorCode.Name(RESOURCE_DOES_NOT_EXIST):
            return None  # no registered model of that name yet: the first model has nothing to beat
        # The store reports a missing alias as an invalid parameter; confirm that is what happened.
        if exc.error_code == ErrorCode.Name(INVALID_PARAMETER_VALUE) and CHAMPION not in (
            client.get_registered_model(model_name).aliases
        ):
            return None
        raise


def champion_metrics(
    store: TrackingStore, model_name: str, test_frame: pd.DataFrame, label_column: str
) -> ChampionResult | None:
    """Score the registry's ``champion`` of ``model_name`` (in ``store``) on ``test_frame``; ``None`` if
    there is none. The champion's files are verified against its signature before they are scored."""
    from mlops.model.onnx_model import OnnxScorer

    if not model_name.strip():
        raise EvaluationError("model_name is empty; pass the registered model name, e.g. 'credit-default'")
    labels = labels_of(test_frame, label_column)
    version = _champion_version(store, model_name)
    if version is None:
        return None
    with tempfile.TemporaryDirectory(prefix="champion-") as tmp:
        # By version, not alias: a promotion during the download must not mix two versions.
        local = store.download_version(model_name, version, tmp)
        store.verify_version(model_name, version, local)
        candidates = sorted(local.rglob("*.onnx"))
        preferred = [p for p in candidates if p.name == "model.onnx"] or candidates
        if not preferred:
            raise EvaluationError(
                f"champion {model_name} version {version} holds no .onnx file "
                f"(found {sorted(p.name for p in local.rglob('*'))}); register models with mlflow.onnx"
            )
        scorer = OnnxScorer.load(preferred[0])
        probability = scorer.predict_encoded(
            _encode(scorer.spec, test_frame, f"champion {model_name} version {version}")
        )
    return ChampionResult(version, score_probabilities(labels, probability))


def _report(result: EvaluationResult, champion: ChampionResult | None, digest: str) -> dict[str, Any]:
    def curve(evaluation: EvaluationResult) -> dict[str, Any]:
        # JSON has no Infinity: the first ROC threshold ("predict nothing positive") becomes null.
        thresholds = [t if t != float("inf") else None for t in evaluation.roc_thresholds]
        return {"fpr": evaluation.roc_fpr, "tpr": evaluation.roc_tpr, "thresholds": thresholds}

    return {
        "threshold": THRESHOLD,
        "test_data_sha256": digest,
        "test": asdict(result.metrics),
        "confusion_matrix": {"labels": [0, 1], "rows_actual_cols_predicted": result.confusion_matrix},
        "roc_curve": curve(result),
        "champion": None
        if champion is None
        else {
            "version": champion.version,
            "test": asdict(champion.metrics),
            "roc_curve": curve(champion.evaluation),
        },
    }


def run_evaluation(
    model_dir: Path,
    test_data_path: Path,
    label_column: str,
    model_name: str,
    store: TrackingStore,
    metrics_out: Path,
    slices: Sequence[SliceSpec] = (),
) -> EvaluationOutcome:
    """Evaluate, compare with the champion, write ``metrics.json`` and two PNGs into ``metrics_out``.

    Everything written is also logged to the task's MLflow run (metrics ``test_*`` and
    ``champion_test_*``, artifacts under ``evaluation/``). With ``slices`` declared, the report's
    ``slices`` part holds every metric per slice (:mod:`components.evaluate.slices`).
    """
    import mlflow

    from components.evaluate.plots import plot_confusion_matrix, plot_roc_curves
    from mlops.data.dataset import load_table

    metrics_out = Path(metrics_out)
    metrics_out.mkdir(parents=True, exist_ok=True)
    # Inside the run, so a bad model or bad data leaves a FAILED run that says so in MLflow.
    with store.task_run("evaluate"):
        frame, digest = load_table(str(test_data_path))
        result = evaluate(model_dir, frame, label_column)
        champion = champion_metrics(store, model_name, frame, label_column)
        curves = [(f"challenger (AUC {result.metrics.roc_auc:.3f})", result.roc_fpr, result.roc_tpr)]
        if champion is not None:
            label = f"champion v{champion.version} (AUC {champion.metrics.roc_auc:.3f})"
            curves.append((label, champion.evaluation.roc_fpr, champion.evaluation.roc_tpr))
        plot_confusion_matrix(result.confusion_matrix, THRESHOLD, metrics_out / CONFUSION_FILE)
        plot_roc_curves(curves, metrics_out / ROC_FILE)
        report = _report(result, champion, digest)
        if slices:
            from components.evaluate.slices import slice_report

            report["slices"] = slice_report(
                frame, labels_of(frame, label_column), probabilities(model_dir, frame), slices
            )
            mlflow.log_metric("slices_smallest_size", report["slices"]["smallest"][0]["size"])
        (metrics_out / METRICS_FILE).write_text(json.dumps(report, indent=2))

        mlflow.log_params({"model_name": model_name, "threshold": THRESHOLD, "test_data_sha256": digest})
        mlflow.log_metrics(result.metrics.as_dict("test_"))
        if champion is not None:
            mlflow.log_param("champion_version", champion.version)
            mlflow.log_metrics(champion.metrics.as_dict("champion_test_"))
        mlflow.set_tag(HAS_CHAMPION_TAG, str(champion is not None).lower())
        for name in (METRICS_FILE, CONFUSION_FILE, ROC_FILE):
            mlflow.log_artifact(str(metrics_out / name), artifact_path="evaluation")
    return EvaluationOutcome(
        test_auc=result.metrics.roc_auc,
        champion_auc=champion.metrics.roc_auc if champion is not None else 0.0,
        has_champion=champion is not None,
    )
