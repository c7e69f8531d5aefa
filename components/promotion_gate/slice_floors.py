"""The slice-floor gate: no declared slice may be clearly below a floor (``gate.slice_floors``).

It reads the evaluation report's per-slice part (:mod:`components.evaluate.slices`). A slice
fails when the *whole* bootstrap interval of a metric lies below its floor (its upper bound
< floor): a slice whose interval reaches the floor could be sampling noise, and is reported
as such rather than rejected. A slice with fewer than ``gate.slice_min_rows`` rows is not
decided either way: the reason names it. A metric undefined on a slice (ROC AUC on one
class) is named too. With floors set but no slices in the report, the gate rejects: a floor
that checks nothing must not look like a pass.
"""

from __future__ import annotations

from typing import Any

from components.promotion_gate.config import MetricsGatePolicy
from mlops.gates import PROMOTE, REJECT, Decision

GATE = "slices"


def decide_slices(policy: MetricsGatePolicy, slices: dict[str, Any] | None) -> Decision | None:
    """The gate's decision, or None when no floor is set (slices are then only reported)."""
    if not policy.slice_floors:
        return None
    rows = list((slices or {}).get("slices", []))
    if not rows:
        return Decision(
            GATE,
            REJECT,
            f"gate.slice_floors {policy.slice_floors} is set but the evaluation holds no slices; declare "
            "slices: in the schema file (or clear gate.slice_floors)",
            {},
        )
    failures, undecided, notes = [], [], []
    metrics: dict[str, float] = {}
    decided = 0
    for item in rows:
        name, size = item["slice"], int(item["size"])
        if size < policy.slice_min_rows:
            undecided.append(f"{name} ({size} rows)")
            continue
        decided += 1
        for metric, floor in sorted(policy.slice_floors.items()):
            stat = item["metrics"].get(metric, {})
            value, upper = stat.get("value"), stat.get("upper")
            if value is None or upper is None:
                notes.append(f"{name}: {metric} undefined ({item.get('note') or 'no value'})")
                continue
            metrics[f"{name}.{metric}"] = float(value)
            if upper < floor:
                failures.append(
                    f"slice {name} ({size} rows): {metric} {value:.4f} [{stat['lower']:.4f}, {upper:.4f}] is below "
                    f"the floor {floor:.4f}"
                )
            elif value < floor:
                notes.append(
                    f"{name}: {metric} {value:.4f} below {floor:.4f} but its interval reaches it (noise?)"
                )
    tail = []
    if undecided:
        tail.append(f"too small to decide (< {policy.slice_min_rows} rows): {', '.join(undecided)}")
    if notes:
        tail.append("notes: " + "; ".join(notes))
    suffix = (" [" + "; ".join(tail) + "]") if tail else ""
    if failures:
        return Decision(GATE, REJECT, "; ".join(failures) + suffix, metrics)
    return Decision(
        GATE, PROMOTE, f"{decided} slice(s) meet the floors {policy.slice_floors}" + suffix, metrics
    )


def verdict(metrics: Decision, slices: Decision | None) -> Decision:
    """The metrics task's one verdict: reject when either the metrics or the slice floors reject."""
    if slices is None or slices.promote:
        return metrics
    reasons = [*([] if metrics.promote else [metrics.reason]), f"slice floors: {slices.reason}"]
    return Decision(metrics.gate, REJECT, "; ".join(reasons), metrics.metrics)
