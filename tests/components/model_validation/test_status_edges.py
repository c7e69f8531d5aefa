"""Three states at their edges: a check passes, fails or is not conclusive, never a green pass for
what the rows could not decide; and the policy decides which undecided checks may let a model through."""

from __future__ import annotations

import math

import numpy as np
import pytest

from components.model_validation.checks import limit_status
from components.model_validation.config import FairnessPolicy, ValidationConfig
from components.model_validation.explainability import ExplainabilityResult, Stability
from components.model_validation.fairness import AttributeFairness, evaluate_fairness
from components.model_validation.gate_report import render_html, to_json
from components.model_validation.gate_result import GATE, ModelValidationResult
from components.model_validation.intervals import gap_interval, rate_interval
from components.model_validation.score_summary import summarise_scores
from components.model_validation.validation_gate import decide
from mlops.governance.report_charts import group_label
from tests.support.gate_inputs import confusion_group, scored_groups


def below(value: float) -> float:
    return float(np.nextafter(value, -math.inf))


def above(value: float) -> float:
    return float(np.nextafter(value, math.inf))


# --- limit_status: every comparison at its edge ---

LIMIT = 0.1


@pytest.mark.parametrize(
    ("interval", "status"),
    [
        ((0.05, LIMIT), "pass"),  # the whole interval within (the limit itself allowed)
        ((0.05, above(LIMIT)), "not_conclusive"),  # reaches just across
        ((LIMIT, 0.3), "not_conclusive"),  # starts at the limit: not wholly beyond
        ((above(LIMIT), 0.3), "fail"),  # wholly beyond
    ],
)
def test_a_max_limit_on_the_interval(interval: tuple[float, float], status: str) -> None:
    value = (interval[0] + interval[1]) / 2
    assert limit_status(value, interval, LIMIT, "max", on_interval=True) == status


@pytest.mark.parametrize(
    ("interval", "status"),
    [
        ((0.8, 0.95), "pass"),
        ((below(0.8), 0.95), "not_conclusive"),
        ((0.7, 0.8), "not_conclusive"),
        ((0.7, below(0.8)), "fail"),
    ],
)
def test_a_min_limit_on_the_interval(interval: tuple[float, float], status: str) -> None:
    value = (interval[0] + interval[1]) / 2
    assert limit_status(value, interval, 0.8, "min", on_interval=True) == status


def test_the_interval_decides_whichever_side_the_estimate_lies() -> None:
    # The case: a 0.22 gap against 0.1 whose interval reaches back under 0.1 is not a pass.
    assert limit_status(0.22, (0.05, 0.39), LIMIT, "max", on_interval=True) == "not_conclusive"
    assert limit_status(0.04, (0.0, 0.13), LIMIT, "max", on_interval=True) == "not_conclusive"


@pytest.mark.parametrize(
    ("value", "bound", "status"),
    [
        (LIMIT, "max", "pass"),
        (above(LIMIT), "max", "fail"),
        (LIMIT, "min", "pass"),
        (below(LIMIT), "min", "fail"),
    ],
)
def test_point_estimates_decide_without_intervals(value: float, bound: str, status: str) -> None:
    assert limit_status(value, (0.0, 1.0), LIMIT, bound, on_interval=False) == status  # type: ignore[arg-type]


@pytest.mark.parametrize("on_interval", [True, False])
def test_an_undefined_value_or_interval_is_never_a_pass(on_interval: bool) -> None:
    assert limit_status(math.nan, (0.0, 0.05), LIMIT, "max", on_interval) == "not_conclusive"
    assert limit_status(math.nan, None, LIMIT, "min", on_interval) == "not_conclusive"
    if on_interval:
        assert limit_status(0.05, None, LIMIT, "max", on_interval) == "not_conclusive"
        assert limit_status(0.05, (math.nan, math.nan), LIMIT, "max", on_interval) == "not_conclusive"


# --- through the fairness check: a parity difference at each edge of its interval ---

SURE = confusion_group(tp=16, fn=0, fp=16, tn=0)  # selection rate 1
HALF = confusion_group(tp=8, fn=8, fp=8, tn=8)  # selection rate 0.5: a parity difference of 0.5
LOW, HIGH = (float(x) for x in gap_interval(np.array([32, 16]), np.array([32, 32]), 0.9))


