"""Score the trained model on the held-out test split, and the current champion on the same rows.

The gate decides "promote or not" from these numbers, so both models must be
measured identically: same rows, same metric code, same threshold. The champion
is scored from its registered ONNX file (what is actually being served), the
challenger from its torch weights (the export step proves the two agree).

Same rows means rows neither model learnt from: the champion's split rule (its
``mlops.split`` tag) tells which of today's test rows it trained or validated on, and
those are left out of the comparison, for both models (the report says how many rows it
used). Every feature's AUC alone is reported too: the metrics gate's evidence of a leak.
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
from components.evaluate.single_feature import FeatureAuc, single_feature_aucs
from mlops.data.dataset import binary_label_problem
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import CHAMPION, HAS_CHAMPION_TAG, SPLIT_TAG

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from mlops.data.features import FeatureSpec
    from mlops.data.slice_spec import SliceSpec

METRICS_FILE = "metrics.json"
CONFUSION_FILE = "confusion_matrix.png"
ROC_FILE = "roc_curve.png"


class ChampionNotComparable(EvaluationError):
    """The champion needs columns this run's data leaves out: the train step's champion check let the
    run go on (the columns are ignored, or were found leaking), so the model is judged on its own merits."""


@dataclass(frozen=True)
class ChampionResult:
    version: str
    """Registry version that held the ``champion`` alias when it was scored."""
    evaluation: EvaluationResult
    """The champion on the comparison rows (those it did not learn from)."""
    unseen: Any = None
    """Boolean mask over the test rows: True where the champion neither trained nor validated (None: all rows)."""
    note: str = ""
    """How the comparison rows were chosen, in words."""

    @property
    def metrics(self) -> BinaryMetrics:
        return self.evaluation.metrics

    @property
    def rows(self) -> int:
        return self.evaluation.metrics.n_rows


class EvaluationOutcome(NamedTuple):
    test_auc: float
    champion_auc: float
    has_champion: bool
    comparison_auc: float = 0.0
    """The challenger's AUC on the rows the champion was scored on (0.0 without a champion)."""
    comparison_rows: int = 0
    """How many test rows the comparison used (0 without a champion)."""
    top_feature: str = ""
    """The feature that alone separates the classes best on the test rows."""
    top_feature_auc: float = 0.5
    """Its AUC alone."""


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
        labels,
        label_column,
        "ROC AUC needs both classes; rows are split by their stable hash, not by class, so provide "
        "more rows or raise train.test_fraction",
    )
    if problem:
        raise EvaluationError(f"test data {problem}")
    return labels.to_numpy().astype(np.int64)


def _encode(spec: FeatureSpec, frame: pd.DataFrame, who: str) -> np.ndarray:
    try:
        return spec.encode(frame)
    except ValueError as exc:
        raise EvaluationError(f"{who} cannot score the test data: {exc}") from exc


def challenger_probabilities(model_dir: Path, test_frame: pd.DataFrame) -> np.ndarray:
    """The saved torch model's probabilities on ``test_frame``."""
    from training.model import load_model
    from training.onnx_export import torch_probabilities

    model = load_model(Path(model_dir))
    return torch_probabilities(model, _encode(model.spec, test_frame, f"model {model_dir}"))


def evaluate(model_dir: Path, test_frame: pd.DataFrame, label_column: str) -> EvaluationResult:
    """Score the saved torch model in ``model_dir`` on ``test_frame``."""
    labels = labels_of(test_frame, label_column)
    return score_probabilities(labels, challenger_probabilities(model_dir, test_frame))


def _champion_version(store: TrackingStore, model_name: str) -> str | None:
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE, RESOURCE_DOES_NOT_EXIST, ErrorCode

    try:
        return str(store.version_by_alias(model_name, CHAMPION).version)
    except MlflowException as exc:
        if exc.error_code == ErrorCode.Name(RESOURCE_DOES_NOT_EXIST):
            return None  # no registered model of that name yet: the first model has nothing to beat
        # The store reports a missing alias as an invalid parameter; confirm that is what happened.
        if exc.error_code == ErrorCode.Name(INVALID_PARAMETER_VALUE) and CHAMPION not in (
            store.registered_model(model_name).aliases
        ):
            return None
        raise


