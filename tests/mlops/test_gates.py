"""The gate decision type and ``combine``: one rejecting gate of several rejects the whole."""

import pytest

from mlops.gates import OVERALL, PROMOTE, REJECT, Decision, combine


def _promote(gate: str) -> Decision:
    return Decision(gate, PROMOTE, f"{gate} ok", {f"{gate}.value": 1.0})


def _reject(gate: str, why: str) -> Decision:
    return Decision(gate, REJECT, why, {})


def test_every_gate_promoting_promotes_and_names_every_gate() -> None:
    verdict = combine([_promote("metrics"), _promote("model_validation"), _promote("int8")])
    assert verdict.decision == PROMOTE
    assert verdict.gate == OVERALL
    assert verdict.reason == "all gates passed: metrics, model_validation, int8"
    assert verdict.metrics == {}


def test_one_rejecting_gate_of_three_rejects_naming_only_that_gate_and_its_reason() -> None:
    verdict = combine(
        [_promote("metrics"), _reject("model_validation", "sex: dpd 0.2 > max 0.1"), _promote("int8")]
    )
    assert verdict.decision == REJECT
    assert verdict.gate == OVERALL
    assert verdict.reason == "model_validation gate: sex: dpd 0.2 > max 0.1"
    assert verdict.metrics == {}


def test_the_last_gate_rejecting_alone_still_rejects() -> None:
    verdict = combine([_promote("metrics"), _promote("model_validation"), _reject("int8", "drop")])
    assert not verdict.promote
    assert verdict.reason == "int8 gate: drop"


def test_several_rejecting_gates_are_all_named_in_order() -> None:
    verdict = combine(
        [_reject("metrics", "auc low"), _promote("int8"), _reject("model_validation", "unfair")]
    )
    assert verdict.reason == "metrics gate: auc low; model_validation gate: unfair"


def test_a_single_promoting_gate_promotes() -> None:
    assert combine([_promote("metrics")]).promote


def test_combine_without_decisions_is_an_error() -> None:
    with pytest.raises(ValueError, match="^combine needs at least one gate decision$"):
        combine([])


def test_a_decision_must_be_promote_or_reject() -> None:
    with pytest.raises(
        ValueError, match=r"gate 'metrics' returned \['accept'\]; expected 'promote' or 'reject'"
    ):
        Decision("metrics", "accept", "why")


def test_promote_property_reads_the_decision() -> None:
    assert _promote("metrics").promote is True
    assert _reject("metrics", "no").promote is False
