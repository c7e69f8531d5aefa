"""The leakage rules at, just inside and just outside each threshold.

Shares are counts of 8 or 16 rows and AUCs multiples of 1/64, so every figure is exact in binary and a
threshold can be met exactly; ``np.nextafter`` gives the closest float on the other side.
"""

from __future__ import annotations

import math
import shlex

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from components.promotion_gate.config import LeakagePolicy, MetricsGatePolicy
from components.promotion_gate.leakage import (
    COLUMN,
    GROUP,
    ONE_CLASS,
    Ablation,
    Finding,
    LeakageResult,
    ablate,
    ablation_findings,
    assess,
    decide,
    fix_text,
    one_class_findings,
    too_few_rows,
    verdict,
)
from mlops.gates import PROMOTE, REJECT, Decision


def below(value: float) -> float:
    return float(np.nextafter(value, -math.inf))


def above(value: float) -> float:
    return float(np.nextafter(value, math.inf))


# --- one_class: undefined for one class, defined for the other --------------------------------------
UNDEFINED = 0.875  # 7 of 8
DEFINED = 0.75  # 6 of 8
POLICY = LeakagePolicy(undefined_share=UNDEFINED, defined_share=DEFINED)


def _column(
    fillers_in_negatives: int, defined_in_positives: int, filler: object = None
) -> tuple[pd.DataFrame, np.ndarray]:
    """8 negative rows, ``fillers_in_negatives`` of them the filler (the rest 1..), and 8 positive rows,
    ``defined_in_positives`` of them a value other than the filler (the rest missing)."""
    negatives = [filler] * fillers_in_negatives + list(range(1, 9 - fillers_in_negatives))
    positives = list(range(10, 10 + defined_in_positives)) + [None] * (8 - defined_in_positives)
    frame = pd.DataFrame(
        {
            "r_days": pd.Series(
                negatives + positives,
                dtype="float64" if filler is None or isinstance(filler, int) else object,
            )
        }
    )
    return frame, np.array([0] * 8 + [1] * 8)


def test_a_column_undefined_at_the_share_and_defined_at_the_share_is_a_likely_leak() -> None:
    frame, labels = _column(7, 6)
    (finding,) = one_class_findings(frame, labels, ["r_days"], POLICY, ("no", "yes"))
    assert finding.rule == ONE_CLASS and finding.columns == ("r_days",)
    assert finding.detail.startswith(
        "r_days is missing in 87.5% of the 'no' rows and holds another value in 75.0% of the 'yes' ones"
    )
    assert "undefined_share 0.875, defined_share 0.75" in finding.detail


def test_one_filler_row_fewer_in_the_undefined_class_is_no_finding() -> None:
    frame, labels = _column(6, 8)  # 6 of 8 = 0.75 < 0.875, however defined the other class is
    assert one_class_findings(frame, labels, ["r_days"], POLICY) == []


def test_one_defined_row_fewer_in_the_other_class_is_no_finding() -> None:
    frame, labels = _column(8, 5)  # 5 of 8 = 0.625 < 0.75
    assert one_class_findings(frame, labels, ["r_days"], POLICY) == []


def test_the_shares_compare_exactly_with_the_thresholds() -> None:
    frame, labels = _column(7, 6)
    assert (
        one_class_findings(
            frame, labels, ["r_days"], POLICY.model_copy(update={"undefined_share": above(UNDEFINED)})
        )
        == []
    )
    assert (
        one_class_findings(
            frame, labels, ["r_days"], POLICY.model_copy(update={"defined_share": above(DEFINED)})
        )
        == []
    )
    assert one_class_findings(
        frame, labels, ["r_days"], POLICY.model_copy(update={"undefined_share": below(UNDEFINED)})
    )
    assert one_class_findings(
        frame, labels, ["r_days"], POLICY.model_copy(update={"defined_share": below(DEFINED)})
    )


