"""The leakage gate: is the model carried by columns recorded after the outcome?

Why more than one feature's AUC alone: a leak spread over several columns (a recidivism table's
``is_recid``, ``event``, ``end``, ``r_*``) never shows as one column explaining the model, and a
column known only after the outcome (a call's ``duration``) may score 0.81 alone yet lift the model
far above what the honest columns reach. Three rules, each naming its columns:

- ``one_class``: the column is undefined (missing, or one filler value) for one label class and
  holds values for the other: values that exist only once the outcome happened;
- ``column``: taking one column away (its values shuffled across the test rows, so the model keeps
  its shape but loses what the column says about each row) costs at least ``column_drop`` AUC;
- ``group``: a model at or above ``group_min_auc`` loses at least ``group_drop`` AUC when a group of
  at most ``max_group`` columns is taken away (grown greedily): the model without the group is the
  honest baseline, and the group is what lifted it.

Columns the user acknowledged (``allowed_leaks`` in the schema file) are neither reported nor taken
away: the question is then whether the other columns hide a leak. Dates after an event time are not
checked here: date columns never reach the model (``mlops data init`` ignores them).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from components.promotion_gate.config import LeakagePolicy
from mlops.gates import PROMOTE, REJECT, Decision
from mlops.vocabulary import ALLOWED_LEAKS_TAG, LEAK_COLUMNS_TAG, LEAKAGE_GATE

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

GATE = LEAKAGE_GATE
ONE_CLASS, COLUMN, GROUP = "one_class", "column", "group"


@dataclass(frozen=True)
class Finding:
    """One likely leak: the rule that found it, the columns it names and the figures, in words."""

    rule: str
    """``one_class``, ``column`` or ``group``."""
    columns: tuple[str, ...]
    """The columns the rule blames."""
    detail: str
    """What was measured and the threshold it was held against."""


@dataclass(frozen=True)
class Ablation:
    """The model's test AUC with every column, with each column taken away, and with greedy groups taken away."""

    auc: float
    """The model on the scored rows, every column in place."""
    without: dict[str, float]
    """Per column: the model's AUC with that column alone taken away."""
    path: tuple[tuple[tuple[str, ...], float], ...]
    """Growing groups (each step adds the column whose removal costs most) and the AUC without each."""
    rows: int
    """Test rows scored."""
    ranked: tuple[tuple[tuple[str, ...], float], ...] = ()
    """Growing groups of the columns that alone separate the classes best, and the AUC without each: what
    the greedy path misses when several leaking columns stand in for each other (taking one away costs nothing)."""


@dataclass(frozen=True)
class LeakageResult:
    """What the checks found, and what they could not decide."""

    findings: tuple[Finding, ...]
    ablation: Ablation | None = None
    undecided: str = ""
    """Why the checks could not decide (too few rows of a class); empty when they could."""

    @property
    def columns(self) -> tuple[str, ...]:
        """Every blamed column once, in the order the findings name them."""
        return tuple(dict.fromkeys(c for f in self.findings for c in f.columns))


def too_few_rows(labels: np.ndarray, policy: LeakagePolicy) -> str:
    """Why ``labels`` are too few to decide on ('' when they are enough)."""
    positives = int((labels == 1).sum())
    negatives = len(labels) - positives
    if min(positives, negatives) >= policy.min_class_rows:
        return ""
    return (
        f"not conclusive: {positives} positive and {negatives} negative test rows, fewer than "
        f"gate.leakage.min_class_rows {policy.min_class_rows} of a class; test on more rows (a larger "
        "train.test_fraction or more data) or lower that setting"
    )


def one_class_findings(
    frame: pd.DataFrame,
    labels: np.ndarray,
    columns: Sequence[str],
    policy: LeakagePolicy,
    class_names: tuple[str, str] = ("0", "1"),
) -> list[Finding]:
    """Columns undefined (one filler fills at least ``undefined_share``) for one label class and defined
    (another value in at least ``defined_share`` of the rows) for the other; ``class_names`` are the
    negative and positive label values, for the message."""
    import pandas as pd

    found = []
    for column in columns:
        series = frame[column]
        for undefined_class in (0, 1):
            rows = series[labels == undefined_class]
            others = series[labels != undefined_class]
            if rows.empty or others.empty:
                continue
            counts = rows.value_counts(dropna=False)
            filler, share = counts.index[0], int(counts.iloc[0]) / len(rows)
            if not share >= policy.undefined_share:
                continue
            filled = others.isna() if pd.isna(filler) else (others == filler) | others.isna()
            defined = int((~filled).sum()) / len(others)
            if not defined >= policy.defined_share:
                continue
            shown = (
                "missing" if pd.isna(filler) else repr(filler.item() if hasattr(filler, "item") else filler)
            )
            found.append(
                Finding(
                    ONE_CLASS,
                    (column,),
                    f"{column} is {shown} in {share:.1%} of the {class_names[undefined_class]!r} rows and holds "
                    f"another value in {defined:.1%} of the {class_names[1 - undefined_class]!r} ones (gate.leakage."
                    f"undefined_share {policy.undefined_share:g}, defined_share {policy.defined_share:g}): a value "
                    "that exists only once the outcome happened",
                )
            )
            break
    return found


