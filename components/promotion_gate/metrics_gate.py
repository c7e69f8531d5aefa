"""The metrics gate as one call: the AUC rules, the slice floors and the leakage check, each recorded on the
version, folded into the step's verdict. The KFP step and the plain-call benchmark both call it, so the two
do the same work."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.promotion_gate.config import MetricsGatePolicy
from components.promotion_gate.leakage import verdict as with_leakage
from components.promotion_gate.leakage_gate import judge_leakage
from components.promotion_gate.promotion import decide, record
from components.promotion_gate.slice_floors import decide_slices
from components.promotion_gate.slice_floors import verdict as with_slices
from mlops.gates import Decision

if TYPE_CHECKING:
    from mlops.data.dataset import DatasetSchema
    from mlops.tracking.store import TrackingStore


def judge_metrics(
    policy: MetricsGatePolicy,
    evaluated: Mapping[str, Any],
    *,
    test_auc: float,
    champion_auc: float,
    has_champion: bool,
    comparison_auc: float,
    top_feature: str,
    top_feature_auc: float,
    model_dir: Path,
    test_data: Path,
    schema: DatasetSchema,
    model_name: str,
    version: str,
    store: TrackingStore,
    report_path: Path,
) -> Decision:
    """Decide and record the AUC gate (its report at ``report_path``), then the slice floors on ``evaluated``'s
    per-slice part (gate ``slices``, when ``policy.slice_floors`` names any) and the leakage check of the
    model on its test rows (gate ``leakage``); a rejection by either rejects the verdict returned."""
    decision = decide(
        policy,
        test_auc,
        champion_auc,
        has_champion,
        comparison_auc=comparison_auc if has_champion else None,
        top_feature=top_feature,
        top_feature_auc=top_feature_auc,
        allowed=schema.allowed_leaks,
        not_compared=evaluated.get("champion_not_compared") or "",
    )
    record(decision, model_name, version, store, report_path)
    slices = decide_slices(policy, evaluated.get("slices"))
    if slices is not None:
        with tempfile.TemporaryDirectory(prefix="slices-gate-") as tmp:
            record(slices, model_name, version, store, Path(tmp) / "slices.json")
        print(f"gate {slices.gate}: {slices.decision} ({slices.reason})")
    decision = with_slices(decision, slices)
    leakage = judge_leakage(
        policy.leakage, model_dir, test_data, schema, evaluated, model_name, version, store
    )
    print(f"gate {leakage.gate}: {leakage.decision} ({leakage.reason})")
    return with_leakage(decision, leakage)
