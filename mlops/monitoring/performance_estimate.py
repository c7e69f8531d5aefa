"""A window's performance: estimated from the calibrated scores alone (CBPE), and realised on the rows
whose labels arrived through ``mlops feedback``."""

from __future__ import annotations

import numpy as np

from mlops.monitoring.request_window import WindowScoreBins


def estimate_performance(summary: WindowScoreBins) -> dict[str, float]:
    """Confidence-based performance estimation: expected accuracy and ROC AUC if the scores are calibrated.

    Each row counts as ``p`` of a positive and ``1 - p`` of a negative at its score (p the
    calibrated probability); ROC AUC is the chance an expected positive outranks an expected
    negative, ties within a score bin counting half.
    """
    pos, neg = summary.positives, summary.negatives
    total_pos, total_neg = pos.sum(), neg.sum()
    if summary.rows == 0 or total_pos == 0 or total_neg == 0:
        return {}
    below = np.concatenate([[0.0], np.cumsum(neg)[:-1]])
    auc = float(np.sum(pos * (below + neg / 2)) / (total_pos * total_neg))
    return {
        "accuracy": summary.correct / summary.rows,
        "roc_auc": auc,
        "positive_rate": float(total_pos / summary.rows),
    }


def realised_performance(labelled: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    if not labelled:
        return {}
    from sklearn.metrics import roc_auc_score

    scores = np.concatenate([s for s, _ in labelled])
    labels = np.concatenate([y for _, y in labelled])
    out = {"accuracy": float(((scores >= 0.5) == labels).mean()), "labelled_rows": float(len(labels))}
    if len(np.unique(labels)) == 2:
        out["roc_auc"] = float(roc_auc_score(labels, scores))
    return out


def labelled_rows(labelled: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if not labelled:
        return np.zeros(0), np.zeros(0, dtype=int)
    return np.concatenate([s for s, _ in labelled]), np.concatenate([y for _, y in labelled])
