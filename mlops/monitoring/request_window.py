"""Summarise a window of the request log into the reference profile's bins, one file at a time.

Nothing holds the window's rows: each Parquet file is read (only the needed columns,
only the window's time range, only the monitored version) and added to per-feature
counters over the reference's fixed bin edges, then dropped. Memory is bounded by the
largest file; time is one ``searchsorted`` per numeric column and one ``value_counts``
per categorical column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from mlops.model.reference_profile import Calibration, CategoricalProfile, NumericProfile, ReferenceProfile

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

LOG_COLUMNS = ("prediction", "model_version", "timestamp")
SCORE_BINS = 1000
"""Equal-width score bins of the performance estimate (CBPE): AUC error below 1e-3."""


class WindowError(ValueError):
    """The window cannot be checked (empty, wrong schema, unreadable); nothing is triggered."""


@dataclass
class NumericCounts:
    """A window's values of one numeric column over the reference's bins: counts and sums per bin.

    The first and last bins' sums also give the exact tails of the Wasserstein integral
    outside the reference range (:attr:`below`, :attr:`above`).
    """

    profile: NumericProfile
    counts: np.ndarray = field(init=False)
    rows: int = 0
    missing: int = 0

    def __post_init__(self) -> None:
        self._edges = np.asarray(self.profile.edges)
        self.counts = np.zeros(len(self._edges) + 1, dtype=np.int64)
        self.sums = np.zeros(len(self._edges) + 1)

    def add(self, values: np.ndarray) -> None:
        missing = np.isnan(values)
        n_missing = int(np.count_nonzero(missing))
        finite = values[~missing] if n_missing else values
        self.missing += n_missing
        self.rows += len(finite)
        index = np.searchsorted(self._edges, finite, side="left")
        self.counts += np.bincount(index, minlength=len(self.counts))
        self.sums += np.bincount(index, weights=finite, minlength=len(self.counts))

    @property
    def below(self) -> float:
        """Sum of (e0 - x) over values below the reference minimum (bin 0 holds x <= e0; x == e0 adds 0)."""
        return float(self._edges[0] * self.counts[0] - self.sums[0])

    @property
    def above(self) -> float:
        """Sum of (x - e_k) over values above the reference maximum (the top bin)."""
        return float(self.sums[-1] - self._edges[-1] * self.counts[-1])


@dataclass
class CategoricalCounts:
    profile: CategoricalProfile
    counts: dict[str, int] = field(default_factory=dict)
    rows: int = 0
    missing: int = 0

    def add(self, column: pa.ChunkedArray | pa.Array) -> None:
        import pyarrow.compute as pc

        self.missing += column.null_count
        self.rows += len(column) - column.null_count
        for item in pc.value_counts(column.drop_null()).to_pylist():
            key = str(item["values"])
            self.counts[key] = self.counts.get(key, 0) + int(item["counts"])


class Calibrator:
    """The profile's calibration map as the window needs it: probabilities, and which map bin each score fell in.

    Without a calibration map (reference rows without labels) the scores are taken as
    probabilities and every score is in one bin; with an ``identity`` map (scores found calibrated)
    the scores are the probabilities and the bins are the map's isotonic blocks.
    """

    def __init__(self, calibration: Calibration | None) -> None:
        self.calibration = calibration
        self.bins = len(calibration.rates) if calibration else 1

    def __call__(self, scores: np.ndarray) -> np.ndarray:
        return self.calibration.apply(scores) if self.calibration else scores

    def bin_of(self, scores: np.ndarray) -> np.ndarray:
        if self.calibration is None:
            return np.zeros(len(scores), dtype=np.int64)
        return np.searchsorted(np.asarray(self.calibration.edges), scores, side="right")


def score_bin(scores: np.ndarray) -> np.ndarray:
    """Equal-width bin of each score; a score at or above 0.5 never shares a bin with one below it.

    Equal scores always share a bin, so ties are counted as ties (half) by the estimate.
    """
    index = np.clip((scores * SCORE_BINS).astype(np.int64), 0, SCORE_BINS - 1)
    half = SCORE_BINS // 2
    return np.where(scores >= 0.5, np.maximum(index, half), np.minimum(index, half - 1))


@dataclass
class WindowScoreBins:
    """The window's scores as CBPE needs them: expected positives/negatives per score bin.

    ``joint`` counts the window's rows per (score bin, calibration-map bin): with the map's
    rates it rebuilds ``positives``/``negatives``, and resampling it gives the estimate's band.
    """

    positives: np.ndarray = field(default_factory=lambda: np.zeros(SCORE_BINS))
    negatives: np.ndarray = field(default_factory=lambda: np.zeros(SCORE_BINS))
    correct: float = 0.0
    rows: int = 0
    joint: np.ndarray = field(default_factory=lambda: np.zeros((SCORE_BINS, 1)))

    def add(self, scores: np.ndarray, calibrated: np.ndarray, groups: np.ndarray | None = None) -> None:
        index = score_bin(scores)
        self.positives += np.bincount(index, weights=calibrated, minlength=SCORE_BINS)
        self.negatives += np.bincount(index, weights=1 - calibrated, minlength=SCORE_BINS)
        self.correct += float(np.where(scores >= 0.5, calibrated, 1 - calibrated).sum())
        self.rows += len(scores)
        groups = np.zeros(len(scores), dtype=np.int64) if groups is None else groups
        width = max(self.joint.shape[1], int(groups.max(initial=0)) + 1)
        if width > self.joint.shape[1]:
            self.joint = np.pad(self.joint, ((0, 0), (0, width - self.joint.shape[1])))
        flat = np.bincount(index * width + groups, minlength=SCORE_BINS * width)
        self.joint += flat.reshape(SCORE_BINS, width)


@dataclass
class WindowSummary:
    start: datetime
    end: datetime
    version: str
    numeric: list[NumericCounts]
    categorical: list[CategoricalCounts]
    score: NumericCounts
    estimate: WindowScoreBins
    rows: int = 0
    files: int = 0
    other_versions: dict[str, int] = field(default_factory=dict)
    """Rows in the time range served by other versions (not compared)."""
    labelled: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    """(scores, labels) of rows whose label arrived through ``mlops feedback``."""
    summarised_rows: int = 0
    """Rows of the window that came from stored daily summaries (:mod:`mlops.monitoring.day_summaries`)."""
    summarised_days: list[str] = field(default_factory=list)
    """The days (YYYY-MM-DD) served from stored summaries."""
    grouped: list[pd.DataFrame] = field(default_factory=list)
    """``prediction``, ``label`` (may be missing) and protected-attribute columns of rows whose feedback
    named their groups."""


def empty_summary(profile: ReferenceProfile, start: datetime, end: datetime, version: str) -> WindowSummary:
    return WindowSummary(
        start=start,
        end=end,
        version=version,
        numeric=[NumericCounts(p) for p in profile.numeric],
        categorical=[CategoricalCounts(p) for p in profile.categorical],
        score=NumericCounts(profile.score),
        estimate=WindowScoreBins(),
    )


def check_schema(table: pa.Table, profile: ReferenceProfile, source: str) -> None:
    import pyarrow as pa

    names = set(table.column_names)
    missing = [c for c in (*profile.feature_names, *LOG_COLUMNS) if c not in names]
    if missing:
        raise WindowError(
            f"request log {source} does not match the model's schema: it lacks column(s) {missing} "
            f"(the model's features: {list(profile.feature_names)}). Check --model_name/--model_version, "
            "or that this log belongs to this model"
        )
    expected = [(p.name, "numeric", _is_number) for p in profile.numeric]
    expected += [(p.name, "text (categories)", _is_text) for p in profile.categorical]
    expected += [("prediction", "numeric (the model's score)", _is_number)]
    expected += [("timestamp", "a timestamp", pa.types.is_timestamp), ("model_version", "text", _is_text)]
    for name, wanted, fits in expected:
        kind = table.schema.field(name).type
        if not fits(kind):
            raise WindowError(
                f"request log {source} column {name!r} is {kind}, but the model's column is {wanted}; "
                "the log was not written by mlops serve for this model version (or was rewritten with "
                "other types): remove the file or rewrite the column with its logged type"
            )


def _is_number(kind: pa.DataType) -> bool:
    import pyarrow as pa

    # a column with no value in a file is typed null: nothing to misread
    return bool(pa.types.is_floating(kind) or pa.types.is_integer(kind) or pa.types.is_null(kind))


def _is_text(kind: pa.DataType) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind))


def add_table(summary: WindowSummary, table: pa.Table, calibrate: Callable[[np.ndarray], np.ndarray]) -> None:
    for counter in summary.numeric:
        counter.add(table.column(counter.profile.name).to_numpy(zero_copy_only=False).astype(np.float64))
    for cat in summary.categorical:
        cat.add(table.column(cat.profile.name).cast("string"))
    scores = table.column("prediction").to_numpy(zero_copy_only=False).astype(np.float64)
    summary.score.add(scores)
    groups = calibrate.bin_of(scores) if isinstance(calibrate, Calibrator) else None
    summary.estimate.add(scores, calibrate(scores), groups)
    summary.rows += table.num_rows
