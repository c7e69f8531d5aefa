"""KFP wrapper for :mod:`components.model_validation.validation_gate`."""

from kfp import dsl
from kfp.dsl import HTML, Artifact, Dataset, Input, Model, Output, OutputPath

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def validate_model(
    model: Input[Model],
    test_data: Input[Dataset],
    model_name: str,
    version: str,
    model_validation: dict,
    tracking: dict,
    pipeline_run_id: str,
    report_html: Output[HTML],
    report_json: Output[Artifact],
    reason: OutputPath(str),  # type: ignore[valid-type]
    verdict: OutputPath(str),  # type: ignore[valid-type]
) -> str:
    """Fairness, explainability and behavioural checks on the test split; returns promote/reject.

    ``model_validation`` is that section (:class:`~components.model_validation.config.ValidationConfig`).
    The behavioural tests and the favourable class come with ``test_data`` (validate-data resolved
    them from the dataset's declaration and the settings and checked their columns).
    The decision is the single return value (``outputs["Output"]``) because kfp.local 2.17 cannot
    resolve a named output inside a ``dsl.If`` condition; the reason is a second, named output, and
    ``verdict`` the whole decision as JSON (status pass / fail / not_conclusive and every undecided
    check), which the combine step reads so that the overall verdict never hides an undecided check.
    """
    from pathlib import Path

    from components.model_validation.config import ValidationConfig
    from components.model_validation.validation_gate import run
    from mlops.data.dataset import schema_from_metadata
    from mlops.settings import from_section
    from mlops.tracking.store import TrackingStore

    schema = schema_from_metadata(test_data.metadata, "validate-model's test_data")
    tests = test_data.metadata.get("behavioural") or {"invariance": [], "directional": []}
    # The resolved tests replace the section's own (validate-data already merged them with the dataset's).
    config = from_section(ValidationConfig, {**model_validation, "behavioural": tests})
    result = run(
        model_path=Path(model.path),
        test_data_uri=test_data.path,
        schema=schema,
        config=config,
        model_name=model_name,
        version=version,
        store=TrackingStore.for_task(tracking, pipeline_run_id),
        html_path=Path(report_html.path),
        json_path=Path(report_json.path),
    )
    decision = result.decision
    report_json.metadata["decision"] = decision.decision
    report_json.metadata["status"] = decision.status
    Path(reason).write_text(decision.reason, encoding="utf-8")
    Path(verdict).write_text(decision.to_json(), encoding="utf-8")
    print(f"gate {decision.gate}: {decision.decision}, {decision.status} ({decision.reason})")
    return decision.decision
