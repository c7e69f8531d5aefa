"""KFP wrapper for :mod:`components.model_validation.core`."""

from typing import List  # noqa: UP035 - KFP's signature parser needs typing.List

from kfp import dsl
from kfp.dsl import HTML, Artifact, Dataset, Input, Model, Output, OutputPath

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def validate_model(
    model: Input[Model],
    test_data: Input[Dataset],
    label_column: str,
    protected_attributes: List[str],  # noqa: UP006
    model_name: str,
    version: str,
    decision_threshold: float,
    max_demographic_parity_difference: float,
    min_demographic_parity_ratio: float,
    max_equalized_odds_difference: float,
    min_group_size: int,
    bootstrap_resamples: int,
    min_attribution_rank_agreement: float,
    invariance_tests: List[dict],  # noqa: UP006
    directional_tests: List[dict],  # noqa: UP006
    tracking_uri: str,
    experiment: str,
    pipeline_run_id: str,
    artifact_root: str,
    report_html: Output[HTML],
    report_json: Output[Artifact],
    reason: OutputPath(str),  # type: ignore[valid-type]
) -> str:
    """Fairness, explainability and behavioural checks on the test split; returns promote/reject.

    The decision is the single return value (``outputs["Output"]``) because kfp.local 2.17 cannot
    resolve a named output inside a ``dsl.If`` condition; the reason is a second, named output.
    """
    from pathlib import Path

    from components.model_validation.config import (
        BehaviouralSuite,
        DirectionalTest,
        ExplainabilityPolicy,
        FairnessPolicy,
        InvarianceTest,
        ValidationConfig,
    )
    from components.model_validation.core import run
    from mlops.tracking import TrackingContext

    config = ValidationConfig(
        fairness=FairnessPolicy(
            decision_threshold=decision_threshold,
            max_demographic_parity_difference=max_demographic_parity_difference,
            min_demographic_parity_ratio=min_demographic_parity_ratio,
            max_equalized_odds_difference=max_equalized_odds_difference,
            min_group_size=min_group_size,
            bootstrap_resamples=bootstrap_resamples,
        ),
        explainability=ExplainabilityPolicy(min_rank_agreement=min_attribution_rank_agreement),
        behavioural=BehaviouralSuite(
            invariance=tuple(InvarianceTest.model_validate(t) for t in invariance_tests),
            directional=tuple(DirectionalTest.model_validate(t) for t in directional_tests),
        ),
    )
    result = run(
        model_path=Path(model.path),
        test_data_uri=test_data.path,
        label=label_column,
        protected_attributes=protected_attributes,
        config=config,
        model_name=model_name,
        version=version,
        context=TrackingContext(tracking_uri, experiment, pipeline_run_id, artifact_root),
        html_path=Path(report_html.path),
        json_path=Path(report_json.path),
    )
    decision = result.decision
    report_json.metadata["decision"] = decision.decision
    Path(reason).write_text(decision.reason, encoding="utf-8")
    print(f"gate {decision.gate}: {decision.decision} ({decision.reason})")
    return decision.decision
