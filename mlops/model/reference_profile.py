"""The reference profile: what a model version's reference data looked like, in a few kilobytes.

Stored with every model version at registration (``reference_profile.json`` in the
register task's run, named by the version tag :data:`mlops.vocabulary.PROFILE_TAG`), so
the drift monitor never reads the training data again. Per feature:

- numeric: bin edges fixed from the reference (its distinct values when there are few,
  else its quantiles), the reference's counts in those bins, mean, std and missing rate;
- categorical: the category frequencies and missing rate;

plus the same numeric profile of the model's scores on the reference rows, a
calibration map (isotonic regression of the labels on the scores, a step per
pool-adjacent-violators block; profiles written before it hold a 10-bin histogram map,
still read) and the reference metrics, which confidence-based performance estimation needs.

A window of requests is summarised into the *same* bins (:class:`NumericCounts`,
:class:`CategoricalCounts`) one batch at a time, so a check streams through any number
of rows with memory bounded by the bin count.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from mlops.data.features import FeatureSpec

PROFILE_FILE = "reference_profile.json"
"""Artifact name of the profile in the register task's MLflow run."""
PROFILE_FORMAT = 1
MAX_BINS = 100
"""Quantile bins per continuous feature; fewer distinct values are kept as they are (exact)."""
CALIBRATION_BINS = 10
"""Bins of the histogram map older profiles hold (``Calibration.method`` histogram)."""


class ProfileError(ValueError):
    """A profile cannot be built, read or compared; the message says why and what to do."""


class NumericProfile(BaseModel):
    """Counts of a numeric column over fixed bins: ``(-inf, e0], (e0, e1], …, (e_k-1, e_k], (e_k, inf)``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["numeric"] = "numeric"
    name: str
    edges: tuple[float, ...]
    """Bin edges; the reference's distinct values when ``discrete``, else its quantiles (min and max included)."""
    counts: tuple[int, ...]
    """Reference rows per bin; ``len(edges) + 1`` entries (the last, above the maximum, is 0)."""
    sums: tuple[float, ...]
    """Sum of the reference values in each bin: with the counts, the exact integral of the CDF over a bin."""
    discrete: bool
    """True when the edges are every distinct reference value: distances are then exact."""
    rows: int
    """Non-missing reference values."""
    missing: int
    mean: float
    std: float


class CategoricalProfile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["categorical"] = "categorical"
    name: str
    categories: tuple[str, ...]
    counts: tuple[int, ...]
    rows: int
    missing: int


class Calibration(BaseModel):
    """A step calibration map fitted on the labelled reference rows: a positive rate per score bin.

    ``isotonic`` (what a new profile is fitted with): the bins are the isotonic fit's blocks, as many as
    the labels support, so drifted scores no longer pile into one wide top bin.
    ``histogram`` (older profiles): ten quantile bins of the reference scores.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: Literal["histogram", "isotonic", "identity"] = "histogram"
    """How the bins were chosen; a profile without the field holds the histogram map. ``identity``: the
    reference showed the scores already calibrated, so the scores are the probabilities; the isotonic
    blocks are kept (edges, rates, counts) for the uncertainty of that finding in the estimate's band."""
    edges: tuple[float, ...]
    """Inner score edges: a score ``s`` falls in bin ``#(edges <= s)``."""
    rates: tuple[float, ...]
    """Observed positive rate per bin (``len(edges) + 1`` values)."""
    counts: tuple[int, ...] | None = None
    """Reference rows per bin (the rate's evidence, for the estimate's band); None in histogram-map profiles,
    whose counts are read from the score histogram."""

    def apply(self, scores: np.ndarray) -> np.ndarray:
        import numpy as np

        if self.method == "identity":
            return np.asarray(scores, dtype=float)
        return np.asarray(self.rates)[np.searchsorted(np.asarray(self.edges), scores, side="right")]


