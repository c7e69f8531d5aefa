"""Pipeline overhead: the training pipeline through KFP's local runner vs the same steps as plain calls.

Both sides run the same core functions on the same generated rows with the same
parameters, each in a fresh workspace. The plain side runs in one fresh Python
process (so it pays its imports once); the local runner starts one process per
task. The ratio is what an ML engineer pays for the orchestration.

    python benchmarks/bench_pipeline_overhead.py --rows 50000 --epochs 3

The pipeline side serves the workspace's tracking store for the run as ``mlops run`` does;
``MLOPS_SERVE_TRACKING=0`` measures it with every task opening the store itself. It runs twice in the same
session: with warm steps (forked from the run's warm process, the default) and with ``--cold-steps``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def pipeline_settings(rows: int, epochs: int) -> dict[str, Any]:
    """The settings this benchmark changes, by address."""
    return {"data.sample.rows": rows, "train.epochs": epochs, "train.patience": epochs, "gate.auc_floor": 0.5}


def run_plain(workspace_dir: Path, rows: int, epochs: int) -> float:
    """The pipeline's steps as direct calls to each component's core; returns seconds."""
    start = time.perf_counter()
    import pandas as pd

    from components.data_validation.declaration import resolve
    from components.data_validation.suite_validation import run_validation
    from components.evaluate.holdout_evaluation import METRICS_FILE, run_evaluation
    from components.export_onnx.verified_export import run_export
    from components.model_validation.validation_gate import run as run_model_validation
    from components.prepare_data.data_source import resolve_data
    from components.promotion_gate.combine import combine, record_overall
    from components.promotion_gate.metrics_gate import judge_metrics
    from components.promotion_gate.promotion import promote
    from components.register.version_registration import register_onnx_model
    from components.train.training_task import run_training
    from mlops.origin_facts import package_version
    from mlops.settings import section_of
    from mlops.tracking.store import TrackingStore
    from mlops.vocabulary import Lineage
    from mlops.workspace import Workspace
    from pipelines.training.pipeline import FORM

    arguments = FORM.arguments(pipeline_settings(rows, epochs))
    params = FORM.values(arguments)
    configs = {section_of(type(config)): config for config in FORM.configs(arguments)}
    workspace = Workspace(workspace_dir).create()
    context = TrackingStore(
        workspace.tracking_uri, params["tracking.experiment"], "plain", workspace.artifact_root
    )
    out = workspace.root / "plain"
    out.mkdir()

    def settings(section: str) -> Any:
        """The pipeline's config of one section, the way a task rebuilds it."""
        return configs[section]

    uri = resolve_data(settings("data"), out / "sample.parquet")
    # As validate-data declares it: the sample's acknowledged column added.
    schema = resolve(settings("schema"), settings("validation"), sample=True).schema
    digest, suite_version = run_validation(
        uri, schema, None, context, out / "validated.parquet", out / "report.html", out / "report.json"
    )
    config = settings("train")
    training = run_training(
        str(out / "validated.parquet"),
        schema.model_copy(update={"protected_attributes": ()}),
        config,
        context,
        out / "model",
        out / "test.parquet",
        out / "checkpoints",
    )
    evaluation = run_evaluation(
        out / "model",
        out / "test.parquet",
        schema.label,
        params["registration.model_name"],
        context,
        out / "evaluation",
        slices=schema.slices,
        numeric=schema.numeric_features,
        categorical=schema.categorical_features,
    )
    run_export(out / "model", out / "test.parquet", out / "onnx", settings("export").tolerance)
    lineage = Lineage("plain", "", digest, suite_version, package_version(), training.run_id)
    registered = register_onnx_model(
        out / "onnx",
        pd.read_parquet(out / "test.parquet"),
        params["registration.model_name"],
        lineage,
        context,
        label=schema.label,  # as the step passes it from the test split's schema
    )
    metrics_decision = judge_metrics(
        settings("gate"),
        json.loads((out / "evaluation" / METRICS_FILE).read_text()),
        test_auc=evaluation.test_auc,
        champion_auc=evaluation.champion_auc,
        has_champion=evaluation.has_champion,
        comparison_auc=evaluation.comparison_auc,
        top_feature=evaluation.top_feature,
        top_feature_auc=evaluation.top_feature_auc,
        model_dir=out / "model",
        test_data=out / "test.parquet",
        schema=schema,
        model_name=params["registration.model_name"],
        version=registered.version,
        store=context,
        report_path=out / "gate.json",
    )
    validation = run_model_validation(
        model_path=out / "model",
        test_data_uri=str(out / "test.parquet"),
        schema=schema,
        config=settings("model_validation"),
        model_name=params["registration.model_name"],
        version=registered.version,
        store=context,
        html_path=out / "model_report.html",
        json_path=out / "model_report.json",
    )
    decision = combine([metrics_decision, validation.decision])
    record_overall(decision, params["registration.model_name"], registered.version, context)
    if decision.promote:
        promote(params["registration.model_name"], registered.version, context)
    return time.perf_counter() - start


