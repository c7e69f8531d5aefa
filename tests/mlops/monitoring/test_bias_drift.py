"""Bias drift (selection rates, equalised-odds gap) and attribution drift, each decision at its edge."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mlops.monitoring.bias_drift import (
    attribution_drift,
    equalised_odds_gap,
    reference_from_gate_report,
    selection_rate_drift,
    shuffle_importance,
    wilson,
)


def test_a_group_whose_selection_rate_moved_beyond_noise_and_tolerance_is_a_breach() -> None:
    rng = np.random.default_rng(0)
    groups = np.array(["f"] * 4000 + ["m"] * 4000)
    scores = np.r_[rng.random(4000) < 0.40, rng.random(4000) < 0.20].astype(float)  # f now selected 40 %
    rates = {r.group: r for r in selection_rate_drift("sex", groups, scores, {"f": 0.21, "m": 0.21})}
    assert rates["f"].breach and not rates["m"].breach
    assert rates["f"].selection_rate == pytest.approx(0.40, abs=0.02) and rates["f"].rows == 4000


@pytest.mark.parametrize(("reference", "breach"), [(0.30, False), (0.2999, True)])
def test_the_breach_rule_at_its_edge(reference: float, breach: bool) -> None:
    """400 of 1000 selected: Wilson low ~0.3697; it breaches when that is above reference + tolerance."""
    groups, scores = np.array(["g"] * 1000), np.r_[np.ones(400), np.zeros(600)]
    low, _ = wilson(400, 1000, 0.95)
    tolerance = low - 0.30
    (rate,) = selection_rate_drift("a", groups, scores, {"g": reference}, tolerance=tolerance)
    assert rate.breach is breach


@pytest.mark.parametrize(("rows", "breach"), [(30, True), (29, False)])
def test_small_groups_are_reported_never_breached(rows: int, breach: bool) -> None:
    (rate,) = selection_rate_drift("a", np.array(["g"] * rows), np.ones(rows), {"g": 0.1}, min_group_rows=30)
    assert rate.selection_rate == 1.0 and rate.breach is breach


@pytest.mark.parametrize(("hits", "rows"), [(400, 1000), (0, 50), (50, 50), (3, 7)])
def test_the_wilson_interval_matches_scipys(hits: int, rows: int) -> None:
    from scipy.stats import binomtest

    expected = binomtest(hits, rows).proportion_ci(0.95, method="wilson")
    assert wilson(hits, rows, 0.95) == pytest.approx((expected.low, expected.high), abs=1e-12)


def test_the_equalised_odds_gap_against_the_gates_reference() -> None:
    rng = np.random.default_rng(1)
    n = 6000
    groups = np.where(rng.random(n) < 0.5, "a", "b")
    labels = (rng.random(n) < 0.3).astype(int)
    boost = np.where(groups == "a", 0.25, 0.0)  # group a's positives now found far more often
    scores = np.where(labels == 1, rng.random(n) + boost, rng.random(n) * 0.9)
    result = equalised_odds_gap("grp", groups, scores, labels, reference_gap=0.05)
    assert result.groups == ("a", "b") and result.gap == pytest.approx(0.25, abs=0.05)
    assert result.breach
    assert not equalised_odds_gap("grp", groups, scores, labels, reference_gap=result.gap - 0.05).breach
    assert equalised_odds_gap("grp", groups, scores, labels, reference_gap=result.gap - 0.0501).breach


def test_a_changed_ranking_is_attribution_drift_and_names_the_movers() -> None:
    reference = {"a": 0.5, "b": 0.3, "c": 0.1, "d": 0.05, "e": 0.01}
    same = attribution_drift({"a": 0.45, "b": 0.35, "c": 0.12, "d": 0.04, "e": 0.02}, reference)
    assert same.agreement == pytest.approx(1.0) and not same.changed
    swapped = attribution_drift({"a": 0.01, "b": 0.3, "c": 0.1, "d": 0.05, "e": 0.5}, reference)
    assert swapped.changed and swapped.movers[:2] == ["e", "a"]
    at_edge = attribution_drift({"a": 0.3, "b": 0.5, "c": 0.1, "d": 0.05, "e": 0.01}, reference)  # rho = 0.9
    assert at_edge.agreement == pytest.approx(0.9)
    assert not attribution_drift(at_edge.window, reference, min_agreement=0.9).changed
    assert attribution_drift(at_edge.window, reference, min_agreement=0.9 + 1e-6).changed
    with pytest.raises(ValueError, match="at least 3 features"):
        attribution_drift({"a": 1.0, "z": 2.0}, reference)


def test_shuffle_importance_ranks_the_features_a_score_uses() -> None:
    rng = np.random.default_rng(2)
    columns = {name: rng.normal(0, 1, 2000) for name in ("strong", "weak", "unused")}
    importance = shuffle_importance(lambda c: 2 * c["strong"] + 0.3 * c["weak"], columns)
    assert importance["strong"] > importance["weak"] > importance["unused"] == 0.0


def test_the_reference_figures_are_read_from_the_gates_own_report() -> None:
    """The model-validation gate runs on sample data; its report.json (as logged) gives the monitor's references."""
    from components.model_validation.config import ValidationConfig
    from components.model_validation.gate_report import to_json
    from components.model_validation.validation_gate import validate
    from mlops.data.features import FeatureSpec
    from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
    from tests.support.gate_inputs import stub_scorer

    test = generate(SampleDataConfig(rows=1500, seed=7, bias=1.0))
    spec = FeatureSpec.fit(test, SAMPLE_SCHEMA)
    column = spec.numeric.index("interest_rate")
    scorer = stub_scorer(spec, lambda x: 1 / (1 + np.exp(-3 * x[:, column])))
    result = validate(scorer, test, "default", ["sex"], ValidationConfig())
    report = json.loads(json.dumps(to_json(result, "m", "1")))  # through JSON, as the artifact is read back
    reference = reference_from_gate_report(report)
    (fairness,) = result.fairness
    assert reference.selection_rates["sex"] == {g.group: g.selection_rate for g in fairness.groups}
    assert reference.odds_gaps["sex"] == pytest.approx(fairness.equalized_odds_difference)
    assert max(reference.importance, key=reference.importance.get) == "interest_rate"  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a model-validation report.json"):
        reference_from_gate_report({"decision": "promote"})