class ReferenceProfile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: int = PROFILE_FORMAT
    created_at: str
    rows: int
    numeric: tuple[NumericProfile, ...]
    categorical: tuple[CategoricalProfile, ...]
    score: NumericProfile
    """The model's scores on the reference rows (prediction drift)."""
    calibration: Calibration | None = None
    """None when the reference rows carried no labels."""
    metrics: dict[str, float] = Field(default_factory=dict)
    """Reference (test split) metrics: ``roc_auc``, ``accuracy`` at threshold 0.5, ``positive_rate``."""

    @property
    def feature_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.numeric) + tuple(p.name for p in self.categorical)

    def to_json(self) -> str:
        return self.model_dump_json(indent=1)

    @classmethod
    def from_json(cls, text: str, source: str = "profile") -> ReferenceProfile:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ProfileError(f"{source} is not JSON: {exc}") from exc
        if raw.get("format") != PROFILE_FORMAT:
            raise ProfileError(
                f"{source} has profile format {raw.get('format')!r}; this version reads {PROFILE_FORMAT}. "
                "Re-register the model to write a current profile"
            )
        return cls.model_validate(raw)


def numeric_profile(name: str, values: np.ndarray, max_bins: int = MAX_BINS) -> NumericProfile:
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    missing = int(len(values) - len(finite))
    if len(finite) == 0:
        raise ProfileError(f"feature {name!r} has no non-missing reference value; a profile cannot bin it")
    distinct = np.unique(finite)
    discrete = len(distinct) <= max_bins
    edges = distinct if discrete else np.unique(np.quantile(finite, np.linspace(0, 1, max_bins + 1)))
    index = np.searchsorted(edges, finite, side="left")
    counts = np.bincount(index, minlength=len(edges) + 1)
    sums = np.bincount(index, weights=finite, minlength=len(edges) + 1)
    return NumericProfile(
        name=name,
        edges=tuple(float(e) for e in edges),
        counts=tuple(int(c) for c in counts),
        sums=tuple(float(v) for v in sums),
        discrete=bool(discrete),
        rows=int(len(finite)),
        missing=missing,
        mean=float(finite.mean()),
        std=float(finite.std()),
    )


def categorical_profile(name: str, values: Iterable[object]) -> CategoricalProfile:
    import pandas as pd

    series = pd.Series(list(values), dtype=object)
    present = series.dropna().astype(str)
    counts = present.value_counts().sort_index()
    return CategoricalProfile(
        name=name,
        categories=tuple(str(c) for c in counts.index),
        counts=tuple(int(c) for c in counts.to_numpy()),
        rows=int(len(present)),
        missing=int(series.isna().sum()),
    )


def calibration(scores: np.ndarray, labels: np.ndarray, bins: int = CALIBRATION_BINS) -> Calibration:
    """The histogram map of older profiles: ``bins`` quantile bins (kept for reading and comparison)."""
    import numpy as np

    edges = np.unique(np.quantile(scores, np.linspace(0, 1, bins + 1)[1:-1]))
    index = np.searchsorted(edges, scores, side="right")
    total = np.bincount(index, minlength=len(edges) + 1)
    positives = np.bincount(index, weights=labels.astype(float), minlength=len(edges) + 1)
    centres = np.bincount(index, weights=scores, minlength=len(edges) + 1)
    # An empty bin (ties) falls back to its mean score: no evidence to recalibrate it.
    rates = np.where(total > 0, positives / np.maximum(total, 1), centres / np.maximum(total, 1))
    return Calibration(edges=tuple(map(float, edges)), rates=tuple(map(float, rates)))


def isotonic_calibration(scores: np.ndarray, labels: np.ndarray) -> Calibration:
    """Isotonic regression of the labels on the scores (pool adjacent violators), one bin per block.

    The fit is the maximum-likelihood non-decreasing map (NannyML's CBPE calibrates the same
    way); each block of equal fitted rate is a bin, its edge halfway between the blocks'
    neighbouring reference scores, its count the reference rows in it.
    """
    import numpy as np
    from sklearn.isotonic import IsotonicRegression

    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels, dtype=float)
    if len(scores) == 0:
        raise ProfileError("calibration needs labelled reference rows; none were given")
    order = np.argsort(scores, kind="stable")
    ordered = scores[order]
    fitted = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(ordered, labels[order])
    rates = fitted.predict(ordered)
    # a block ends where the fitted rate steps up; equal scores always share a block
    step = np.flatnonzero((np.diff(rates) > 0) & (np.diff(ordered) > 0)) + 1
    starts = np.r_[0, step]
    counts = np.diff(np.r_[starts, len(ordered)])
    edges = (ordered[step - 1] + ordered[step]) / 2
    block_rates = np.add.reduceat(labels[order], starts) / counts
    return Calibration(
        method="isotonic",
        edges=tuple(map(float, edges)),
        rates=tuple(map(float, block_rates)),
        counts=tuple(int(c) for c in counts),
    )