def unseen_rows(tags: dict[str, str], frame: pd.DataFrame, who: str) -> tuple[np.ndarray | None, str]:
    """Which test rows ``who`` neither trained nor validated on, from its recorded split rule, and how
    that was decided (None: every row, when the rule is unknown)."""
    from training.row_split import TEST, SplitRule

    text = tags.get(SPLIT_TAG, "")
    if not text:
        return None, (
            f"{who} records no split rule (registered before {SPLIT_TAG} existed): its training rows are "
            f"unknown, so all {len(frame)} test rows are compared"
        )
    try:
        rule = SplitRule.from_json(text)
        mask = rule.assign(frame) == TEST
    except (ValueError, KeyError) as exc:
        return None, f"{who}'s split rule cannot be applied ({exc}); all {len(frame)} test rows are compared"
    dropped = len(frame) - int(mask.sum())
    return mask, (
        f"{int(mask.sum())} of {len(frame)} test rows are compared: {dropped} were in {who}'s training or "
        f"validation split (split rule on {list(rule.key_columns)[:5]}{'…' if len(rule.key_columns) > 5 else ''})"
    )


def champion_metrics(
    store: TrackingStore, model_name: str, test_frame: pd.DataFrame, label_column: str
) -> ChampionResult | None:
    """Score the registry's ``champion`` of ``model_name`` (in ``store``) on the rows of ``test_frame`` it
    did not learn from; ``None`` if there is none. The champion's files are verified against its signature
    before they are scored."""
    from mlops.model.onnx_model import OnnxScorer, onnx_file

    if not model_name.strip():
        raise EvaluationError("model_name is empty; pass the registered model name, e.g. 'credit-default'")
    labels = labels_of(test_frame, label_column)
    version = _champion_version(store, model_name)
    if version is None:
        return None
    who = f"champion {model_name} version {version}"
    unseen, note = unseen_rows(store.version_tags(model_name, version), test_frame, who)
    with tempfile.TemporaryDirectory(prefix="champion-") as tmp:
        # By version, not alias: a promotion during the download must not mix two versions.
        local = store.download_version(model_name, version, tmp)
        store.verify_version(model_name, version, local)
        preferred = onnx_file(local)
        if preferred is None:
            raise EvaluationError(
                f"{who} holds no .onnx file "
                f"(found {sorted(p.name for p in local.rglob('*'))}); register models with mlflow.onnx"
            )
        scorer = OnnxScorer.load(preferred)
        absent = [name for name in scorer.spec.names if name not in test_frame.columns]
        if absent:
            raise ChampionNotComparable(
                f"{who} was not compared: it needs column(s) {absent}, which this run leaves out (ignored "
                "or found leaking), so this model is judged on its own merits (the AUC floor, the leakage "
                "and validation gates) and replaces it if it passes"
            )
        probability = scorer.predict_encoded(_encode(scorer.spec, test_frame, who))
    if unseen is not None:
        kept = labels[unseen]
        if len(set(kept.tolist())) < 2:
            raise EvaluationError(
                f"{who} learnt from all but {len(kept)} of the {len(labels)} test rows (both classes are needed "
                "to compare): its split rule differs from this run's. Keep the champion's train.test_fraction "
                "and schema split_key, or train under a new model name"
            )
        labels, probability = kept, probability[unseen]
    return ChampionResult(version, score_probabilities(labels, probability), unseen, note)


