"""The groups, the policy and the check of the fairness edge tests (test_fairness_limits.py,
test_fairness_groups.py and test_fairness_intervals.py).

Groups are built from exact confusion-matrix counts over 32 rows, so every rate is a
multiple of 1/32 and every difference and ratio the gate compares is exact.
"""

import math

import numpy as np

from components.model_validation.config import FairnessPolicy
from components.model_validation.fairness import evaluate_fairness
from tests.support.gate_inputs import confusion_group, scored_groups

# selection 16/32 vs 12/32 -> demographic parity difference 0.125; favourable (0) rates 0.5 vs 0.625 -> ratio 0.8;
# TPR 0.5 vs 0.5, FPR 0.5 vs 0.25 -> equalised odds difference 0.25 (driven by FPR).
A = confusion_group(tp=8, fn=8, fp=8, tn=8)
B = confusion_group(tp=8, fn=8, fp=4, tn=12)
DPD, DPR, EOD = 0.125, 0.8, 0.25

OFF = {"max_demographic_parity_difference": 1.0, "min_demographic_parity_ratio": 0.0}
OFF_EOD = {"max_equalized_odds_difference": 1.0}


def below(value: float) -> float:
    return float(np.nextafter(value, -math.inf))


def above(value: float) -> float:
    return float(np.nextafter(value, math.inf))


def policy(**overrides: float) -> FairnessPolicy:
    """Point estimates gated (not intervals), groups of 32 rows and any group with a positive / a negative
    decided on, every limit off unless overridden."""
    base: dict[str, float] = {
        "min_group_size": 32,
        "min_group_positives": 1,
        "min_group_negatives": 1,
        "gate_on_intervals": False,
        **OFF,
        **OFF_EOD,
    }
    return FairnessPolicy(**{**base, **overrides})


def spread(violation) -> str:  # type: ignore[no-untyped-def]
    """The groups part of a violation's detail; the interval follows it after '; '."""
    head, interval = violation.detail.split("; ")
    assert interval.startswith("95% interval ")
    return str(head)


def check(groups: dict, fairness_policy: FairnessPolicy):  # type: ignore[no-untyped-def]
    frame, scores = scored_groups(groups)
    (result,) = evaluate_fairness(frame, scores, "y", ["g"], fairness_policy)
    return result