def test_a_filler_value_counts_like_a_missing_one_and_the_other_class_may_be_the_undefined_one() -> None:
    # 0 for every positive, other values (some missing) for the negatives: defined only for the negatives.
    negatives = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, None, 0.0]  # 6 of 8 defined (a missing and a filler are not)
    frame = pd.DataFrame({"end": negatives + [0.0] * 8})
    labels = np.array([0] * 8 + [1] * 8)
    (finding,) = one_class_findings(frame, labels, ["end"], POLICY, ("no", "yes"))
    assert (
        "end is 0.0 in 100.0% of the 'yes' rows and holds another value in 75.0% of the 'no' ones"
        in finding.detail
    )
    frame.loc[5, "end"] = 0.0  # one defined row fewer: 5 of 8
    assert one_class_findings(frame, labels, ["end"], POLICY) == []


def test_a_text_column_and_a_column_filled_in_both_classes() -> None:
    frame = pd.DataFrame(
        {
            "r_charge_degree": [None] * 8 + ["(F3)", "(M1)"] * 4,
            "c_charge_degree": ["F", "M"] * 8,  # an honest column: varied in both classes
            "constant": ["x"] * 16,  # filled with one value in both classes: never defined anywhere
        }
    )
    labels = np.array([0] * 8 + [1] * 8)
    found = one_class_findings(frame, labels, list(frame.columns), POLICY)
    assert [f.columns for f in found] == [("r_charge_degree",)]


# --- too few rows: not conclusive -----------------------------------------------------------------
def test_the_checks_decide_from_min_class_rows_of_each_class() -> None:
    policy = LeakagePolicy(min_class_rows=4)
    assert too_few_rows(np.array([0] * 4 + [1] * 4), policy) == ""
    undecided = too_few_rows(np.array([0] * 9 + [1] * 3), policy)
    assert undecided.startswith("not conclusive: 3 positive and 9 negative test rows, fewer than")
    assert "gate.leakage.min_class_rows 4" in undecided
    assert too_few_rows(np.array([0] * 3 + [1] * 9), policy).startswith("not conclusive: 9 positive and 3")


def test_undecided_checks_reject_never_pass_silently() -> None:
    result = assess(
        lambda x: x[:, 0],
        np.zeros((5, 1)),
        pd.DataFrame({"a": [0.0] * 5}),
        np.array([0, 0, 0, 1, 1]),
        ["a"],
        LeakagePolicy(min_class_rows=3),
    )
    assert result.undecided and result.ablation is None and result.findings == ()
    decision = decide(LeakagePolicy(min_class_rows=3), result)
    assert decision.decision == REJECT and decision.gate == "leakage"
    assert decision.reason.startswith("not conclusive: 2 positive and 3 negative test rows")


# --- column: one column carries the model -----------------------------------------------------------
AUC = 0.875
COLUMN_DROP = 0.125


def _ablation(without: dict[str, float], auc: float = AUC, path=(), ranked=()) -> Ablation:  # type: ignore[no-untyped-def]
    return Ablation(auc, without, tuple(path), 400, tuple(ranked))


def test_a_column_whose_removal_costs_exactly_column_drop_is_a_likely_leak() -> None:
    policy = LeakagePolicy(column_drop=COLUMN_DROP)
    found = ablation_findings(_ablation({"duration": AUC - COLUMN_DROP, "age": 0.859375}), policy)
    assert [(f.rule, f.columns) for f in found] == [(COLUMN, ("duration",))]
    assert found[0].detail.startswith(
        "taking duration away lowers the test AUC from 0.8750 to 0.7500 (by 0.1250, at least gate.leakage.column_drop 0.125)"
    )


def test_a_column_whose_removal_costs_just_under_column_drop_is_not() -> None:
    policy = LeakagePolicy(column_drop=COLUMN_DROP)
    assert ablation_findings(_ablation({"duration": above(AUC - COLUMN_DROP)}), policy) == []
    assert (
        ablation_findings(
            _ablation({"duration": AUC - COLUMN_DROP}),
            policy.model_copy(update={"column_drop": above(COLUMN_DROP)}),
        )
        == []
    )


