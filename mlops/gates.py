"""The one decision type every gate returns, and the protocol a gate follows.

Metrics, model validation and INT8 parity gates decide today; canary analysis and
drift decide next. Each returns a :class:`Decision`, so combining, recording and
reporting gates is written once.

A gate's *decision* (``promote``/``reject``) is what happens to the version; its *status*
(``pass``/``fail``/``not_conclusive``) is what the evidence showed. They differ in one
case only: a check the data could not decide (a confidence interval reaching across its
limit, a disparity with fewer than two groups large enough to compare) makes the status
``not_conclusive``, and the decision is ``reject`` unless the gate's policy lets undecided
checks pass; then the decision is ``promote`` and every undecided check is listed in
:attr:`Decision.undecided`, so no report or console shows it as a plain pass.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

PROMOTE = "promote"
REJECT = "reject"
DecisionValue = Literal["promote", "reject"]

Status = Literal["pass", "fail", "not_conclusive"]
PASS: Status = "pass"
FAIL: Status = "fail"
NOT_CONCLUSIVE: Status = "not_conclusive"
STATUSES = (PASS, FAIL, NOT_CONCLUSIVE)
STATUS_WORDS: dict[str, str] = {PASS: "pass", FAIL: "fail", NOT_CONCLUSIVE: "not conclusive"}
"""A status as people read it (reports, console, card); the JSON keeps the identifier."""


def status_word(status: str) -> str:
    """``pass``, ``fail`` or ``not conclusive``; an unknown value is shown as it is, never as a pass."""
    return STATUS_WORDS.get(status, status or "unknown")


@dataclass(frozen=True)
class StatusBadge:
    """A status as a report colours it: the CSS class (``pass`` green, ``fail`` red, anything else amber) and
    the word shown."""

    css: str
    text: str


def status_badge(status: str | None, *, loud_fail: bool = False) -> StatusBadge:
    """``status`` coloured for a report; an undecided, unknown or unrecorded status is never green.

    ``loud_fail`` writes a failure in capitals (the gate report, where a failed check must stand out in a table).
    """
    text = str(status or "not recorded")
    word = status_word(text)
    return StatusBadge(
        text if text in (PASS, FAIL) else NOT_CONCLUSIVE, word.upper() if loud_fail and text == FAIL else word
    )


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
    status: str = ""
    """``pass``, ``fail`` or ``not_conclusive``; empty: derived from the decision (promote: pass, reject: fail)."""
    undecided: tuple[str, ...] = ()
    """Each check the data could not decide, as a sentence with its figures; empty unless not conclusive."""

    def __post_init__(self) -> None:
        if self.decision not in (PROMOTE, REJECT):
            raise ValueError(
                f"gate {self.gate!r} returned [{self.decision!r}]; expected {PROMOTE!r} or {REJECT!r}"
            )
        object.__setattr__(self, "undecided", tuple(self.undecided))
        if not self.status:
            object.__setattr__(
                self,
                "status",
                NOT_CONCLUSIVE if self.undecided and self.promote else (PASS if self.promote else FAIL),
            )
        if self.status not in STATUSES:
            raise ValueError(f"gate {self.gate!r} has status {self.status!r}; expected one of {STATUSES}")
        if self.status == PASS and (not self.promote or self.undecided):
            raise ValueError(
                f"gate {self.gate!r}: status pass needs decision promote and no undecided checks "
                f"(got {self.decision!r}, {len(self.undecided)} undecided)"
            )
        if self.status == FAIL and self.promote:
            raise ValueError(f"gate {self.gate!r}: status fail with decision promote; a failed check rejects")
        if self.status == NOT_CONCLUSIVE and not self.undecided:
            raise ValueError(f"gate {self.gate!r}: status not_conclusive must name the undecided checks")

    @property
    def promote(self) -> bool:
        return self.decision == PROMOTE

    @property
    def passed_undecided(self) -> bool:
        """Promoted although some checks were not conclusive (the policy lets them pass, listed)."""
        return self.promote and self.status == NOT_CONCLUSIVE

    def to_json(self) -> str:
        """The decision as JSON (the gate JSON a task hands to the next one)."""
        return json.dumps(asdict(self), default=str, allow_nan=False)

    @classmethod
    def from_json(cls, text: str | Mapping[str, Any]) -> Decision:
        """A decision written by :meth:`to_json`; a clear error for anything else."""
        try:
            data = json.loads(text) if isinstance(text, str) else dict(text)
            return cls(
                gate=str(data["gate"]),
                decision=str(data["decision"]),
                reason=str(data["reason"]),
                metrics={str(k): float(v) for k, v in (data.get("metrics") or {}).items()},
                status=str(data.get("status") or ""),
                undecided=tuple(str(u) for u in data.get("undecided") or ()),
            )
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"not a gate decision ({exc}): {str(text)[:200]!r}") from exc


class Gate(Protocol):
    """A gate: a name and a ``decide`` that turns its evidence into a :class:`Decision`.

    The evidence differs per gate (test metrics, a scored hold-out set, canary
    windows); what a gate returns never does.
    """

    name: str

    def decide(self, *args: object, **kwargs: object) -> Decision: ...


OVERALL = "overall"


def combine(decisions: Sequence[Decision]) -> Decision:
    """``promote`` iff every decision is ``promote``; the reason names each rejecting gate.

    The status is ``fail`` when a gate failed, else ``not_conclusive`` when any gate left a check
    undecided (whether its policy let it pass or not), else ``pass``. Every undecided check of every
    gate is carried over, prefixed with its gate, so the verdict never hides one behind a promote.
    """
    if not decisions:
        raise ValueError("combine needs at least one gate decision")
    undecided = tuple(f"{d.gate}: {u}" for d in decisions for u in d.undecided)
    rejected = [d for d in decisions if not d.promote]
    if rejected:
        failed = any(d.status == FAIL for d in rejected)
        return Decision(
            OVERALL,
            REJECT,
            "; ".join(f"{d.gate} gate: {d.reason}" for d in rejected),
            {},
            FAIL if failed else NOT_CONCLUSIVE,
            undecided,
        )
    gates = ", ".join(d.gate for d in decisions)
    if undecided:
        allowed = ", ".join(d.gate for d in decisions if d.passed_undecided)
        return Decision(
            OVERALL,
            PROMOTE,
            f"promoted with {len(undecided)} check(s) not conclusive, let through by the {allowed} gate's "
            f"policy (gates {gates}): " + "; ".join(undecided),
            {},
            NOT_CONCLUSIVE,
            undecided,
        )
    return Decision(OVERALL, PROMOTE, "all gates passed: " + gates, {})