def _auc(labels: np.ndarray, score: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, score))


def ablate(
    score: Callable[[np.ndarray], np.ndarray],
    encoded: np.ndarray,
    labels: np.ndarray,
    names: Sequence[str],
    policy: LeakagePolicy,
    keep: Sequence[str] = (),
    ranking: Sequence[str] = (),
) -> Ablation:
    """Score ``encoded`` (one column per name in ``names``) with ``score`` as it is, with each column
    shuffled, and with growing groups shuffled together (the same row shuffle for every column of a group,
    averaged over ``policy.repeats`` shuffles): grown greedily, and as prefixes of ``ranking`` (columns
    best first by their own AUC). Columns in ``keep`` are never taken away."""
    import numpy as np

    rng = np.random.default_rng(policy.seed)
    if len(labels) > policy.max_rows:
        chosen = np.sort(rng.choice(len(labels), policy.max_rows, replace=False))
        encoded, labels = encoded[chosen], labels[chosen]
    shuffles = [rng.permutation(len(labels)) for _ in range(policy.repeats)]
    index = {name: i for i, name in enumerate(names)}

    def without(group: Sequence[str]) -> float:
        columns = [index[name] for name in group]
        aucs = []
        for order in shuffles:
            shuffled = encoded.copy()
            shuffled[:, columns] = encoded[order][:, columns]
            aucs.append(_auc(labels, score(shuffled)))
        return float(np.mean(aucs))

    candidates = [name for name in names if name not in set(keep)]
    alone = {name: without([name]) for name in candidates}
    path: list[tuple[tuple[str, ...], float]] = []
    removed: list[str] = []
    for _ in range(min(policy.max_group, len(candidates))):
        left = [name for name in candidates if name not in removed]
        costs = {name: alone[name] if not removed else without([*removed, name]) for name in left}
        best = min(left, key=lambda name: costs[name])  # ties: the first in the model's column order
        removed.append(best)
        path.append((tuple(removed), costs[best]))
    suspects = [name for name in dict.fromkeys(ranking) if name in candidates][: policy.max_group]
    ranked = tuple((tuple(suspects[:k]), without(suspects[:k])) for k in range(1, len(suspects) + 1))
    return Ablation(_auc(labels, score(encoded)), alone, tuple(path), len(labels), ranked)


def ablation_findings(ablation: Ablation, policy: LeakagePolicy) -> list[Finding]:
    """The ``column`` and ``group`` rules on an :class:`Ablation`."""
    found = [
        Finding(
            COLUMN,
            (name,),
            f"taking {name} away lowers the test AUC from {ablation.auc:.4f} to {auc:.4f} (by "
            f"{ablation.auc - auc:.4f}, at least gate.leakage.column_drop {policy.column_drop:g}): the model "
            "leans on this one column",
        )
        for name, auc in sorted(ablation.without.items(), key=lambda item: item[1])
        if ablation.auc - auc >= policy.column_drop
    ]
    if ablation.auc >= policy.group_min_auc:
        collapsing = [
            (group, auc)
            for group, auc in (*ablation.path, *ablation.ranked)
            if ablation.auc - auc >= policy.group_drop
        ]
        if collapsing:
            group, auc = min(collapsing, key=lambda step: len(step[0]))  # ties: the greedy path's
            found.append(
                Finding(
                    GROUP,
                    group,
                    f"the test AUC {ablation.auc:.4f} (at least gate.leakage.group_min_auc "
                    f"{policy.group_min_auc:g}) falls to {auc:.4f} without the {len(group)} column(s) "
                    f"{', '.join(group)} (by {ablation.auc - auc:.4f}, at least gate.leakage.group_drop "
                    f"{policy.group_drop:g}): the other columns alone reach about {auc:.4f}",
                )
            )
    return found


def _clean_summary(ablation: Ablation | None, policy: LeakagePolicy) -> str:
    if ablation is None:
        return "no column only one label class fills"
    worst = min(ablation.without.items(), key=lambda item: item[1], default=("", ablation.auc))
    text = (
        f"no column only one label class fills; taking any one column away costs at most "
        f"{ablation.auc - worst[1]:.4f} AUC{f' ({worst[0]})' if worst[0] else ''}, under "
        f"gate.leakage.column_drop {policy.column_drop:g}"
    )
    if ablation.auc < policy.group_min_auc:
        return f"{text}; test AUC {ablation.auc:.4f} is under group_min_auc {policy.group_min_auc:g}"
    largest = min((*ablation.path, *ablation.ranked), key=lambda step: step[1], default=((), ablation.auc))
    return (
        f"{text}; without the {len(largest[0])} costliest column(s) ({', '.join(largest[0])}) the AUC is {largest[1]:.4f}, "
        f"{ablation.auc - largest[1]:.4f} lower, under group_drop {policy.group_drop:g}"
    )