# --- group: a small group carries a too-good model ------------------------------------------------------
TOP = 0.984375  # 63/64
GROUP_MIN = 0.96875  # 62/64
GROUP_DROP = 0.25
GROUP_POLICY = LeakagePolicy(column_drop=0.5, group_min_auc=GROUP_MIN, group_drop=GROUP_DROP)
SPREAD = (
    (("is_recid",), 0.984375),
    (("is_recid", "event"), 0.96875),
    (("is_recid", "event", "end"), TOP - GROUP_DROP),
)


def test_a_group_whose_removal_costs_exactly_group_drop_is_a_likely_leak() -> None:
    found = ablation_findings(_ablation({"is_recid": TOP}, auc=TOP, path=SPREAD), GROUP_POLICY)
    ((rule, columns),) = [(f.rule, f.columns) for f in found]
    assert (rule, columns) == (GROUP, ("is_recid", "event", "end"))
    assert found[0].detail.startswith(
        "the test AUC 0.9844 (at least gate.leakage.group_min_auc 0.96875) falls to 0.7344 without the 3 column(s) is_recid, event, end (by 0.2500"
    )


def test_a_group_just_short_of_group_drop_is_not() -> None:
    path = (*SPREAD[:2], (SPREAD[2][0], above(TOP - GROUP_DROP)))
    assert ablation_findings(_ablation({"is_recid": TOP}, auc=TOP, path=path), GROUP_POLICY) == []


def test_the_group_rule_applies_from_group_min_auc_on() -> None:
    at = ((("a", "b"), GROUP_MIN - GROUP_DROP),)
    assert ablation_findings(_ablation({"a": GROUP_MIN}, auc=GROUP_MIN, path=at), GROUP_POLICY)
    just_under = ((("a", "b"), below(GROUP_MIN) - GROUP_DROP),)
    assert (
        ablation_findings(
            _ablation({"a": below(GROUP_MIN)}, auc=below(GROUP_MIN), path=just_under), GROUP_POLICY
        )
        == []
    )


def test_the_smallest_collapsing_group_is_named_from_either_path() -> None:
    greedy = ((("age",), TOP), (("age", "priors"), TOP), (("age", "priors", "is_recid"), 0.5))
    ranked = ((("is_recid",), TOP), (("is_recid", "event"), 0.5))
    (finding,) = ablation_findings(_ablation({"age": TOP}, auc=TOP, path=greedy, ranked=ranked), GROUP_POLICY)
    assert finding.columns == ("is_recid", "event")
    same_size = ((("age", "event"), 0.5),)
    (finding,) = ablation_findings(
        _ablation({"age": TOP}, auc=TOP, path=same_size, ranked=ranked), GROUP_POLICY
    )
    assert finding.columns == ("age", "event")  # a tie goes to the greedy path's group


# --- ablate: what is taken away, and how --------------------------------------------------------------
def _redundant(rows: int = 400, seed: int = 1) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Two honest columns first, then three copies of the label: any one copy stands in for the others."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(rows) < 0.5).astype(int)
    honest = labels[:, None] * 0.3 + rng.normal(0, 1, (rows, 2))
    copies = np.repeat(labels[:, None].astype(float), 3, axis=1)
    return np.hstack([honest, copies]), labels, ["h1", "h2", "c1", "c2", "c3"]


def _mean_of_copies(x: np.ndarray) -> np.ndarray:
    """The copies' mean: with one (or two) shuffled, the others still separate the classes."""
    return np.asarray(x[:, 2:].mean(axis=1) * 16 + (x[:, 0] + x[:, 1]) / 16)


