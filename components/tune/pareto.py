"""Choosing from a multi-objective study: the Pareto front and the declared rule that picks one trial.

The rule (``tune.max_fairness_gap``): among the study's Pareto-optimal trials (validation AUC
maximised, fairness gap minimised), those whose gap is at most the limit qualify; the one with
the highest validation AUC is handed to training (ties: the lower gap, then the lower trial
number). Choosing from the front loses nothing: a qualifying trial off the front is dominated by
a front trial with no larger gap (so it qualifies too) and no lower AUC. When no front trial
qualifies, no trial does, and the step fails naming the fairest trial found instead of handing
on a model the fairness gate would reject.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna


class NoFairTrial(RuntimeError):
    """No completed trial meets the fairness limit; the message names the fairest one."""


@dataclass(frozen=True)
class FrontPoint:
    number: int
    val_auc: float
    fairness_gap: float
    params: dict[str, Any]

    @property
    def row(self) -> dict[str, Any]:
        return {
            "trial": self.number,
            "val_auc": self.val_auc,
            "fairness_gap": self.fairness_gap,
            **self.params,
        }


def front(study: optuna.Study) -> list[FrontPoint]:
    """The Pareto-optimal completed trials, by trial number."""
    return sorted(
        (
            FrontPoint(t.number, float(t.values[0]), float(t.values[1]), dict(t.params))
            for t in study.best_trials
        ),
        key=lambda p: p.number,
    )


def choose(points: Sequence[FrontPoint], max_gap: float) -> FrontPoint:
    """The declared rule: highest val_auc with fairness_gap <= max_gap (ties: lower gap, lower number)."""
    qualified = [p for p in points if p.fairness_gap <= max_gap]
    if not qualified:
        fairest = min(points, key=lambda p: (p.fairness_gap, -p.val_auc))
        raise NoFairTrial(
            f"no Pareto-optimal trial has a fairness gap <= tune.max_fairness_gap {max_gap:.4f}; the fairest is "
            f"trial {fairest.number} (gap {fairest.fairness_gap:.4f}, val AUC {fairest.val_auc:.4f}). Run more "
            "trials, widen the search space, or review the data (the gate would reject every trial found)"
        )
    return max(qualified, key=lambda p: (p.val_auc, -p.fairness_gap, -p.number))