def fix_text(columns: Sequence[str], ignored: Sequence[str], allowed: Sequence[str]) -> str:
    """The two ways out, each a flag to paste (quoted for a shell where a column name needs it): leave the
    columns out, or say they are known in time."""
    leave_out = shlex.quote(",".join(dict.fromkeys((*ignored, *columns))))
    acknowledge = shlex.quote(",".join(dict.fromkeys((*allowed, *columns))))
    return (
        "If they are recorded after the outcome, leave them out and train again: "
        f"mlops data init ... --ignore {leave_out} (or ignored_columns in the schema file); if they are "
        f"known before the outcome, acknowledge them: mlops data init ... --allow-leaks {acknowledge} "
        "(allowed_leaks in the schema file)"
    )


def decide(
    policy: LeakagePolicy,
    result: LeakageResult,
    ignored: Sequence[str] = (),
    allowed: Sequence[str] = (),
) -> Decision:
    """Reject a version with a likely leak (or one the checks could not decide on) while ``policy.enforce``;
    the reason names the columns and the flags that fix it (``ignored``/``allowed``: the schema's lists)."""
    metrics: dict[str, float] = {"likely_leaks": float(len(result.columns))}
    if result.ablation is not None:
        metrics |= {"ablation_auc": result.ablation.auc, "ablation_rows": float(result.ablation.rows)}
    acknowledged = f"; acknowledged (allowed_leaks): {', '.join(allowed)}" if allowed else ""
    if result.findings:
        columns = result.columns
        reason = (
            f"likely leak in column(s) {', '.join(columns)}: "
            + "; ".join(f.detail for f in result.findings)
            + ". "
            + fix_text(columns, ignored, allowed)
            + acknowledged
        )
    elif result.undecided:
        reason = result.undecided + acknowledged
    else:
        return Decision(GATE, PROMOTE, _clean_summary(result.ablation, policy) + acknowledged, metrics)
    if not policy.enforce:
        return Decision(GATE, PROMOTE, f"{reason} (not enforced: gate.leakage.enforce is false)", metrics)
    return Decision(GATE, REJECT, reason, metrics)


def assess(
    score: Callable[[np.ndarray], np.ndarray],
    encoded: np.ndarray,
    frame: pd.DataFrame,
    labels: np.ndarray,
    names: Sequence[str],
    policy: LeakagePolicy,
    allowed: Sequence[str] = (),
    class_names: tuple[str, str] = ("0", "1"),
    ranking: Sequence[str] = (),
) -> LeakageResult:
    """Every rule on the test rows (``frame`` and its encoding ``encoded``, one column per ``names``);
    ``allowed`` columns are neither blamed nor taken away; ``ranking``: the columns best first by their
    own AUC (the evaluation's single-feature AUCs)."""
    undecided = too_few_rows(labels, policy)
    if undecided:
        return LeakageResult((), None, undecided)
    checked = [name for name in names if name not in set(allowed)]
    findings = one_class_findings(frame, labels, checked, policy, class_names)
    ablation = ablate(score, encoded, labels, names, policy, keep=allowed, ranking=ranking)
    return LeakageResult((*findings, *ablation_findings(ablation, policy)), ablation)


def version_tags(result: LeakageResult, allowed: Sequence[str]) -> dict[str, str]:
    """What the registry keeps beside the decision: the blamed columns and the acknowledged ones."""
    return {LEAK_COLUMNS_TAG: ",".join(result.columns), ALLOWED_LEAKS_TAG: ",".join(allowed)}


def report(result: LeakageResult, allowed: Sequence[str]) -> dict[str, object]:
    """The findings and the ablation's figures, for the gate's JSON report."""
    from dataclasses import asdict

    ablation = result.ablation
    return {
        "findings": [asdict(f) for f in result.findings],
        "columns": list(result.columns),
        "allowed_leaks": list(allowed),
        "undecided": result.undecided or None,
        "ablation": None
        if ablation is None
        else {
            "rows": ablation.rows,
            "auc": ablation.auc,
            "without_column": ablation.without,
            "greedy_groups": [{"columns": list(g), "auc": a} for g, a in ablation.path],
            "ranked_groups": [{"columns": list(g), "auc": a} for g, a in ablation.ranked],
        },
    }


def verdict(metrics: Decision, leakage: Decision) -> Decision:
    """The metrics task's one verdict: reject when the metrics or the leakage gate rejects."""
    if leakage.promote:
        return metrics
    reasons = [*([] if metrics.promote else [metrics.reason]), f"leakage: {leakage.reason}"]
    return Decision(metrics.gate, REJECT, "; ".join(reasons), metrics.metrics)