def test_a_leak_spread_over_standing_in_columns_is_found_by_the_ranked_groups_not_one_column() -> None:
    x, labels, names = _redundant()
    policy = LeakagePolicy(max_group=3)
    ablation = ablate(_mean_of_copies, x, labels, names, policy, ranking=["c1", "c2", "c3", "h1", "h2"])
    assert ablation.auc > 0.99
    assert all(ablation.auc - auc < 0.05 for auc in ablation.without.values())  # no one column carries it
    # Taking any one or two columns away costs nothing: greedy follows the model's column order (honest
    # columns first) and its group of 3 still holds two copies.
    assert [group for group, _ in ablation.path] == [("h1",), ("h1", "h2"), ("h1", "h2", "c1")]
    assert ablation.path[-1][1] == 1.0
    assert ablation.ranked[-1][0] == ("c1", "c2", "c3") and ablation.ranked[-1][1] < 0.7
    found = ablation_findings(ablation, policy)
    assert [(f.rule, f.columns) for f in found] == [(GROUP, ("c1", "c2"))]  # the smallest that collapses it
    # Without the ranking, the greedy groups of 3 take the honest columns first and miss it.
    assert ablation_findings(ablate(_mean_of_copies, x, labels, names, policy), policy) == []


def test_acknowledged_columns_are_never_taken_away_and_max_rows_samples_the_rows() -> None:
    x, labels, names = _redundant()
    policy = LeakagePolicy(max_group=5, max_rows=100)
    ablation = ablate(_mean_of_copies, x, labels, names, policy, keep=["c3"], ranking=["c1", "c2", "c3"])
    assert "c3" not in ablation.without and all(
        "c3" not in group for group, _ in (*ablation.path, *ablation.ranked)
    )
    assert ablation.rows == 100
    assert ablation == ablate(
        _mean_of_copies, x, labels, names, policy, keep=["c3"], ranking=["c1", "c2", "c3"]
    )


def test_assess_leaves_acknowledged_columns_unblamed() -> None:
    frame = pd.DataFrame({"r_days": [None] * 20 + [1.0] * 20, "h": np.arange(40.0)})
    labels = np.array([0] * 20 + [1] * 20)
    x = frame.fillna(0.0).to_numpy()
    score = lambda m: m[:, 0]  # noqa: E731 - the model reads r_days alone
    blamed = assess(score, x, frame, labels, ["r_days", "h"], LeakagePolicy(min_class_rows=20))
    assert set(blamed.columns) == {"r_days"} and {f.rule for f in blamed.findings} == {
        ONE_CLASS,
        COLUMN,
        GROUP,
    }
    assert (
        assess(score, x, frame, labels, ["r_days", "h"], LeakagePolicy(), allowed=["r_days"]).findings == ()
    )


# --- the decision and its fix ---------------------------------------------------------------------------
FINDINGS = (
    Finding(ONE_CLASS, ("r_days",), "r_days is missing …"),
    Finding(COLUMN, ("end",), "taking end away …"),
    Finding(GROUP, ("end", "is_recid"), "the test AUC …"),
)


def test_a_likely_leak_rejects_naming_the_columns_and_both_fixes_to_paste() -> None:
    result = LeakageResult(FINDINGS, _ablation({"end": 0.5}, auc=0.9990234375))
    decision = decide(LeakagePolicy(), result, ignored=("id", "name"), allowed=("decile_score",))
    assert decision.decision == REJECT and decision.gate == "leakage"
    assert decision.reason.startswith(
        "likely leak in column(s) r_days, end, is_recid: r_days is missing …; taking end away …; the test AUC …. "
    )
    assert "mlops data init ... --ignore id,name,r_days,end,is_recid (or ignored_columns" in decision.reason
    assert "--allow-leaks decile_score,r_days,end,is_recid (allowed_leaks" in decision.reason
    assert decision.reason.endswith("; acknowledged (allowed_leaks): decile_score")
    assert decision.metrics == {"likely_leaks": 3.0, "ablation_auc": 0.9990234375, "ablation_rows": 400.0}


