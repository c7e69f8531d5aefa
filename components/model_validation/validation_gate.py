"""The model-validation gate: fairness, explanations and behaviour, decided and recorded in one place.

One task loads the model once, runs every check on the same test rows, writes
one report and one decision. The decision is recorded where an operator looks
first, on the model version: the verdict per family of checks, one tag per
violated threshold, and where the full report lives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from components.model_validation.behavioural import BehaviouralResult, check_suite, run_suite
from components.model_validation.checks import Violation, slug
from components.model_validation.config import ValidationConfig
from components.model_validation.explainability import ExplainabilityResult, explain
from components.model_validation.fairness import AttributeFairness, check_columns, evaluate_fairness
from components.model_validation.gate_result import CHECKS, GATE, ModelValidationResult
from components.model_validation.score_summary import summarise_scores
from mlops.gates import FAIL, NOT_CONCLUSIVE, PASS, PROMOTE, REJECT, Decision
from mlops.vocabulary import MODEL_VERSION_TAG, TAG_PREFIX, gate_tag

if TYPE_CHECKING:
    import pandas as pd

    from components.model_validation.scoring import ModelUnderCheck
    from mlops.data.dataset import DatasetSchema
    from mlops.tracking.store import TrackingStore

RUN_ID_TAG = f"{TAG_PREFIX}{GATE}.run_id"
REPORT_URI_TAG = f"{TAG_PREFIX}{GATE}.report_uri"
HTML_NAME = "report.html"
JSON_NAME = "report.json"
# MLflow caps a model-version tag value at 5,000 characters.
MAX_TAG_CHARS = 4000
POLICY_ADDRESS = f"{ValidationConfig.section}.pass_not_conclusive"
"""The setting that lets a gate with undecided checks promote (listed); named in every such reason."""


def _decide(
    gate: str,
    violations: Sequence[Violation],
    passed: str,
    metrics: dict[str, float],
    notes: str = "",
    undecided: Sequence[str] = (),
    holding: Sequence[str] = (),
) -> Decision:
    """Fail on any violation; else not conclusive when a check was undecided, promoted unless one of the
    undecided checks the policy does not let through (``holding``) is among them; else pass.
    Undecided checks are named in every case."""
    if violations:
        return Decision(
            gate, REJECT, "; ".join(v.message for v in violations) + notes, metrics, FAIL, tuple(undecided)
        )
    if undecided:
        listed = "not conclusive: " + "; ".join(undecided)
        if holding:
            reason = (
                f"{listed}; not promoted: {len(holding)} of them may not pass undecided under "
                f"{POLICY_ADDRESS} (test on more rows to decide them, or change the setting)"
            )
        else:
            reason = f"{listed}; passed as not conclusive, listed ({POLICY_ADDRESS} lets them through)"
        return Decision(
            gate, REJECT if holding else PROMOTE, reason + notes, metrics, NOT_CONCLUSIVE, tuple(undecided)
        )
    return Decision(gate, PROMOTE, passed + notes, metrics)


def holding(fairness: Sequence[AttributeFairness], policy: str) -> list[str]:
    """The undecided checks that hold the model back under ``pass_not_conclusive`` = ``policy``."""
    if policy == "always":
        return []
    if policy == "estimate_within_limit":
        return [u for a in fairness for u in a.undecided_outside]
    if policy == "never":
        return [u for a in fairness for u in a.undecided]
    raise ValueError(f"pass_not_conclusive {policy!r}: expected never, estimate_within_limit or always")


def _metrics(
    fairness: Sequence[AttributeFairness],
    explained: ExplainabilityResult,
    behaviour: Sequence[BehaviouralResult],
) -> dict[str, dict[str, float]]:
    per_check: dict[str, dict[str, float]] = {name: {} for name in CHECKS}
    for a in fairness:
        for metric in (
            "demographic_parity_difference",
            "demographic_parity_ratio",
            "equalized_odds_difference",
        ):
            per_check["fairness"][f"{a.attribute}.{metric}"] = float(getattr(a, metric))
    for b in behaviour:
        per_check["behavioural"][f"{b.name}.pass_fraction"] = b.pass_fraction
        per_check["behavioural"][f"{b.name}.mean_abs_change"] = b.mean_abs_change
    per_check["explainability"]["rank_agreement_spearman"] = explained.stability.spearman
    per_check["explainability"]["top_k_overlap"] = explained.stability.top_k_overlap
    return per_check


def decide(
    fairness: Sequence[AttributeFairness],
    explained: ExplainabilityResult,
    behaviour: Sequence[BehaviouralResult],
    stability_checked: bool = True,
    pass_not_conclusive: str = "estimate_within_limit",
) -> dict[str, Decision]:
    """One decision per family of checks, and the overall one: reject if any threshold is violated;
    not conclusive if any check could not be decided, rejected when ``pass_not_conclusive``
    (:attr:`ValidationConfig.pass_not_conclusive`) does not let one of them through."""
    metrics = _metrics(fairness, explained, behaviour)
    notes = [f"{a.attribute}: {note}" for a in fairness for note in a.notes]
    attributes = ", ".join(a.attribute for a in fairness) or "none configured"
    fairness_ok = f"fairness thresholds met for protected attribute(s): {attributes}"
    # Groups too small for a rate, bins: named whether the gate passes or not.
    fairness_notes = " [notes: " + "; ".join(notes) + "]" if notes else ""
    stability = explained.stability
    decisions = {
        "fairness": _decide(
            "fairness",
            [v for a in fairness for v in a.violations],
            fairness_ok,
            metrics["fairness"],
            fairness_notes,
            [u for a in fairness for u in a.undecided],
            holding(fairness, pass_not_conclusive),
        ),
        "behavioural": _decide(
            "behavioural",
            [v for b in behaviour for v in b.violations],
            f"all {len(behaviour)} behavioural test(s) passed"
            if behaviour
            else "no behavioural tests declared",
            metrics["behavioural"],
        ),
        "explainability": _decide(
            "explainability",
            explained.violations,
            f"attribution ranking {'stable' if stability_checked else 'not checked (disabled)'}: Spearman "
            f"{stability.spearman:.3f} across two halves of {stability.rows_per_half} rows",
            metrics["explainability"],
        ),
    }
    return {**decisions, GATE: overall(decisions)}


def overall(decisions: Mapping[str, Decision]) -> Decision:
    """The gate's verdict from its families': fail if one failed, else not conclusive if one was, else pass.

    Promoted only when every family promotes; the reason joins the reasons of the families that did not
    pass plainly (all of them when every family passed), and every undecided check is carried over.
    """
    merged = {f"{name}.{k}": v for name, d in decisions.items() for k, v in d.metrics.items()}
    undecided = tuple(u for d in decisions.values() for u in d.undecided)
    statuses = {d.status for d in decisions.values()}
    status = FAIL if FAIL in statuses else NOT_CONCLUSIVE if NOT_CONCLUSIVE in statuses else PASS
    shown = [d for d in decisions.values() if d.status != PASS] or list(decisions.values())
    if status == FAIL:  # the failures first; the undecided families' reasons follow
        shown = sorted(shown, key=lambda d: d.status != FAIL)
    promote = all(d.promote for d in decisions.values())
    reason = "; ".join(d.reason for d in shown)
    return Decision(GATE, PROMOTE if promote else REJECT, reason, merged, status, undecided)


def _check_label(frame: pd.DataFrame, label: str) -> None:
    values = set(frame[label].dropna().unique().tolist())
    if frame[label].isna().any() or not values <= {0, 1}:
        raise ValueError(
            f"label column {label!r} must hold only 0/1 without gaps; found values {sorted(map(str, values))[:10]} "
            f"and {int(frame[label].isna().sum())} missing. Validate the data before the model."
        )


def validate(
    scorer: ModelUnderCheck,
    frame: pd.DataFrame,
    label: str,
    protected_attributes: Sequence[str],
    config: ValidationConfig,
    favourable_class: Literal["positive", "negative"] = "negative",
    protected_bins: Mapping[str, Sequence[float]] | None = None,
) -> ModelValidationResult:
    """Run every check on ``frame`` (the held-out test split, protected attributes included).

    ``favourable_class`` is the dataset schema's; ``config.fairness.favourable_outcome`` may override it.
    ``protected_bins`` are the schema's declared bin edges of numeric protected attributes.
    """
    if frame.empty:
        raise ValueError("the test data has no rows; the validation gate needs the held-out test split")
    check_columns(frame, label, protected_attributes)
    _check_label(frame, label)
    check_suite(scorer, config.behavioural)  # fail on a mis-declared test before any slow work
    scores = scorer.predict(frame)
    fairness = evaluate_fairness(
        frame, scores, label, protected_attributes, config.fairness, favourable_class, protected_bins
    )
    sample = (
        frame.sample(n=config.max_rows, random_state=config.seed) if len(frame) > config.max_rows else frame
    )
    summary = summarise_scores(
        frame[label].to_numpy(), scores, config.fairness.decision_threshold, config.fairness.confidence
    )
    explained = explain(scorer, sample, label, config.explainability, config.seed)
    behaviour = run_suite(scorer, sample, config.behavioural, config.seed)
    return ModelValidationResult(
        label=label,
        protected_attributes=tuple(protected_attributes),
        n_rows=len(frame),
        config=config,
        fairness=fairness,
        explainability=explained,
        behavioural=behaviour,
        favourable_prediction=config.fairness.favourable_prediction(favourable_class),
        scores=summary,
        decisions=decide(
            fairness,
            explained,
            behaviour,
            config.explainability.min_rank_agreement > -1,
            config.pass_not_conclusive,
        ),
    )


def record(
    result: ModelValidationResult,
    model_name: str,
    version: str,
    store: TrackingStore,
    html_path: Path,
    json_path: Path,
) -> str:
    """Log the reports and metrics to an MLflow run and tag the model version; return the run id."""
    import math

    import mlflow

    with store.task_run(f"gate_{GATE}") as run:
        store.model_version(model_name, version)  # a clear MLflow error before anything is logged
        mlflow.log_params(_flat(result.config.model_dump(), f"{ValidationConfig.section}."))  # by address
        metrics = {k: v for k, v in result.decision.metrics.items() if math.isfinite(v)}
        mlflow.log_metrics({slug(k): v for k, v in metrics.items()})
        # Fixed names with extensions, whatever the caller's paths are (KFP output paths have none),
        # so the MLflow UI renders the HTML and the version tag points at a predictable place.
        mlflow.log_text(html_path.read_text(encoding="utf-8"), f"{GATE}/{HTML_NAME}")
        mlflow.log_text(json_path.read_text(encoding="utf-8"), f"{GATE}/{JSON_NAME}")
        tags = {
            RUN_ID_TAG: run.info.run_id,
            REPORT_URI_TAG: f"{run.info.artifact_uri.rstrip('/')}/{GATE}/{HTML_NAME}",
        }
        for name, decision in result.decisions.items():
            tags[gate_tag(name, "decision")] = decision.decision
            tags[gate_tag(name, "status")] = decision.status
            tags[gate_tag(name, "reason")] = _clip(decision.reason)
        if result.decision.undecided:
            tags[gate_tag(GATE, "undecided")] = _clip("\n".join(result.decision.undecided))
        for violation in result.violations:
            tags[gate_tag(violation.check, f"violation.{violation.tag_key}")] = _clip(violation.message)
        store.tag_version(model_name, version, tags)
        mlflow.set_tags({gate_tag(GATE, "decision"): result.decision.decision, MODEL_VERSION_TAG: version})
        from mlops.governance.audit import record_in_run

        record_in_run(
            "gate.decided",
            f"{model_name}/{version}",
            {
                "gate": GATE,
                "decision": result.decision.decision,
                "status": result.decision.status,
                "reason": result.decision.reason,
                "undecided": list(result.decision.undecided),
                "checks": {name: d.decision for name, d in result.decisions.items()},
                "statuses": {name: d.status for name, d in result.decisions.items()},
            },
            pipeline_run_id=store.pipeline_run_id,
            model_version=f"{model_name}/{version}",
        )
        return str(run.info.run_id)


def run(
    model_path: Path,
    test_data_uri: str,
    schema: DatasetSchema,
    config: ValidationConfig,
    model_name: str,
    version: str,
    store: TrackingStore,
    html_path: Path,
    json_path: Path,
) -> ModelValidationResult:
    """Everything the KFP task does: load, validate, write both reports, record on MLflow and the version."""
    from components.model_validation.gate_report import write_reports
    from components.model_validation.scoring import load_scorer
    from mlops.data.dataset import load_table

    scorer = load_scorer(model_path)
    frame, _ = load_table(test_data_uri)
    result = validate(
        scorer,
        frame,
        schema.label,
        schema.protected_attributes,
        config,
        schema.favourable_class,
        schema.protected_bins,
    )
    write_reports(result, model_name, version, html_path, json_path)
    record(result, model_name, version, store, html_path, json_path)
    return result


def _flat(values: dict[str, object], prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flat(value, f"{name}."))
        elif isinstance(value, list | tuple) and value and isinstance(value[0], dict):
            for i, item in enumerate(value):
                flat.update(_flat(item, f"{name}.{i}."))
        else:
            flat[name] = str(value)
    return flat


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TAG_CHARS else text[: MAX_TAG_CHARS - 20] + " … (see report)"
