"""KFP wrappers for :mod:`components.promotion_gate.promotion`."""

from kfp import dsl
from kfp.dsl import Artifact, Dataset, Input, Metrics, Model, Output, OutputPath

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def metrics_gate(
    model_name: str,
    version: str,
    test_auc: float,
    champion_auc: float,
    has_champion: bool,
    evaluation: Input[Metrics],
    model: Input[Model],
    test_data: Input[Dataset],
    comparison_auc: float,
    top_feature: str,
    top_feature_auc: float,
    gate: dict,
    tracking: dict,
    pipeline_run_id: str,
    report: Output[Artifact],
    reason: OutputPath(str),  # type: ignore[valid-type]
) -> str:
    """Decides promote/reject from test AUC vs floor, vs the champion on rows it did not learn from
    (comparison_auc) and vs a leak (a test AUC one feature alone explains); records it on the version.
    With ``gate.slice_floors`` set, the slice-floor gate decides on ``evaluation``'s per-slice part too.
    The leakage gate (``gate.leakage``) checks ``model`` on ``test_data``: columns only one label class
    fills, one column or a small group that carries the model; a likely leak rejects the version unless
    the schema acknowledges it (``allowed_leaks``).

    The decision is the single return value, not a NamedTuple field: kfp.local 2.17 cannot
    resolve a ``dsl.If`` on a named output (see :mod:`components.promotion_gate.combine`).
    """
    import json
    from pathlib import Path

    from components.promotion_gate.config import MetricsGatePolicy
    from components.promotion_gate.metrics_gate import judge_metrics
    from mlops.data.dataset import schema_from_metadata
    from mlops.settings import from_section
    from mlops.tracking.store import TrackingStore

    decision = judge_metrics(
        from_section(MetricsGatePolicy, gate),
        json.loads(Path(evaluation.path).read_text(encoding="utf-8")),
        test_auc=test_auc,
        champion_auc=champion_auc,
        has_champion=has_champion,
        comparison_auc=comparison_auc,
        top_feature=top_feature,
        top_feature_auc=top_feature_auc,
        model_dir=Path(model.path),
        test_data=Path(test_data.path),
        schema=schema_from_metadata(test_data.metadata, "metrics-gate's test_data"),
        model_name=model_name,
        version=version,
        store=TrackingStore.for_task(tracking, pipeline_run_id),
        report_path=Path(report.path),
    )
    Path(reason).write_text(decision.reason, encoding="utf-8")
    print(f"gate {decision.gate}: {decision.decision} ({decision.reason})")
    return decision.decision


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def promote_to_champion(
    model_name: str,
    version: str,
    gate: dict,
    tracking: dict,
    pipeline_run_id: str,
) -> str:
    """Moves alias ``champion`` to the version; returns the replaced version or ''. With
    ``gate.require_approval`` (or a version under approval) it refuses unless a valid approval is recorded."""
    from components.promotion_gate.config import MetricsGatePolicy
    from components.promotion_gate.promotion import promote
    from mlops.settings import from_section
    from mlops.tracking.store import TrackingStore

    policy = from_section(MetricsGatePolicy, gate)
    store = TrackingStore.for_task(tracking, pipeline_run_id)
    previous = promote(model_name, version, store, require_approval=policy.require_approval)
    if previous == version:
        print(f"{model_name} version {version} already is champion: nothing moved")
    else:
        print(f"{model_name} version {version} is now champion (was {previous or 'none'})")
    return previous or ""


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def combine_gates(
    model_name: str,
    version: str,
    metrics_decision: str,
    metrics_reason: str,
    validation_decision: str,
    validation_reason: str,
    gate: dict,
    tracking: dict,
    pipeline_run_id: str,
    reason: OutputPath(str),  # type: ignore[valid-type]
    validation_verdict: str = "",
) -> str:
    """``promote`` only when both gates promote; writes the overall mlops.decision/mlops.status/mlops.reason tags.
    With ``gate.require_approval`` a promote returns ``pending-approval`` and marks the version so: it waits
    for ``mlops approve NAME@VERSION`` (no pod waits; neither the canary nor the promotion runs).

    ``validation_verdict`` is validate-model's decision as JSON (its status and undecided checks); the
    overall status is not conclusive whenever it left a check undecided, promoted or not.
    Use ``outputs["Output"]`` in the ``dsl.If`` (see :mod:`components.promotion_gate.combine`).
    """
    from pathlib import Path

    from components.promotion_gate.combine import combine, gate_decision, record_overall, verdict_output
    from components.promotion_gate.config import MetricsGatePolicy
    from mlops.gates import Decision
    from mlops.settings import from_section
    from mlops.tracking.store import TrackingStore

    require_approval = from_section(MetricsGatePolicy, gate).require_approval

    decision = combine(
        [
            Decision("metrics", metrics_decision, metrics_reason, {}),
            gate_decision("model_validation", validation_decision, validation_reason, validation_verdict),
        ]
    )
    record_overall(
        decision,
        model_name,
        version,
        TrackingStore.for_task(tracking, pipeline_run_id),
        require_approval=require_approval,
    )
    Path(reason).write_text(decision.reason, encoding="utf-8")
    print(f"overall gate: {decision.decision}, {decision.status} ({decision.reason})")
    output = verdict_output(decision, require_approval)
    if output != decision.decision:
        print(
            f"{model_name} version {version} is pending approval (gate.require_approval): not made champion; "
            f"a second person signs it off with `mlops approve {model_name}@{version} --key KEY`"
        )
    return output
