"""The fairness checks and the model-validation gate, on real trained models and a real MLflow store."""

import contextlib
import json
import math
import re
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from components.model_validation.config import FairnessPolicy, ValidationConfig
from components.model_validation.fairness import evaluate_fairness
from components.model_validation.scoring import load_scorer
from components.model_validation.validation_gate import REPORT_URI_TAG, RUN_ID_TAG, run, validate
from components.promotion_gate.combine import combine, record_overall
from mlops.data.dataset import DatasetSchema
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.gates import Decision
from mlops.tracking.store import TrackingStore
from tests.support.model_factory import fit_model

# The model sees `sex`: it stands for a model that learned group membership directly or through proxies,
# which is what the gate must catch. The generator's features are independent of `sex`, so a sex-blind
# model could not show a demographic-parity gap whatever the labels say.
SEX_AWARE = DatasetSchema(
    label="default",
    numeric_features=SAMPLE_SCHEMA.numeric_features,
    categorical_features=(*SAMPLE_SCHEMA.categorical_features, "sex"),
)


def _split(config: SampleDataConfig, test_rows: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    frame = generate(config)
    return frame.iloc[:-test_rows], frame.iloc[-test_rows:]


@pytest.fixture(scope="module")
def biased(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    train, test = _split(SampleDataConfig(rows=6000, seed=11, bias=2.0), 2000)
    return fit_model(train, SEX_AWARE, tmp_path_factory.mktemp("biased")), test


@pytest.fixture(scope="module")
def fair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    train, test = _split(SampleDataConfig(rows=6000, seed=12, bias=0.0), 2000)
    return fit_model(train, SEX_AWARE, tmp_path_factory.mktemp("fair")), test


def _register(store: TrackingStore, name: str, source: Path) -> str:
    client = store._client
    with contextlib.suppress(mlflow.exceptions.MlflowException):  # already registered
        client.create_registered_model(name)
    return str(client.create_model_version(name, source=source.as_uri()).version)


def test_biased_model_fails_on_demographic_parity_naming_group_value_and_threshold(
    biased: tuple[Path, pd.DataFrame],
) -> None:
    model, test = biased
    result = validate(load_scorer(model), test, "default", ["sex"], ValidationConfig())
    assert result.decision.decision == "reject"
    assert result.decisions["fairness"].decision == "reject"
    (sex,) = result.fairness
    dp = next(v for v in sex.violations if v.metric == "demographic_parity_difference")
    assert dp.value > 0.3 and dp.threshold == 0.1
    assert sex.intervals["demographic_parity_difference"][0] > 0.1  # conclusive, not noise
    female = next(g for g in sex.groups if g.group == "female")
    male = next(g for g in sex.groups if g.group == "male")
    assert female.selection_rate > male.selection_rate + 0.3
    assert math.isclose(dp.value, female.selection_rate - male.selection_rate, abs_tol=1e-9)
    assert dp.message.startswith(f"sex: demographic_parity_difference {dp.value:.4f} > max 0.1000")
    assert "female" in dp.message and "male" in dp.message
    assert "demographic_parity_difference" in result.decision.reason and "sex" in result.decision.reason


def test_fair_model_passes_the_fairness_gate(fair: tuple[Path, pd.DataFrame]) -> None:
    model, test = fair
    result = validate(load_scorer(model), test, "default", ["sex"], ValidationConfig())
    (sex,) = result.fairness
    assert result.decisions["fairness"].decision == "promote", result.decisions["fairness"].reason
    assert sex.violations == ()
    assert sex.demographic_parity_difference < 0.1
    assert set(sex.checked_groups) == {"female", "male"}
    assert result.decision.decision == "promote", result.decision.reason
    # Equalised odds is within its limit, its interval reaches across it: passed, as not conclusive.
    assert sex.status("equalized_odds_difference") == "not_conclusive" and sex.undecided_outside == ()
    assert result.decision.status == "not_conclusive" and len(result.decision.undecided) == 1
    held = validate(
        load_scorer(model), test, "default", ["sex"], ValidationConfig(pass_not_conclusive="never")
    )
    assert held.decision.decision == "reject" and held.decision.status == "not_conclusive"
    assert "not promoted: 1 of them may not pass undecided" in held.decision.reason


def test_tiny_group_is_reported_with_its_size_not_dropped(fair: tuple[Path, pd.DataFrame]) -> None:
    model, _ = fair
    test = generate(SampleDataConfig(rows=1500, seed=13, minority_fraction=0.01))
    n_female = int((test["sex"] == "female").sum())
    assert 0 < n_female < 30
    scores = load_scorer(model).predict(test)
    (sex,) = evaluate_fairness(test, scores, "default", ["sex"], FairnessPolicy(min_group_size=30))
    female = next(g for g in sex.groups if g.group == "female")
    assert female.size == n_female and female.too_small
    assert sex.checked_groups == ("male",)
    assert any(
        note.startswith(f"group 'female' has {n_female} rows < min_group_size 30, ")
        and "its selection and favourable rates and TPR" in note
        for note in sex.notes
    )
    assert any("nothing to compare" in note for note in sex.notes)
    assert sex.violations == ()
    assert math.isnan(sex.demographic_parity_difference)


def test_missing_protected_attribute_is_a_clear_error(fair: tuple[Path, pd.DataFrame]) -> None:
    model, test = fair
    with pytest.raises(ValueError, match=r"protected attribute\(s\) \['race'\] not in the test data.*'sex'"):
        validate(load_scorer(model), test, "default", ["sex", "race"], ValidationConfig())
    with pytest.raises(ValueError, match=r"\['sex'\] not in the test data; available columns: \[.*'age'"):
        validate(load_scorer(model), test.drop(columns="sex"), "default", ["sex"], ValidationConfig())
    with pytest.raises(ValueError, match=r"label column 'default' must hold only 0/1.*'2'"):
        validate(load_scorer(model), test.assign(default=2), "default", ["sex"], ValidationConfig())


def _scored(groups: dict[str, tuple[list[int], list[float]]]) -> tuple[pd.DataFrame, np.ndarray]:
    labels, scores, names = [], [], []
    for name, (y, s) in groups.items():
        labels += y
        scores += s
        names += [name] * len(y)
    return pd.DataFrame({"y": labels, "g": names}), np.array(scores)


def test_single_class_group_reports_auc_as_undefined() -> None:
    frame, scores = _scored(
        {"a": ([0, 1] * 20, [0.2, 0.8] * 20), "b": ([0] * 40, [0.1, 0.7] * 20)}  # b has no positives
    )
    (attr,) = evaluate_fairness(
        frame,
        scores,
        "y",
        ["g"],
        FairnessPolicy(min_group_size=10, min_group_negatives=10, gate_on_intervals=False),
    )
    b = next(g for g in attr.groups if g.group == "b")
    assert math.isnan(b.auc) and math.isnan(b.true_positive_rate)
    assert "AUC undefined: the group has only one label class" in b.notes
    assert b.selection_rate == 0.5 and b.false_positive_rate == 0.5
    # Equalised odds uses the one defined gap (FPR 0.5 vs 0.0), not a made-up TPR of 0.
    assert attr.equalized_odds_difference == pytest.approx(0.5)


def test_disparity_within_sampling_noise_is_not_conclusive_not_a_violation() -> None:
    # 40 rows per group; selection rates 0.25 vs 0.10: a 0.15 gap that 40 rows cannot distinguish from noise.
    a = ([1, 0] * 20, [0.9] * 10 + [0.1] * 30)
    b = ([1, 0] * 20, [0.9] * 4 + [0.1] * 36)
    frame, scores = _scored({"a": a, "b": b})
    policy = FairnessPolicy(
        min_group_size=10, min_demographic_parity_ratio=0.0, max_equalized_odds_difference=1.0
    )
    (with_ci,) = evaluate_fairness(frame, scores, "y", ["g"], policy)
    assert with_ci.demographic_parity_difference == pytest.approx(0.15)
    assert with_ci.violations == ()
    assert with_ci.status("demographic_parity_difference") == "not_conclusive"
    assert any(
        "not conclusive" in u and "demographic_parity_difference 0.1500 is beyond" in u
        for u in with_ci.undecided_outside
    )
    (point,) = evaluate_fairness(
        frame, scores, "y", ["g"], policy.model_copy(update={"gate_on_intervals": False})
    )
    assert [v.metric for v in point.violations] == ["demographic_parity_difference"]


def test_fairness_policy_rejects_impossible_thresholds() -> None:
    with pytest.raises(ValidationError, match="min_demographic_parity_ratio"):
        FairnessPolicy(min_demographic_parity_ratio=1.5)
    with pytest.raises(ValidationError, match="min_group_size"):
        FairnessPolicy(min_group_size=0)
    with pytest.raises(ValidationError, match="extra_forbidden"):
        FairnessPolicy(max_dp=0.1)  # type: ignore[call-arg]


def test_run_writes_reports_logs_to_mlflow_and_tags_the_version(
    biased: tuple[Path, pd.DataFrame], tracking: TrackingStore, tmp_path: Path
) -> None:
    model, test = biased
    data = tmp_path / "test.parquet"
    test.to_parquet(data)
    version = _register(tracking, "credit", model)
    html, report = tmp_path / "out" / "report_html", tmp_path / "out" / "report_json"
    from components.model_validation.config import (
        SAMPLE_DIRECTIONAL_TESTS,
        SAMPLE_INVARIANCE_TESTS,
        BehaviouralSuite,
    )
    from mlops.data.sample_data import SAMPLE_SCHEMA

    sample_tests = BehaviouralSuite(invariance=SAMPLE_INVARIANCE_TESTS, directional=SAMPLE_DIRECTIONAL_TESTS)
    config = ValidationConfig(behavioural=sample_tests)
    result = run(model, str(data), SAMPLE_SCHEMA, config, "credit", version, tracking, html, report)

    tags = tracking.model_version("credit", version).tags
    assert tags["mlops.gate.model_validation.decision"] == "reject"
    assert tags["mlops.gate.fairness.decision"] == "reject"
    assert tags["mlops.gate.behavioural.decision"] == "promote"
    violation = tags["mlops.gate.fairness.violation.sex.demographic_parity_difference"]
    assert violation.startswith("sex: demographic_parity_difference") and "> max 0.1000" in violation
    assert "demographic_parity_difference" in tags["mlops.gate.fairness.reason"]

    logged = tracking.get_run(tags[RUN_ID_TAG])
    assert logged.data.tags["mlops.task"] == "gate_model_validation"
    assert logged.data.metrics["fairness.sex.demographic_parity_difference"] > 0.3
    assert logged.data.params["model_validation.fairness.min_group_size"] == "30"
    assert tags[REPORT_URI_TAG].endswith("/model_validation/report.html")
    local = tracking.download(tags[REPORT_URI_TAG])
    page = local.read_text()
    assert page == html.read_text()
    assert "REJECT" in page and "demographic_parity_difference" in page and "data:image/png;base64," in page
    assert "credit_score" in page and "invariance:region:permute" in page
    for table in re.findall(r"<table>(.*?)</table>", page, flags=re.S):
        header, *rows = re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)
        assert {row.count("<td>") for row in rows} <= {header.count("<th>")}, header

    body = json.loads(report.read_text())
    assert body["decision"] == "reject" and body["version"] == version
    assert body["violations"][0]["subject"] == "sex"
    assert {g["group"] for g in body["fairness"][0]["groups"]} == {"female", "male"}
    assert body["explainability"]["attributions"][0]["rank"] == 1
    assert result.decision.reason == body["reason"]


def test_combine_promotes_only_when_every_gate_does(tracking: TrackingStore) -> None:
    ok = Decision("metrics", "promote", "auc fine", {})
    bad = Decision("model_validation", "reject", "sex: demographic_parity_difference 0.4 > max 0.1", {})
    assert combine([ok, ok]).promote
    rejected = combine([ok, bad])
    assert not rejected.promote
    assert rejected.reason == "model_validation gate: sex: demographic_parity_difference 0.4 > max 0.1"
    with pytest.raises(ValueError, match=r"returned \['maybe'\]"):
        combine([Decision("metrics", "maybe", "", {})])

    version = _register(tracking, "combined", Path("/dev/null"))
    record_overall(rejected, "combined", version, tracking)
    tags = tracking.model_version("combined", version).tags
    assert tags["mlops.decision"] == "reject"
    assert tags["mlops.reason"] == rejected.reason


@pytest.mark.slow
def test_components_gate_promotion_under_the_local_runner(
    biased: tuple[Path, pd.DataFrame], fair: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    """The KFP wrappers end to end: importer -> validate_model -> combine_gates -> dsl.If."""
    from kfp import dsl

    from cli.local_run import run_locally
    from components.model_validation.component import validate_model
    from components.model_validation.config import SAMPLE_DIRECTIONAL_TESTS, SAMPLE_INVARIANCE_TESTS
    from components.promotion_gate.component import combine_gates
    from mlops.data.dataset import SCHEMA_METADATA_KEY
    from mlops.data.sample_data import SAMPLE_SCHEMA
    from mlops.settings import section_values
    from mlops.workspace import Workspace

    invariance = [t.model_dump() for t in SAMPLE_INVARIANCE_TESTS]
    directional = [t.model_dump() for t in SAMPLE_DIRECTIONAL_TESTS]

    @dsl.component(base_image="python:3.11", install_kfp_package=False)
    def mark_promoted(version: str) -> str:
        return version

    @dsl.pipeline(name="validation-gate")
    def gate_pipeline(
        model_uri: str,
        data_uri: str,
        version: str,
        tracking_uri: str,
        artifact_root: str,
    ) -> str:
        tracking = {"tracking_uri": tracking_uri, "experiment": "gate", "artifact_root": artifact_root}
        run_id = dsl.PIPELINE_JOB_ID_PLACEHOLDER  # beside the section, never substituted inside it
        model = dsl.importer(artifact_uri=model_uri, artifact_class=dsl.Model, reimport=False)
        data = dsl.importer(
            artifact_uri=data_uri,
            artifact_class=dsl.Dataset,
            reimport=False,
            # The declaration validate-data hands on: the schema (protected attribute: sex) and the tests.
            metadata={
                SCHEMA_METADATA_KEY: section_values(SAMPLE_SCHEMA),
                "behavioural": {"invariance": invariance, "directional": directional},
            },
        )
        validation = validate_model(
            model=model.output,
            test_data=data.output,
            model_name="credit",
            version=version,
            model_validation={  # the section, nested as the form holds it; keys left out default
                "fairness": {
                    "decision_threshold": 0.5,
                    "max_demographic_parity_difference": 0.1,
                    "min_demographic_parity_ratio": 0.8,
                    "max_equalized_odds_difference": 0.1,
                    "min_group_size": 30,
                    "gate_on_intervals": True,
                },
                "explainability": {"min_rank_agreement": 0.6},
            },
            tracking=tracking,
            pipeline_run_id=run_id,
        )
        gates = combine_gates(
            model_name="credit",
            version=version,
            metrics_decision="promote",
            metrics_reason="test_auc above the floor",
            validation_decision=validation.outputs["Output"],
            validation_reason=validation.outputs["reason"],
            validation_verdict=validation.outputs["verdict"],
            gate={},
            tracking=tracking,
            pipeline_run_id=run_id,
        )
        with dsl.If(gates.outputs["Output"] == "promote", name="all-gates-passed"):
            mark_promoted(version=version)
        return gates.outputs["reason"]

    workspace = Workspace(tmp_path / "ws")
    context = TrackingStore(workspace.tracking_uri, "gate", "", workspace.artifact_root)
    client = context._client
    outcomes = {}
    for name, (model, test) in {"biased": biased, "fair": fair}.items():
        data = tmp_path / f"{name}.parquet"
        test.to_parquet(data)
        version = _register(context, "credit", model)
        arguments = {"model_uri": str(model), "data_uri": str(data), "version": version}
        result = run_locally(
            gate_pipeline,
            {**arguments, "tracking_uri": workspace.tracking_uri, "artifact_root": workspace.artifact_root},
            workspace,
        )
        assert result.run_dir is not None
        promoted = (result.run_dir / "mark-promoted").exists()
        outcomes[name] = (str(result.output), promoted, client.get_model_version("credit", version).tags)

    reason, promoted, tags = outcomes["biased"]
    assert not promoted
    assert reason.startswith("model_validation gate: sex: demographic_parity_difference")
    assert tags["mlops.decision"] == "reject" and tags["mlops.gate.fairness.decision"] == "reject"
    assert tags["mlops.status"] == "fail"
    reason, promoted, tags = outcomes["fair"]
    assert promoted, reason
    # Equalised odds 0.0446 is within the max 0.1 but its interval reaches 0.134: promoted under the
    # default policy, and the verdict says so instead of "all gates passed".
    assert tags["mlops.decision"] == "promote" and tags["mlops.status"] == "not_conclusive"
    assert reason.startswith(
        "promoted with 1 check(s) not conclusive, let through by the model_validation gate's"
    )
    assert "model_validation: sex equalized_odds_difference 0.0446 is within the max 0.1000" in reason
    assert tags["mlops.undecided"] == tags["mlops.gate.model_validation.undecided"].replace(
        "sex", "model_validation: sex", 1
    )