def run_pipeline(
    workspace_dir: Path, rows: int, epochs: int, warm: bool = True
) -> tuple[float, dict[str, float]]:
    """The pipeline through kfp.local, its steps forked warm or each a new interpreter; seconds, per step."""
    from cli.local_run import run_locally
    from cli.warm_steps.step_runner import warm_steps
    from mlops.governance.signing import workspace_defaults
    from mlops.tracking.served import SERVE_ENV, serve_store
    from mlops.workspace import Workspace
    from pipelines.training.pipeline import FORM, training_pipeline

    workspace = Workspace(workspace_dir)
    arguments = FORM.arguments(
        {
            **pipeline_settings(rows, epochs),
            "tracking.tracking_uri": workspace.tracking_uri,
            "tracking.artifact_root": workspace.artifact_root,
        }
    )
    start = time.perf_counter()
    if os.environ.get(SERVE_ENV, "1") == "0":  # the store not served: every task opens the SQLite file itself
        run = run_locally(training_pipeline, arguments, workspace, warm=warm)
        return time.perf_counter() - start, step_seconds(run)
    # As `mlops run` does: one tracking server on the workspace's store for the run (its start counted),
    # the audit trail and signing keys named by the environment (a task's MLflow client then names the
    # server, not the workspace), and the warm process started before the server, so that its imports
    # overlap the server's start and, on a fresh workspace, the wait for the store's tables.
    log = workspace.pipeline_root / ".mlflow-server.log"
    with (
        workspace_defaults(workspace.create().root, sign=True),
        warm_steps(training_pipeline, workspace) if warm else contextlib.nullcontext(),
        serve_store(workspace.tracking_uri, workspace.artifact_root, log) as served,
    ):
        served.wait_until_schema_ready()  # a fresh workspace: no step races the server for the tables
        run = run_locally(training_pipeline, arguments, workspace, warm=False)
    return time.perf_counter() - start, step_seconds(run)


def step_seconds(run: Any) -> dict[str, float]:
    return {step.name: step.seconds for step in run.steps}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--plain-only", type=Path, help=argparse.SUPPRESS)  # child-process mode
    args = parser.parse_args()
    if args.plain_only:
        print(json.dumps({"seconds": run_plain(args.plain_only, args.rows, args.epochs)}))
        return

    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, __file__, "--rows", str(args.rows), "--epochs", str(args.epochs)]
        child = subprocess.run(
            [*command, "--plain-only", f"{tmp}/plain"], capture_output=True, text=True, check=True
        )
        plain = json.loads(child.stdout.strip().splitlines()[-1])["seconds"]
        warm, warm_steps = run_pipeline(Path(tmp) / "warm", args.rows, args.epochs, warm=True)
        cold, cold_steps = run_pipeline(Path(tmp) / "cold", args.rows, args.epochs, warm=False)
    print(f"plain functions, one process       : {plain:7.1f} s")
    for label, pipeline in (("warm steps (default)", warm), ("cold steps (--cold-steps)", cold)):
        print(f"kfp.local, {label:<25}: {pipeline:7.1f} s  ratio {pipeline / plain:5.2f}x (target <= 1.3x)")
    print()
    print("| rows | epochs | plain (s) | kfp.local warm (s) | ratio | kfp.local cold (s) | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print(
        f"| {args.rows} | {args.epochs} | {plain:.1f} | {warm:.1f} | {warm / plain:.2f}x | {cold:.1f} "
        f"| {cold / plain:.2f}x |"
    )
    print()
    print("| step | warm (s) | cold (s) |")
    print("| --- | ---: | ---: |")
    for name, seconds in warm_steps.items():
        print(f"| {name} | {seconds:.1f} | {cold_steps.get(name, float('nan')):.1f} |")


if __name__ == "__main__":
    main()
