"""KFP wrapper for :mod:`components.evaluate.holdout_evaluation`."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import Artifact, Dataset, Input, Metrics, Model, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def evaluate_model(
    model: Input[Model],
    test_data: Input[Dataset],
    model_name: str,
    tracking: dict,
    pipeline_run_id: str,
    metrics: Output[Metrics],
    confusion_matrix: Output[Artifact],
    roc_curve: Output[Artifact],
) -> NamedTuple(  # type: ignore[valid-type]
    "EvaluationOutputs",
    [
        ("test_auc", float),
        ("champion_auc", float),
        ("has_champion", bool),
        ("comparison_auc", float),
        ("comparison_rows", int),
        ("top_feature", str),
        ("top_feature_auc", float),
    ],
):
    """Scores the model and the registry's champion on the test rows the champion did not learn from.

    champion_auc and comparison_auc (the challenger on those same rows, comparison_rows of them) are 0.0
    without a champion; top_feature is the feature that alone separates the classes best (top_feature_auc).
    """
    import json
    import shutil
    import tempfile
    from collections import namedtuple
    from pathlib import Path

    from components.evaluate.holdout_evaluation import CONFUSION_FILE, METRICS_FILE, ROC_FILE, run_evaluation
    from mlops.data.dataset import schema_from_metadata
    from mlops.tracking.store import TrackingStore

    schema = schema_from_metadata(test_data.metadata, "evaluate-model's test_data")
    with tempfile.TemporaryDirectory(prefix="evaluate-") as tmp:
        out = Path(tmp)
        outcome = run_evaluation(
            model_dir=Path(model.path),
            test_data_path=Path(test_data.path),
            label_column=schema.label,
            model_name=model_name,
            store=TrackingStore.for_task(tracking, pipeline_run_id),
            metrics_out=out,
            slices=schema.slices,
            numeric=schema.numeric_features,
            categorical=schema.categorical_features,
        )
        report = json.loads((out / METRICS_FILE).read_text())
        # Writing the file (not only metadata) is what lets KFP cache this task.
        shutil.copyfile(out / METRICS_FILE, metrics.path)
        # Each image is a directory holding a .png, so the file keeps an extension viewers recognise.
        for artifact, name in ((confusion_matrix, CONFUSION_FILE), (roc_curve, ROC_FILE)):
            Path(artifact.path).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(out / name, Path(artifact.path) / name)
            artifact.metadata["file"] = name

    for key, value in report["test"].items():
        metrics.log_metric(f"test_{key}", value)
    if report["champion"] is not None:
        metrics.log_metric("champion_test_roc_auc", report["champion"]["test"]["roc_auc"])
    if report["champion"] is not None:
        metrics.log_metric("comparison_rows", outcome.comparison_rows)
    print(
        f"test ROC AUC {outcome.test_auc:.4f}; "
        + (
            f"champion {outcome.champion_auc:.4f} vs challenger {outcome.comparison_auc:.4f} on "
            f"{outcome.comparison_rows} rows it did not learn from"
            if outcome.has_champion
            else "no champion"
        )
        + (
            f"; best single feature {outcome.top_feature!r} AUC {outcome.top_feature_auc:.4f}"
            if outcome.top_feature
            else ""
        )
    )
    EvaluationOutputs = namedtuple(
        "EvaluationOutputs",
        [
            "test_auc",
            "champion_auc",
            "has_champion",
            "comparison_auc",
            "comparison_rows",
            "top_feature",
            "top_feature_auc",
        ],
    )
    return EvaluationOutputs(*outcome)
