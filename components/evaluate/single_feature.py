"""How well one feature alone separates the classes on the test rows: the evidence of a leak.

A model at test AUC 0.9986 whose best single column scores 0.998 has learnt that column,
usually one recorded after the outcome. Each numeric feature is scored as it stands; a
categorical one by its categories' positive rates, cross-fitted over two halves of the rows
(a rate learnt on one half scores the other), so a column of unique IDs scores chance, not 1.
Direction does not matter: an AUC below 0.5 counts as its mirror image.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


@dataclass(frozen=True)
class FeatureAuc:
    feature: str
    """The column."""
    auc: float
    """Its ROC AUC alone, folded to [0.5, 1]."""


def _folded_auc(labels: np.ndarray, score: np.ndarray) -> float:
    import numpy as np
    from sklearn.metrics import roc_auc_score

    if len(np.unique(score)) < 2:
        return 0.5
    auc = float(roc_auc_score(labels, score))
    return max(auc, 1.0 - auc)


def _numeric_score(values: pd.Series) -> np.ndarray:
    import pandas as pd

    numbers = pd.to_numeric(values, errors="coerce").astype("float64")
    median = numbers.median()
    return numbers.fillna(0.0 if pd.isna(median) else median).to_numpy()


def _categorical_auc(values: pd.Series, labels: np.ndarray) -> float:
    """AUC of each row's category positive rate learnt on the other half of the rows (smoothed to that
    half's prior), per half, averaged: a rate never scores the rows it was learnt from, and the two
    halves' priors never separate the classes by themselves. The halves are a fixed shuffle, so a file
    sorted by the label or by the category splits evenly."""
    import numpy as np
    import pandas as pd

    text = values.astype("string").fillna("<missing>").to_numpy()
    fold = np.random.default_rng(0).permutation(len(text)) % 2
    aucs = []
    for k in (0, 1):
        learn, apply = fold != k, fold == k
        if len(set(labels[apply].tolist())) < 2 or not learn.any():
            continue
        prior = float(labels[learn].mean())
        rates = pd.DataFrame({"c": text[learn], "y": labels[learn]}).groupby("c")["y"].agg(["sum", "count"])
        smoothed = (rates["sum"] + prior) / (rates["count"] + 1.0)
        score = pd.Series(text[apply]).map(smoothed).fillna(prior).to_numpy(dtype=np.float64)
        aucs.append(_folded_auc(labels[apply], score))
    return float(np.mean(aucs)) if aucs else 0.5


def single_feature_aucs(
    frame: pd.DataFrame, labels: np.ndarray, numeric: tuple[str, ...], categorical: tuple[str, ...]
) -> list[FeatureAuc]:
    """Every feature's AUC alone, best first (features absent from ``frame`` are skipped)."""
    found = [FeatureAuc(c, _folded_auc(labels, _numeric_score(frame[c]))) for c in numeric if c in frame]
    found += [FeatureAuc(c, _categorical_auc(frame[c], labels)) for c in categorical if c in frame]
    return sorted(found, key=lambda f: (-f.auc, f.feature))