def _parity(limit: float, gate_on_intervals: bool = True) -> AttributeFairness:
    frame, scores = scored_groups({"a": SURE, "b": HALF})
    policy = FairnessPolicy(
        max_demographic_parity_difference=limit,
        min_demographic_parity_ratio=0.0,
        max_equalized_odds_difference=1.0,
        min_group_size=32,
        min_group_positives=1,
        min_group_negatives=1,
        gate_on_intervals=gate_on_intervals,
        confidence=0.9,
        favourable_outcome="positive",
    )
    (result,) = evaluate_fairness(frame, scores, "y", ["g"], policy)
    return result


@pytest.mark.parametrize(
    ("limit", "status", "outside"),
    [
        (HIGH, "pass", False),  # just inside: the interval's top at the limit
        (below(HIGH), "not_conclusive", False),  # just outside: the top across it, the estimate within
        (LOW, "not_conclusive", True),  # the estimate beyond, the interval's bottom at the limit
        (below(LOW), "fail", False),  # the whole interval beyond
    ],
)
def test_a_parity_difference_at_each_edge(limit: float, status: str, outside: bool) -> None:
    assert 0.0 < LOW < 0.5 < HIGH < 1.0
    result = _parity(limit)
    assert result.demographic_parity_difference == 0.5
    assert result.status("demographic_parity_difference") == status
    assert bool(result.violations) == (status == "fail")
    assert bool(result.undecided) == (status == "not_conclusive")
    assert bool(result.undecided_outside) == outside
    if status == "not_conclusive":
        (message,) = result.undecided
        side = "beyond" if outside else "within"
        assert message == (
            f"g demographic_parity_difference 0.5000 is {side} the max {limit:.4f}, but its 90% interval "
            f"{LOW:.4f}..{HIGH:.4f} reaches across it: not conclusive on these rows; test on more rows to decide"
        )


@pytest.mark.parametrize(("limit", "status"), [(0.5, "pass"), (below(0.5), "fail")])
def test_point_estimates_through_the_fairness_check(limit: float, status: str) -> None:
    result = _parity(limit, gate_on_intervals=False)
    assert result.status("demographic_parity_difference") == status and result.undecided == ()


def test_an_attribute_without_two_groups_to_compare_is_not_conclusive_and_holds_by_default() -> None:
    frame, scores = scored_groups({"a": SURE, "b": confusion_group(tp=1, fn=0, fp=1, tn=0)})
    (result,) = evaluate_fairness(frame, scores, "y", ["g"], FairnessPolicy(min_group_size=30))
    assert math.isnan(result.demographic_parity_difference)
    assert result.status("demographic_parity_difference") == "not_conclusive"
    assert any(u.startswith("g demographic_parity_difference not measured") for u in result.undecided_outside)
    decisions = decide([result], _explained(), [])
    assert decisions["fairness"].decision == "reject" and decisions["fairness"].status == "not_conclusive"


# --- the policy: which undecided checks may pass ---


def _explained() -> ExplainabilityResult:
    return ExplainabilityResult("method", 40, (), (), Stability(0.875, 0.75, 3, 0.5, 20), ())


WITHIN = "sex equalized_odds_difference 0.0400 is within the max 0.1000, but its 95% interval 0.0000..0.1300 reaches across it"
BEYOND = "race demographic_parity_difference 0.2200 is beyond the max 0.1000, but its 95% interval 0.0500..0.3900 reaches across it"


def _undecided(*, outside: bool) -> AttributeFairness:
    message = BEYOND if outside else WITHIN
    return AttributeFairness(
        "race" if outside else "sex",
        (),
        ("a", "b"),
        0.22 if outside else 0.02,
        0.9,
        0.04,
        {},
        (),
        (),
        undecided=(message,),
        undecided_outside=(message,) if outside else (),
    )