def test_both_fixes_paste_as_one_value_when_a_column_name_has_spaces() -> None:
    """Real tables name columns ``worst radius``: each flag's value is quoted so a shell reads it whole."""
    text = fix_text(("worst radius", "mean area"), ignored=("id",), allowed=("age's",))
    ignore, acknowledge = (
        shlex.split(text.split(f"--{flag} ", 1)[1])[0] for flag in ("ignore", "allow-leaks")
    )
    assert ignore == "id,worst radius,mean area"
    assert acknowledge == "age's,worst radius,mean area"


def test_not_enforced_findings_promote_and_still_say_what_was_found() -> None:
    decision = decide(LeakagePolicy(enforce=False), LeakageResult(FINDINGS[:1]))
    assert decision.decision == PROMOTE
    assert decision.reason.startswith("likely leak in column(s) r_days")
    assert decision.reason.endswith("(not enforced: gate.leakage.enforce is false)")


def test_a_clean_model_promotes_with_the_figures_it_was_held_to() -> None:
    ablation = _ablation({"age": 0.8125, "priors": 0.84375}, auc=AUC, path=[(("age", "priors"), 0.75)])
    decision = decide(LeakagePolicy(), LeakageResult((), ablation))
    assert decision.decision == PROMOTE
    assert decision.reason == (
        "no column only one label class fills; taking any one column away costs at most 0.0625 AUC (age), "
        "under gate.leakage.column_drop 0.1; test AUC 0.8750 is under group_min_auc 0.95"
    )
    high = _ablation({"age": TOP}, auc=TOP, path=[(("age", "priors"), 0.875)])
    assert decide(LeakagePolicy(), LeakageResult((), high)).reason.endswith(
        "without the 2 costliest column(s) (age, priors) the AUC is 0.8750, 0.1094 lower, under group_drop 0.15"
    )


def test_the_metrics_tasks_verdict_carries_a_leakage_rejection() -> None:
    metrics = Decision("metrics", PROMOTE, "test_auc 0.9989 >= floor 0.7000", {"test_auc": 0.9989})
    leak = Decision("leakage", REJECT, "likely leak in column(s) end: …", {})
    combined = verdict(metrics, leak)
    assert combined.decision == REJECT and combined.gate == "metrics"
    assert combined.reason == "leakage: likely leak in column(s) end: …"
    assert verdict(metrics, Decision("leakage", PROMOTE, "clean", {})) is metrics
    worse = Decision("metrics", REJECT, "below the floor", {})
    assert verdict(worse, leak).reason == "below the floor; leakage: likely leak in column(s) end: …"


# --- the settings -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("field", "value"),
    [("undefined_share", 0.5), ("defined_share", 1.01), ("column_drop", 0.0), ("group_drop", 0.51),
     ("group_min_auc", 0.49), ("max_group", 0), ("min_class_rows", 0), ("max_rows", 99), ("repeats", 0)],
)  # fmt: skip
def test_settings_out_of_range_are_refused_naming_them(field: str, value: float) -> None:
    with pytest.raises(ValidationError, match=field):
        LeakagePolicy(**{field: value})


def test_the_leakage_settings_sit_in_the_gate_section() -> None:
    policy = MetricsGatePolicy.model_validate({"leakage": {"column_drop": 0.2}})
    assert policy.leakage.column_drop == 0.2 and policy.leakage.enforce is True
    with pytest.raises(ValidationError, match="leakage.colum_drop"):
        MetricsGatePolicy.model_validate({"leakage": {"colum_drop": 0.2}})


def test_max_rows_scores_every_row_up_to_it_and_a_sample_of_that_many_above() -> None:
    x, labels, names = _redundant(rows=101)
    policy = LeakagePolicy(max_rows=100, max_group=1)
    assert ablate(_mean_of_copies, x, labels, names, policy).rows == 100  # one row over: sampled
    at = ablate(_mean_of_copies, x[:100], labels[:100], names, policy)
    assert (
        at.rows == 100
        and at.auc == ablate(_mean_of_copies, x[:100], labels[:100], names, LeakagePolicy(max_group=1)).auc
    )
