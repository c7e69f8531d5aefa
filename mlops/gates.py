"""The one decision type every gate returns, and the protocol a gate follows.

Metrics, model validation and INT8 parity gates decide today; canary analysis and
drift decide next. Each returns a :class:`Decision`, so combining, recording and
reporting gates is written once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

PROMOTE = "promote"
REJECT = "reject"
DecisionValue = Literal["promote", "reject"]


@dataclass(frozen=True)
class Decision:
    """What one gate decided about one model version, and why."""

    gate: str
    """The gate's name (``metrics``, ``model_validation``, ``int8`` …); used in tag names."""
    decision: str
    """``promote`` or ``reject``."""
    reason: str
    """A sentence an auditor can read: the figures and the thresholds they were held against."""
    metrics: dict[str, float] = field(default_factory=dict)
    """The figures the gate decided on."""

    def __post_init__(self) -> None:
        if self.decision not in (PROMOTE, REJECT):
            raise ValueError(
                f"gate {self.gate!r} returned [{self.decision!r}]; expected {PROMOTE!r} or {REJECT!r}"
            )

    @property
    def promote(self) -> bool:
        return self.decision == PROMOTE


class Gate(Protocol):
    """A gate: a name and a ``decide`` that turns its evidence into a :class:`Decision`.

    The evidence differs per gate (test metrics, a scored hold-out set, canary
    windows); what a gate returns never does.
    """

    name: str

    def decide(self, *args: object, **kwargs: object) -> Decision: ...


OVERALL = "overall"


def combine(decisions: Sequence[Decision]) -> Decision:
    """``promote`` iff every decision is ``promote``; the reason names each rejecting gate."""
    if not decisions:
        raise ValueError("combine needs at least one gate decision")
    rejected = [d for d in decisions if not d.promote]
    if rejected:
        return Decision(OVERALL, REJECT, "; ".join(f"{d.gate} gate: {d.reason}" for d in rejected), {})
    return Decision(OVERALL, PROMOTE, "all gates passed: " + ", ".join(d.gate for d in decisions), {})