@pytest.mark.parametrize(
    ("policy", "outside", "promote"),
    [
        ("never", False, False),
        ("never", True, False),
        ("estimate_within_limit", False, True),
        ("estimate_within_limit", True, False),
        ("always", False, True),
        ("always", True, True),
    ],
)
def test_the_policy_decides_which_undecided_checks_pass(policy: str, outside: bool, promote: bool) -> None:
    decisions = decide([_undecided(outside=outside)], _explained(), [], pass_not_conclusive=policy)
    for name in ("fairness", GATE):
        assert decisions[name].promote == promote
        assert decisions[name].status == "not_conclusive"  # promoted or not, never a plain pass
        assert decisions[name].undecided == (BEYOND if outside else WITHIN,)
    reason = decisions[GATE].reason
    assert reason.startswith("not conclusive: " + (BEYOND if outside else WITHIN))
    if promote:
        assert (
            "passed as not conclusive, listed (model_validation.pass_not_conclusive lets them through)"
            in reason
        )
    else:
        assert (
            "not promoted: 1 of them may not pass undecided under model_validation.pass_not_conclusive"
            in reason
        )
    assert "thresholds met" not in reason


def test_the_default_policy_holds_a_measured_breach_and_passes_a_wide_interval_within() -> None:
    assert ValidationConfig().pass_not_conclusive == "estimate_within_limit"
    assert not decide([_undecided(outside=True)], _explained(), [])[GATE].promote
    assert decide([_undecided(outside=False)], _explained(), [])[GATE].promote


def test_a_violation_beside_an_undecided_check_fails_and_still_lists_it() -> None:
    from components.model_validation.checks import Violation

    unfair = Violation("fairness", "sex", "demographic_parity_difference", 0.3, 0.1, "max", "a vs b")
    failing = AttributeFairness("sex", (), ("a", "b"), 0.3, 0.7, 0.05, {}, (), (unfair,))
    decisions = decide([failing, _undecided(outside=False)], _explained(), [], pass_not_conclusive="always")
    assert decisions[GATE].status == "fail" and not decisions[GATE].promote
    assert decisions[GATE].undecided == (WITHIN,)


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="pass_not_conclusive 'sometimes'"):
        decide([_undecided(outside=False)], _explained(), [], pass_not_conclusive="sometimes")


# --- the report shows the third state, never a green pass ---


def _result(attribute: AttributeFairness, policy: str = "estimate_within_limit") -> ModelValidationResult:
    config = ValidationConfig(pass_not_conclusive=policy)  # type: ignore[arg-type]
    return ModelValidationResult(
        label="y",
        protected_attributes=(attribute.attribute,),
        n_rows=64,
        config=config,
        fairness=(attribute,),
        explainability=_explained(),
        behavioural=(),
        decisions=decide([attribute], _explained(), [], pass_not_conclusive=policy),
    )


def test_the_report_marks_an_undecided_disparity_not_conclusive_and_lists_it() -> None:
    result = _result(_parity(LOW))  # the estimate 0.5 beyond its limit, the interval reaching back
    html = render_html(result, "credit", "3")
    row = html.split("<td>demographic_parity_difference</td>", 1)[1].split("</tr>", 1)[0]
    assert '<span class="not_conclusive">not conclusive</span>' in row
    assert 'class="pass"' not in row
    assert '<span class="badge reject">REJECT</span> <span class="badge status-not_conclusive">' in html
    assert "<h2>Not conclusive</h2><p>1 check(s) not decided" in html
    report = to_json(result, "credit", "3")
    assert report["status"] == "not_conclusive" and report["decision"] == "reject"
    assert report["fairness"][0]["statuses"]["demographic_parity_difference"] == "not_conclusive"
    assert report["undecided"] == list(result.fairness[0].undecided)


def test_the_report_json_lists_every_limit_with_its_default_and_source() -> None:
    config = ValidationConfig.model_validate({"fairness": {"max_demographic_parity_difference": 0.25}})
    result = ModelValidationResult(
        "y", (), 10, config, (), _explained(), (), decisions=decide([], _explained(), [])
    )
    limits = {limit["address"]: limit for limit in to_json(result, "m", "1")["limits"]}
    assert limits["model_validation.fairness.max_demographic_parity_difference"] == {
        "address": "model_validation.fairness.max_demographic_parity_difference",
        "value": 0.25,
        "default": 0.1,
        "source": "changed for this run",
    }
    assert limits["model_validation.fairness.min_demographic_parity_ratio"]["source"] == "default"
    assert limits["model_validation.pass_not_conclusive"]["value"] == "estimate_within_limit"