def _report(
    result: EvaluationResult,
    champion: ChampionResult | None,
    comparison: EvaluationResult | None,
    leaks: list[FeatureAuc],
    digest: str,
) -> dict[str, Any]:
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
        "single_feature_auc": [asdict(leak) for leak in leaks],
        "champion": None
        if champion is None or comparison is None
        else {
            "version": champion.version,
            "comparison_rows": champion.rows,
            "comparison_rows_note": champion.note,
            "test": asdict(champion.metrics),
            "challenger_on_comparison_rows": asdict(comparison.metrics),
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
    numeric: tuple[str, ...] = (),
    categorical: tuple[str, ...] = (),
) -> EvaluationOutcome:
    """Evaluate, compare with the champion, write ``metrics.json`` and two PNGs into ``metrics_out``.

    The champion and the challenger are compared on the test rows the champion did not learn from
    (:func:`unseen_rows`); ``numeric``/``categorical`` (the schema's features) are each scored alone
    (:mod:`components.evaluate.single_feature`). With ``slices`` declared, the report's
    ``slices`` part holds every metric per slice (:mod:`components.evaluate.slices`). Everything written is also logged to the task's
    MLflow run (metrics ``test_*``, ``champion_test_*``, ``comparison_*``; artifacts under ``evaluation/``).
    """
    import mlflow

    from components.evaluate.plots import plot_confusion_matrix, plot_roc_curves
    from mlops.data.dataset import load_table

    metrics_out = Path(metrics_out)
    metrics_out.mkdir(parents=True, exist_ok=True)
    # Inside the run, so a bad model or bad data leaves a FAILED run that says so in MLflow.
    with store.task_run("evaluate"):
        frame, digest = load_table(str(test_data_path))
        labels = labels_of(frame, label_column)
        probability = challenger_probabilities(model_dir, frame)
        result = score_probabilities(labels, probability)
        leaks = single_feature_aucs(frame, labels, numeric, categorical)
        not_compared = ""
        try:
            champion = champion_metrics(store, model_name, frame, label_column)
        except ChampionNotComparable as exc:
            champion, not_compared = None, str(exc)
        comparison = None
        if champion is not None:
            mask = champion.unseen
            comparison = result if mask is None else score_probabilities(labels[mask], probability[mask])
        curves = [(f"challenger (AUC {result.metrics.roc_auc:.3f})", result.roc_fpr, result.roc_tpr)]
        if champion is not None:
            label = f"champion v{champion.version} (AUC {champion.metrics.roc_auc:.3f}, {champion.rows} rows)"
            curves.append((label, champion.evaluation.roc_fpr, champion.evaluation.roc_tpr))
        plot_confusion_matrix(result.confusion_matrix, THRESHOLD, metrics_out / CONFUSION_FILE)
        plot_roc_curves(curves, metrics_out / ROC_FILE)
        report = _report(result, champion, comparison, leaks, digest)
        if not_compared:
            report["champion_not_compared"] = not_compared
        if slices:
            from components.evaluate.slices import slice_report

            report["slices"] = slice_report(
                frame, labels_of(frame, label_column), challenger_probabilities(model_dir, frame), slices
            )
            mlflow.log_metric("slices_smallest_size", report["slices"]["smallest"][0]["size"])
        (metrics_out / METRICS_FILE).write_text(json.dumps(report, indent=2))

        mlflow.log_params({"model_name": model_name, "threshold": THRESHOLD, "test_data_sha256": digest})
        mlflow.log_metrics(result.metrics.as_dict("test_"))
        if leaks:
            mlflow.log_metric("top_single_feature_auc", leaks[0].auc)
            mlflow.log_param("top_single_feature", leaks[0].feature)
        if champion is not None and comparison is not None:
            mlflow.log_params(
                {"champion_version": champion.version, "comparison_rows_note": champion.note[:500]}
            )
            mlflow.log_metrics(champion.metrics.as_dict("champion_test_"))
            mlflow.log_metrics(comparison.metrics.as_dict("comparison_"))
        mlflow.set_tag(HAS_CHAMPION_TAG, str(champion is not None).lower())
        for name in (METRICS_FILE, CONFUSION_FILE, ROC_FILE):
            mlflow.log_artifact(str(metrics_out / name), artifact_path="evaluation")
    return EvaluationOutcome(
        test_auc=result.metrics.roc_auc,
        champion_auc=champion.metrics.roc_auc if champion is not None else 0.0,
        has_champion=champion is not None,
        comparison_auc=comparison.metrics.roc_auc if comparison is not None else 0.0,
        comparison_rows=champion.rows if champion is not None else 0,
        top_feature=leaks[0].feature if leaks else "",
        top_feature_auc=leaks[0].auc if leaks else 0.5,
    )