def expected_auc(scores: np.ndarray, probabilities: np.ndarray) -> float:
    """CBPE's ROC AUC: each row ``p`` of a positive and ``1 - p`` of a negative at its score (ties count half)."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    ones, zeros = np.ones(len(scores)), np.zeros(len(scores))
    weights = np.r_[probabilities, 1 - probabilities]
    return float(roc_auc_score(np.r_[ones, zeros], np.r_[scores, scores], sample_weight=weights))


def calibration_map(scores: np.ndarray, labels: np.ndarray, folds: int = 5) -> Calibration:
    """The isotonic map, unless the raw scores estimate the reference's own performance better.

    Like NannyML's CBPE, the map is kept only when it helps, judged out of fold: each reference
    row gets the probability of the isotonic map fitted on the other ``folds - 1`` folds, and the
    label-free estimates (ROC AUC and accuracy) from those probabilities and from the raw scores
    are compared with the reference's realised figures; the map is kept when its error is the
    smaller by more than ``0.5 / sqrt(rows)`` (the comparison's own noise: a calibrated model
    must not get a map by chance). (NannyML compares a 10-bin calibration error, which an over-confident model can pass
    while its raw scores overstate the AUC.) A needless map costs accuracy where drift moves
    scores past the reference's range: its top and bottom blocks are flat, the raw scores are not.
    """
    import numpy as np
    from sklearn.metrics import roc_auc_score

    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels, dtype=float)
    fitted = isotonic_calibration(scores, labels)
    if len(scores) < 10 * folds or len(np.unique(labels)) < 2:
        return fitted
    fold = np.random.default_rng(0).permutation(len(scores)) % folds
    out_of_fold = np.empty(len(scores))
    for k in range(folds):
        held = fold == k
        out_of_fold[held] = isotonic_calibration(scores[~held], labels[~held]).apply(scores[held])
    auc = roc_auc_score(labels, scores)
    accuracy = float(((scores >= 0.5) == labels).mean())

    def error(p: np.ndarray) -> float:
        expected_accuracy = float(np.where(scores >= 0.5, p, 1 - p).mean())
        return abs(expected_auc(scores, p) - auc) + abs(expected_accuracy - accuracy)

    # the map must win by more than the noise of the comparison (~ the figures' sampling error on n rows)
    margin = 0.5 / np.sqrt(len(scores))
    if error(out_of_fold) < error(scores) - margin:
        return fitted
    return fitted.model_copy(update={"method": "identity"})


def build_profile(
    frame: pd.DataFrame, spec: FeatureSpec, scores: np.ndarray, labels: np.ndarray | None = None
) -> ReferenceProfile:
    """Profile ``frame`` (the model's reference rows) and the model's ``scores`` on them."""
    import numpy as np

    if frame.empty:
        raise ProfileError("reference frame has no rows; a profile needs the rows the model was tested on")
    missing = [c for c in spec.names if c not in frame.columns]
    if missing:
        raise ProfileError(f"reference frame lacks feature column(s) {missing}")
    metrics: dict[str, float] = {}
    fitted = None
    if labels is not None:
        from sklearn.metrics import roc_auc_score

        labels = np.asarray(labels).astype(int)
        metrics["accuracy"] = float(((scores >= 0.5) == labels).mean())
        metrics["positive_rate"] = float(labels.mean())
        if len(set(labels.tolist())) == 2:
            metrics["roc_auc"] = float(roc_auc_score(labels, scores))
        fitted = calibration_map(np.asarray(scores, dtype=float), labels)
    return ReferenceProfile(
        created_at=datetime.now(UTC).isoformat(),
        rows=len(frame),
        numeric=tuple(
            numeric_profile(c, frame[c].to_numpy(dtype=float, na_value=np.nan)) for c in spec.numeric
        ),
        categorical=tuple(categorical_profile(c, frame[c]) for c in spec.categorical),
        score=numeric_profile("prediction", np.asarray(scores, dtype=float)),
        calibration=fitted,
        metrics=metrics,
    )