# --- charts: "too small" only for a group that decided nothing ---


def test_a_group_is_labelled_too_small_only_when_it_decided_nothing() -> None:
    every = ("selection_rate", "true_positive_rate", "false_positive_rate")
    assert group_label({"group": "x", "size": 5, "undecided": every}) == "x (n=5, too small: decided nothing)"
    # Its selection rate decided (a failure, say); only its TPR was too few positives.
    assert (
        group_label({"group": "black", "size": 400, "undecided": ("true_positive_rate",)})
        == "black (n=400; TPR not decided on, hatched)"
    )
    assert group_label({"group": "y", "size": 40, "undecided": every[:2]}) == (
        "y (n=40; selection rate, TPR not decided on, hatched)"
    )
    assert group_label({"group": "z", "size": 400, "undecided": ()}) == "z (n=400)"


def test_each_group_carries_the_interval_of_each_rate_it_has() -> None:
    result = _parity(0.5)
    a, b = result.groups
    assert a.intervals["selection_rate"] == rate_interval(32, 32, 0.9)
    assert b.intervals["selection_rate"] == rate_interval(16, 32, 0.9)
    low, high = b.intervals["true_positive_rate"]
    assert low < b.true_positive_rate == 0.5 < high
    assert set(a.intervals) == {
        "selection_rate",
        "favourable_rate",
        "true_positive_rate",
        "false_positive_rate",
    }


def test_the_score_summary_counts_every_row_and_measures_calibration() -> None:
    y = np.array([0, 0, 1, 1, 1, 0, 1, 1])
    scores = np.array([0.05, 0.15, 0.15, 0.55, 0.95, 0.95, 1.0, 0.55])
    summary = summarise_scores(y, scores, 0.5, 0.95)
    assert sum(summary.negatives) == 3 and sum(summary.positives) == 5
    assert [b.rows for b in summary.calibration] == [1, 2, 2, 3]
    bin_05 = summary.calibration[2]
    assert (bin_05.low, bin_05.high, bin_05.observed_rate, bin_05.mean_score) == (0.5, 0.6, 1.0, 0.55)
    assert summary.calibration[-1].rows == 3  # 1.0 falls in the last bin, not past it
    expected = (1 * 0.05 + 2 * abs(0.5 - 0.15) + 2 * 0.45 + 3 * abs(2 / 3 - (0.95 + 0.95 + 1.0) / 3)) / 8
    assert summary.expected_calibration_error == pytest.approx(expected)
    with pytest.raises(ValueError, match="got 1 scores for 2 labels"):
        summarise_scores(np.array([0, 1]), np.array([0.5]), 0.5, 0.95)


def test_an_estimate_exactly_at_its_limit_counts_as_within_it() -> None:
    # 0.5 at a max of 0.5 (and a ratio of 0.5 at a min of 0.5), each interval reaching across the limit:
    # not conclusive, and within the limit, so the default policy lets the model through, listed.
    at_max = _parity(0.5)
    assert at_max.status("demographic_parity_difference") == "not_conclusive"
    assert at_max.undecided_outside == ()
    frame, scores = scored_groups({"a": SURE, "b": HALF})
    policy = FairnessPolicy(
        max_demographic_parity_difference=1.0,
        min_demographic_parity_ratio=0.5,
        max_equalized_odds_difference=1.0,
        min_group_size=32,
        confidence=0.9,
        favourable_outcome="positive",
        min_group_positives=1,
        min_group_negatives=1,
    )
    (at_min,) = evaluate_fairness(frame, scores, "y", ["g"], policy)
    assert at_min.demographic_parity_ratio == 0.5
    assert at_min.status("demographic_parity_ratio") == "not_conclusive"
    assert at_min.undecided_outside == ()
    assert decide([at_max], _explained(), [])[GATE].promote
    assert decide([at_min], _explained(), [])[GATE].promote
