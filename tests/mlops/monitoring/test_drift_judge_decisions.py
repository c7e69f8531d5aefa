"""The drift judge, in-process, at its edges: the decision and its reasons, on hand-built profiles and
counts (no model, no registry). The reasons a result gives (dataset and prediction drift, estimated and
realised performance drops, why no action), its headline, and ``judge`` on whole windows: a calm window asks
for nothing, a drifted one retrains unless only performance may trigger, a performance drop leads the
reasons, and bias against the gate report is a finding, never a retraining. The window, the method and
each verdict are in test_drift_judge_windows.py and test_drift_judge_verdicts.py."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from mlops.model.reference_profile import CategoricalProfile, ReferenceProfile, numeric_profile
from mlops.monitoring.drift_reasons import drift_reasons, no_action_reason, performance_reasons
from mlops.monitoring.drift_result import DriftResult, FeatureDrift
from mlops.monitoring.drift_settings import DriftSettings
from mlops.monitoring.performance_estimate import realised_performance
from mlops.monitoring.request_window import WindowSummary, empty_summary
from tests.mlops.monitoring.drift_judge_clock import NOW

# --- reasons ------------------------------------------------------------------------------------------


def feature(name: str, drifted: bool) -> FeatureDrift:
    return FeatureDrift(name, "numeric", "ks", 0.01 if drifted else 0.5, 0.05, drifted, 0.0, 0.0)


def result(**values: object) -> DriftResult:
    base: dict[str, object] = {
        "model_name": "m",
        "version": "3",
        "start": "s",
        "end": "e",
        "rows": 100,
        "files": 1,
        "features": [feature("income", True), feature("age", False), feature("debt", True)],
        "share_drifted": 2 / 3,
        "dataset_drift": True,
        "prediction_score": 0.1234,
        "prediction_drift": True,
        "estimated": {},
        "reference_metrics": {},
        "prediction": {"method": "wasserstein"},
    }
    return DriftResult(**{**base, **values})  # type: ignore[arg-type]


def test_drift_reasons_name_the_share_the_distance_and_the_drifted_features() -> None:
    assert drift_reasons(result(), DriftSettings(prediction_threshold=0.12)) == [
        "dataset drift: 67% of features drifted (>= 50%): income, debt",
        "prediction drift: score distance 0.123 >= 0.12 (drifted features: income, debt)",
    ]


def test_a_ks_prediction_drift_names_its_p_value_and_sizes() -> None:
    prediction = {
        "method": "ks",
        "p_value": 0.001234,
        "threshold": 0.05,
        "reference_rows": 78,
        "window_rows": 90,
    }
    reasons = drift_reasons(result(dataset_drift=False, prediction=prediction), DriftSettings())
    assert reasons == [
        "prediction drift: scores' KS p-value 0.00123 < 0.05 (78 reference, 90 window scores) (drifted features: "
        "income, debt)"
    ]


def test_prediction_drift_is_no_reason_when_switched_off_and_no_drift_names_none() -> None:
    assert drift_reasons(result(), DriftSettings(trigger_on_prediction_drift=False)) == [
        "dataset drift: 67% of features drifted (>= 50%): income, debt"
    ]
    calm = result(features=[feature("age", False)], dataset_drift=False, prediction_drift=True)
    assert drift_reasons(calm, DriftSettings())[0].endswith("(drifted features: none)")
    assert drift_reasons(result(dataset_drift=False, prediction_drift=False), DriftSettings()) == []


BANDS = {"value": 0.8, "low": 0.75, "high": 0.85}


def test_an_estimated_drop_leaving_the_versions_test_band_is_a_reason() -> None:
    dropped = result(
        reference_bands={"roc_auc": BANDS},
        estimated_bands={"roc_auc": {"value": 0.7, "low": 0.65, "high": 0.7499}},
    )
    assert performance_reasons(dropped, DriftSettings()) == [
        "estimated roc_auc drop 0.100: label-free estimate 0.700 [0.650, 0.750] below version 3's test 0.800 "
        "[0.750, 0.850] (95% bands); drifted features: income, debt"
    ]
    touching = result(
        reference_bands={"roc_auc": BANDS},
        estimated_bands={"roc_auc": {"value": 0.7, "low": 0.65, "high": 0.75}},
    )
    assert performance_reasons(touching, DriftSettings()) == []
    assert performance_reasons(result(estimated_bands={"roc_auc": BANDS}), DriftSettings()) == []


def test_a_realised_drop_needs_enough_labelled_rows_and_says_when_the_estimate_missed_it() -> None:
    realised = {"value": 0.6, "low": 0.55, "high": 0.65}
    calm = [feature("age", False)]
    few = result(
        features=calm,
        reference_bands={"accuracy": BANDS},
        realised_bands={"accuracy": realised},
        realised={"labelled_rows": 99.0},
    )
    settings = DriftSettings(performance_metric="accuracy", confidence=0.9)
    assert performance_reasons(few, settings) == []
    unlabelled = result(
        features=calm, reference_bands={"accuracy": BANDS}, realised_bands={"accuracy": realised}
    )
    assert performance_reasons(unlabelled, settings.model_copy(update={"min_labelled_rows": 1})) == []
    enough = result(
        features=calm,
        reference_bands={"accuracy": BANDS},
        realised_bands={"accuracy": realised},
        realised={"labelled_rows": 100.0},
        estimated_bands={"accuracy": {"value": 0.79, "low": 0.76, "high": 0.82}},
    )
    assert performance_reasons(enough, settings) == [
        "realised accuracy drop 0.200 on 100 labelled rows: 0.600 [0.550, 0.650] below version 3's test "
        "0.800 [0.750, 0.850] (90% bands); the label-free estimate 0.790 [0.760, 0.820] cannot see this drop: "
        "the scores did not move, the relation between features and label did; no feature drifted past its "
        "threshold: the shift moves rows where the model is less certain"
    ]
    enough.estimated_bands = {}
    assert "; the label-free estimate (none) cannot see this drop" in performance_reasons(enough, settings)[0]


def test_both_drops_are_reasons_the_estimate_first() -> None:
    both = result(
        reference_bands={"roc_auc": BANDS},
        estimated_bands={"roc_auc": {"value": 0.7, "low": 0.65, "high": 0.7}},
        realised_bands={"roc_auc": {"value": 0.6, "low": 0.55, "high": 0.65}},
        realised={"labelled_rows": 500.0},
    )
    estimated, realised = performance_reasons(both, DriftSettings())
    assert estimated.startswith("estimated roc_auc drop 0.100")
    assert realised == (
        "realised roc_auc drop 0.200 on 500 labelled rows: 0.600 [0.550, 0.650] below version 3's test 0.800 "
        "[0.750, 0.850] (95% bands); drifted features: income, debt"
    )


def test_no_action_says_why_with_the_estimate_against_the_versions_test() -> None:
    calm = result(
        features=[feature("age", False), feature("income", True)],
        share_drifted=0.5,
        reference_bands={"roc_auc": BANDS},
        estimated_bands={"roc_auc": {"value": 0.79, "low": 0.76, "high": 0.82}},
    )
    assert no_action_reason(calm, DriftSettings(share=0.75), []) == (
        "no drift: 50% of features drifted (< 75%: income), prediction distance 0.123; estimated roc_auc 0.790 "
        "[0.760, 0.820] vs version 3's test 0.800 [0.750, 0.850]"
    )
    assert no_action_reason(
        result(), DriftSettings(trigger="performance"), ["dataset drift: x", "prediction drift: y"]
    ) == (
        "no retraining: drift without a performance drop (dataset drift: x; prediction drift: y), no roc_auc "
        "estimate (drift.trigger performance)"
    )


def test_the_headline_is_the_leading_reason_and_the_report_carries_it() -> None:
    judged = result(decision="retrain", reasons=["first", "second"])
    assert judged.headline == "retrain: first"
    assert result(decision="none", reasons=[]).headline == "none"
    report = judged.as_dict()
    assert report["headline"] == "retrain: first" and report["drifted_features"] == ["income", "debt"]
    assert report["decision"] == "retrain" and report["features"][0]["name"] == "income"


# --- judge ----------------------------------------------------------------------------------------------


def window_of(shift: float) -> tuple[ReferenceProfile, WindowSummary]:
    """A 2-feature profile of 4000 reference rows and a 3000-row window shifted by ``shift`` (large samples)."""
    rng = np.random.default_rng(11)
    income, age = rng.normal(0, 1, 4000), rng.normal(0, 1, 4000)
    scores = rng.uniform(0, 1, 4000)
    profile = ReferenceProfile(
        created_at="x",
        rows=4000,
        numeric=(numeric_profile("income", income), numeric_profile("age", age)),
        categorical=(
            CategoricalProfile(
                name="region", categories=("a", "b"), counts=(2000, 2000), rows=4000, missing=0
            ),
        ),
        score=numeric_profile("prediction", scores),
        metrics={"roc_auc": 0.8, "accuracy": 0.8, "positive_rate": 0.5},
    )
    summary = empty_summary(profile, NOW - timedelta(days=1), NOW, "3")
    summary.numeric[0].add(rng.normal(shift, 1, 3000))
    summary.numeric[1].add(rng.normal(shift, 1, 3000))
    summary.categorical[0].counts = {"a": 1500, "b": 1500} if shift == 0 else {"a": 2900, "b": 100}
    summary.categorical[0].rows = 3000
    window_scores = rng.uniform(0, 1, 3000)
    summary.labelled = [(window_scores[:200], (rng.uniform(0, 1, 200) < window_scores[:200]).astype(int))]
    summary.score.add(window_scores)
    summary.estimate.add(window_scores, window_scores)
    summary.rows, summary.files, summary.other_versions = 3000, 2, {"2": 7}
    summary.summarised_rows, summary.summarised_days = 100, ["2026-11-22"]
    return profile, summary


LARGE = DriftSettings(small_sample_rows=100)


def test_a_calm_window_asks_for_nothing_and_says_why() -> None:
    from mlops.monitoring.judge import judge

    profile, summary = window_of(0.0)
    judged = judge("m", profile, summary, LARGE)
    assert (judged.decision, judged.drifted_features, judged.dataset_drift) == ("none", [], False)
    assert judged.prediction_drift is False and [f.name for f in judged.features] == [
        "income",
        "age",
        "region",
    ]
    assert (
        judged.realised == realised_performance(summary.labelled) and judged.realised["labelled_rows"] == 200
    )
    assert set(judged.realised_bands) == {"accuracy", "roc_auc"}
    assert judged.reasons[0].startswith(
        "no drift: 0% of features drifted (< 50%: none), prediction distance "
    )
    assert (judged.model_name, judged.version, judged.rows, judged.files) == ("m", "3", 3000, 2)
    assert (judged.start, judged.end) == ((NOW - timedelta(days=1)).isoformat(), NOW.isoformat())
    assert judged.other_versions == {"2": 7} and judged.trigger == "both"
    assert (judged.rows_from_summaries, judged.summary_days) == (100, ["2026-11-22"])
    assert judged.reference_metrics == profile.metrics
    assert set(judged.reference_bands) == {"accuracy", "roc_auc"} and judged.findings == []
    from mlops.monitoring.performance_bands import estimated_bands

    bands = estimated_bands(
        summary.estimate,
        judged.estimated,
        profile.calibration,
        profile.score,
        LARGE.confidence,
        LARGE.bootstrap_samples,
    )
    assert judged.estimated_bands == {name: band.as_dict() for name, band in bands.items()} != {}
    assert (
        judged.prediction["method"] == "wasserstein" and judged.prediction_score == judged.prediction["score"]
    )


@pytest.mark.parametrize(
    ("trigger", "decision"), [("both", "retrain"), ("drift", "retrain"), ("performance", "none")]
)
def test_a_drifted_window_retrains_unless_only_performance_may_trigger(trigger, decision) -> None:
    from mlops.monitoring.judge import judge

    profile, summary = window_of(2.0)
    judged = judge("m", profile, summary, LARGE.model_copy(update={"trigger": trigger}))
    assert (
        judged.drifted_features == ["income", "age", "region"]
        and judged.share_drifted == 1.0
        and judged.dataset_drift
    )
    assert judged.decision == decision and judged.trigger == trigger
    if decision == "retrain":
        assert judged.reasons[0] == "dataset drift: 100% of features drifted (>= 50%): income, age, region"
    else:
        assert judged.reasons[0].startswith(
            "no retraining: drift without a performance drop (dataset drift: 100%"
        )
        assert judged.reasons[0].endswith("(drift.trigger performance)")


@pytest.mark.parametrize(
    ("trigger", "reasons"),
    [("both", ["drop", "dataset drift"]), ("drift", ["dataset drift"]), ("performance", ["drop"])],
)
def test_a_performance_drop_leads_the_reasons_when_it_may_trigger(monkeypatch, trigger, reasons) -> None:
    from mlops.monitoring import judge as judging

    monkeypatch.setattr(judging, "performance_reasons", lambda result, settings: ["drop"])
    profile, summary = window_of(2.0)
    judged = judging.judge("m", profile, summary, LARGE.model_copy(update={"trigger": trigger}))
    assert [r.split(":")[0] for r in judged.reasons] == reasons
    assert judged.performance_drop and judged.decision == "retrain"


def test_groups_named_without_a_gate_report_are_a_finding_not_a_reason() -> None:
    import pandas as pd

    from mlops.monitoring.judge import judge

    profile, summary = window_of(0.0)
    summary.grouped = [pd.DataFrame({"prediction": [0.5], "label": [1], "sex": ["f"]})]
    judged = judge("m", profile, summary, LARGE)
    assert judged.findings == [
        "bias drift not checked: feedback named protected groups, but the version has no model-validation report "
        "to compare with"
    ]
    assert judged.decision == "none" and judged.bias == []


def test_the_prediction_line_names_the_method_that_decided() -> None:
    from mlops.monitoring.drift_reasons import prediction_text

    ks = {"method": "ks", "p_value": 0.0312, "threshold": 0.05, "reference_rows": 78, "window_rows": 300}
    assert prediction_text(ks, 0.2) == "KS p-value 0.0312 (< 0.05; 78 reference, 300 window scores)"
    assert prediction_text({**ks, "p_value": 0.05}, 0.2) == (
        "KS p-value 0.05 (>= 0.05; 78 reference, 300 window scores)"  # at the threshold: no drift
    )
    distance = {"method": "wasserstein", "threshold": 0.1}
    assert prediction_text(distance, 0.1) == "distance 0.1 (>= 0.1)"  # at the threshold: drift
    assert prediction_text(distance, 0.0999) == "distance 0.0999 (< 0.1)"
    assert prediction_text({}, 0.0594) == "distance 0.0594"  # a report from before the method was recorded


def grouped_feedback() -> list:
    """Feedback naming ``sex``: 40 rows of group f selected 90 % of the time, 40 of m selected half the time."""
    import pandas as pd

    rng = np.random.default_rng(5)
    f_scores = np.where(np.arange(40) < 36, 0.9, 0.1)
    m_scores = np.where(np.arange(40) < 20, 0.9, 0.1)
    frame = pd.DataFrame(
        {
            "sex": ["f"] * 40 + ["m"] * 40,
            "prediction": np.concatenate([f_scores, m_scores]),
            "label": rng.integers(0, 2, 80),
        }
    )
    return [frame.iloc[:50], frame.iloc[50:]]  # two days' feedback, concatenated by the check


def test_bias_is_judged_against_the_gate_with_the_settings_and_never_retrains() -> None:
    from mlops.monitoring.bias_drift import GateReference, bias_figures
    from mlops.monitoring.judge import judge

    gate = GateReference({"sex": {"f": 0.5, "m": 0.5}}, {"sex": 0.0}, {"income": 0.1})
    profile, summary = window_of(0.0)
    summary.grouped = grouped_feedback()
    settings = LARGE.model_copy(update={"bias_tolerance": 0.1, "bias_min_group_rows": 40, "confidence": 0.9})
    judged = judge("m", profile, summary, settings, gate)
    figures, breaches = bias_figures(summary.grouped, gate, 0.1, 40, 0.9)
    assert judged.bias == figures and judged.findings == breaches
    assert [f for f in judged.findings if f.startswith("bias drift: sex=f selection rate 0.900")], (
        judged.findings
    )
    assert not [f for f in judged.findings if "sex=m" in f]  # 0.5 as the gate saw it
    assert "(tolerance 0.1)" in judged.findings[0]
    assert judged.decision == "none"  # a finding for people, not a retraining
    # each setting reaches the figures: one more row than a group has turns its breach off
    fewer = judge("m", profile, summary, settings.model_copy(update={"bias_min_group_rows": 41}), gate)
    assert not [f for f in fewer.findings if f.startswith("bias drift: sex=f selection rate")]
    wide = judge("m", profile, summary, settings.model_copy(update={"bias_tolerance": 0.3}), gate)
    assert not [f for f in wide.findings if f.startswith("bias drift: sex=f selection rate")]
    assert wide.bias != judged.bias or wide.findings != judged.findings
    strict = judge("m", profile, summary, settings.model_copy(update={"confidence": 0.99}), gate)
    assert strict.bias != judged.bias  # the bands widen with the confidence


def test_bias_without_a_gate_report_is_a_finding_that_says_why_and_no_feedback_is_no_finding() -> None:
    from mlops.monitoring.bias_drift import GateReference
    from mlops.monitoring.judge import judge

    profile, summary = window_of(0.0)
    assert judge("m", profile, summary, LARGE).findings == []  # no grouped feedback: nothing to say
    gate = GateReference({"sex": {"f": 0.5}}, {"sex": 0.0}, {})
    with_gate = judge("m", profile, summary, LARGE, gate)  # a gate report, but no feedback named groups
    assert (with_gate.bias, with_gate.findings) == ([], [])
    summary.grouped = grouped_feedback()
    judged = judge("m", profile, summary, LARGE)
    assert judged.bias == [] and judged.findings == [
        "bias drift not checked: feedback named protected groups, but the version has no model-validation "
        "report to compare with"
    ]
    assert judged.decision == "none"
