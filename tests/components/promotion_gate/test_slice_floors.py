"""The slice-floor gate, pinned at its edges: the interval's upper bound against the floor, the minimum size."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from components.promotion_gate.config import MetricsGatePolicy
from components.promotion_gate.slice_floors import decide_slices, verdict
from mlops.gates import PROMOTE, REJECT, Decision

FLOOR = 0.6


def _slice(name: str, size: int, value: float | None, upper: float | None, note: str = "") -> dict[str, Any]:
    lower = None if value is None else value - 0.05
    return {
        "slice": name,
        "size": size,
        "metrics": {"roc_auc": {"value": value, "lower": lower, "upper": upper}},
        "note": note,
    }


def _policy(**values: Any) -> MetricsGatePolicy:
    return MetricsGatePolicy(slice_floors={"roc_auc": FLOOR}, slice_min_rows=50, **values)


def test_no_floor_means_no_slice_gate() -> None:
    assert decide_slices(MetricsGatePolicy(), {"slices": [_slice("a", 100, 0.1, 0.2)]}) is None


def test_upper_bound_at_the_floor_passes_just_below_rejects() -> None:
    at = decide_slices(_policy(), {"slices": [_slice("region=west", 100, 0.55, FLOOR)]})
    assert at is not None and at.decision == PROMOTE
    assert "region=west: roc_auc 0.5500 below 0.6000 but its interval reaches it" in at.reason
    below = decide_slices(_policy(), {"slices": [_slice("region=west", 100, 0.55, FLOOR - 1e-9)]})
    assert below is not None and below.decision == REJECT
    assert below.reason.startswith(
        "slice region=west (100 rows): roc_auc 0.5500 [0.5000, 0.6000] is below the floor"
    )
    above = decide_slices(_policy(), {"slices": [_slice("region=west", 100, 0.7, 0.8)]})
    assert above is not None and above.decision == PROMOTE and "1 slice(s) meet the floors" in above.reason


def test_slices_under_the_minimum_size_are_named_not_decided() -> None:
    at_min = decide_slices(_policy(), {"slices": [_slice("tiny", 50, 0.1, 0.2)]})
    assert at_min is not None and at_min.decision == REJECT  # 50 rows = the minimum: decided
    under = decide_slices(
        _policy(), {"slices": [_slice("tiny", 49, 0.1, 0.2), _slice("big", 500, 0.8, 0.85)]}
    )
    assert under is not None and under.decision == PROMOTE
    assert "too small to decide (< 50 rows): tiny (49 rows)" in under.reason


def test_undefined_metric_is_named_and_floors_without_slices_reject() -> None:
    noted = decide_slices(_policy(), {"slices": [_slice("one-class", 80, None, None, "one class only")]})
    assert noted is not None and "one-class: roc_auc undefined (one class only)" in noted.reason
    empty = decide_slices(_policy(), {})
    assert empty is not None and empty.decision == REJECT and "declare slices:" in empty.reason


def test_verdict_rejects_when_either_rejects() -> None:
    ok = Decision("metrics", PROMOTE, "auc fine", {})
    bad = Decision("metrics", REJECT, "auc low", {})
    slices_bad = Decision("slices", REJECT, "west low", {})
    assert verdict(ok, None) is ok and verdict(ok, Decision("slices", PROMOTE, "ok", {})) is ok
    assert verdict(ok, slices_bad).reason == "slice floors: west low"
    both = verdict(bad, slices_bad)
    assert both.decision == REJECT and both.reason == "auc low; slice floors: west low"


def test_floors_are_validated() -> None:
    with pytest.raises(ValidationError, match=r"unknown metric\(s\) \['auc'\]"):
        MetricsGatePolicy(slice_floors={"auc": 0.6})
    with pytest.raises(ValidationError, match="must lie in"):
        MetricsGatePolicy(slice_floors={"roc_auc": 1.5})
