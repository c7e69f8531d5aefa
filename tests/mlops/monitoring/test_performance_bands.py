"""Performance estimate and bands: ties counted right, bands that cover the truth, the drop rule at its edge."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from mlops.model.reference_profile import calibration, numeric_profile
from mlops.monitoring.judge import dataset_drifted
from mlops.monitoring.performance_bands import (
    Band,
    estimated_bands,
    hanley_mcneil_se,
    left_below,
    realised_bands,
    reference_bands,
)
from mlops.monitoring.performance_estimate import estimate_performance
from mlops.monitoring.request_window import Calibrator, WindowScoreBins

BINORMAL_SHIFT = 1.2
"""Positives' score logits sit this far above the negatives': a population AUC of about 0.80."""


def population(rows: int, seed: int, prevalence: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = (rng.random(rows) < prevalence).astype(int)
    logits = rng.normal(0, 1, rows) + BINORMAL_SHIFT * labels - 1.0
    return 1 / (1 + np.exp(-logits)), labels


def summary_of(scores: np.ndarray, calibrate: Calibrator) -> WindowScoreBins:
    summary = WindowScoreBins()
    for part in np.array_split(scores, 3):
        summary.add(part, calibrate(part), calibrate.bin_of(part))
    return summary


def test_tied_scores_count_half_as_sklearn_does() -> None:
    """Scores rounded to 0.1 are mostly ties; counting them as wins gave 0.87 instead of 0.72."""
    rng = np.random.default_rng(5)
    scores = np.round(rng.beta(2, 4, 20_000), 1)
    probability = np.clip(scores * 0.8 + 0.05, 0, 1)  # the calibrated probability of each tied score
    summary = WindowScoreBins()
    summary.add(scores, probability)
    estimate = estimate_performance(summary)
    # Each row is p of a positive and 1 - p of a negative at its score; sklearn counts a tie as half.
    expected = roc_auc_score(
        np.r_[np.ones(len(scores)), np.zeros(len(scores))],
        np.r_[scores, scores],
        sample_weight=np.r_[probability, 1 - probability],
    )
    assert estimate["roc_auc"] == pytest.approx(expected, abs=1e-9)
    assert 0.6 < estimate["roc_auc"] < 0.8  # ties as wins would push it far up (0.72 -> 0.87 in the issue)
    correct = np.where(scores >= 0.5, probability, 1 - probability).mean()
    assert estimate["accuracy"] == pytest.approx(correct, abs=1e-12)


def test_a_score_just_below_one_half_is_never_binned_with_one_half() -> None:
    summary = WindowScoreBins()
    summary.add(np.array([0.5 - 2**-54, 0.5]), np.array([0.4, 0.6]))
    assert summary.joint[:, 0].nonzero()[0].tolist() == [499, 500]


@pytest.mark.parametrize(
    ("drifted", "share", "expected"), [(10, 0.5, True), (9, 0.5, False), (11, 0.5, True)]
)
def test_dataset_drift_at_its_share_threshold(drifted: int, share: float, expected: bool) -> None:
    """10 of 20 at share 0.5 is a tie: drift (at), 9 is not (just outside), 11 is (just inside)."""
    assert dataset_drifted(drifted, 20, share) is expected


@pytest.mark.parametrize("share", [0.05, 0.1, 0.15, 0.3, 0.35, 0.45, 0.55, 0.7, 0.85, 0.95])
def test_dataset_drift_ties_hold_for_every_share_of_twenty(share: float) -> None:
    at = round(share * 20)
    assert dataset_drifted(at, 20, share) and not dataset_drifted(at - 1, 20, share)


@pytest.mark.parametrize(("high", "expected"), [(0.70, False), (0.70 - 1e-9, True), (0.70 + 1e-9, False)])
def test_a_drop_is_a_window_band_wholly_below_the_champions(high: float, expected: bool) -> None:
    champion = Band(0.75, 0.70, 0.80)
    assert left_below(Band(high - 0.02, high - 0.04, high), champion) is expected


def test_the_estimated_band_covers_the_population_auc() -> None:
    """100 windows of 3000 rows; calibration map fitted on 1500 labelled reference rows (as registration does)."""
    truth_scores, truth_labels = population(400_000, seed=1)
    truth = roc_auc_score(truth_labels, truth_scores)
    reference_scores, reference_labels = population(1500, seed=2)
    fitted = calibration(reference_scores, reference_labels)
    score_profile = numeric_profile("prediction", reference_scores)
    calibrate = Calibrator(fitted)
    covered, widths = 0, []
    for seed in range(100):
        scores, _ = population(3000, seed=100 + seed)
        summary = summary_of(scores, calibrate)
        band = estimated_bands(summary, estimate_performance(summary), fitted, score_profile, 0.95, 200, seed)
        auc = band["roc_auc"]
        assert auc.low <= auc.value <= auc.high
        covered += auc.low <= truth <= auc.high
        widths.append(auc.high - auc.low)
    assert covered >= 88, f"the 95 % band covered the population AUC {truth:.3f} in {covered} of 100 windows"
    assert np.median(widths) < 0.1


def test_the_calibration_maps_uncertainty_widens_the_band() -> None:
    scores, _ = population(5000, seed=7)
    widths = {}
    for reference_rows in (300, 30_000):
        reference_scores, reference_labels = population(reference_rows, seed=8)
        fitted = calibration(reference_scores, reference_labels)
        summary = summary_of(scores, Calibrator(fitted))
        bands = estimated_bands(
            summary,
            estimate_performance(summary),
            fitted,
            numeric_profile("prediction", reference_scores),
            0.95,
            300,
        )
        widths[reference_rows] = bands["roc_auc"].high - bands["roc_auc"].low
    assert widths[300] > 1.5 * widths[30_000]


def test_without_a_calibration_map_the_band_is_the_windows_sampling_error() -> None:
    few, _ = population(500, seed=9)
    many, _ = population(20_000, seed=9)
    score_profile = numeric_profile("prediction", many)
    width = {}
    for name, scores in (("few", few), ("many", many)):
        summary = summary_of(scores, Calibrator(None))
        band = estimated_bands(summary, estimate_performance(summary), None, score_profile, 0.95, 300)
        width[name] = band["roc_auc"].high - band["roc_auc"].low
    assert width["few"] > 3 * width["many"] > 0  # ~ sqrt(40) times wider


def test_the_realised_band_covers_the_population_auc_and_accuracy() -> None:
    truth_scores, truth_labels = population(400_000, seed=1)
    truth = {
        "roc_auc": roc_auc_score(truth_labels, truth_scores),
        "accuracy": ((truth_scores >= 0.5) == truth_labels).mean(),
    }
    covered = dict.fromkeys(truth, 0)
    for seed in range(60):
        scores, labels = population(1000, seed=500 + seed)
        bands = realised_bands(scores, labels, 0.95, 200, seed)
        assert bands["roc_auc"].value == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
        for name, value in truth.items():
            covered[name] += bands[name].low <= value <= bands[name].high
    assert min(covered.values()) >= 52, covered


def test_the_champions_band_matches_the_spread_of_test_sets() -> None:
    aucs = []
    for seed in range(300):
        scores, labels = population(1500, seed=1000 + seed)
        aucs.append(roc_auc_score(labels, scores))
    scores, labels = population(1500, seed=999)
    auc = roc_auc_score(labels, scores)
    se = hanley_mcneil_se(auc, int(labels.sum()), int(len(labels) - labels.sum()))
    assert se == pytest.approx(np.std(aucs), rel=0.2)
    bands = reference_bands({"roc_auc": auc, "accuracy": 0.8, "positive_rate": labels.mean()}, 1500, 0.95)
    assert bands["roc_auc"].high - bands["roc_auc"].low == pytest.approx(2 * 1.96 * se, rel=1e-3)
    assert bands["accuracy"].low == pytest.approx(0.8 - 1.96 * np.sqrt(0.8 * 0.2 / 1500), rel=1e-3)
    assert "roc_auc" not in reference_bands({"roc_auc": auc}, 1500, 0.95)  # no prevalence: no band


def test_a_profile_written_before_the_isotonic_map_still_reads_as_a_histogram_map() -> None:
    from mlops.model.reference_profile import Calibration
    from mlops.monitoring.performance_bands import calibration_counts

    scores, labels = population(3000, seed=12)
    old = calibration(scores, labels).model_dump()
    del old["method"], old["counts"]  # the fields an older profile does not have
    read = Calibration.model_validate(old)
    assert read.method == "histogram" and read.counts is None
    counts = calibration_counts(read, numeric_profile("prediction", scores))
    assert counts.sum() == 3000 and len(counts) == len(read.rates)


def test_the_isotonic_map_is_monotone_and_counts_every_reference_row() -> None:
    from mlops.model.reference_profile import isotonic_calibration

    scores, labels = population(5000, seed=13)
    fitted = isotonic_calibration(scores, labels)
    assert fitted.method == "isotonic" and sum(fitted.counts or ()) == 5000
    assert np.all(np.diff(fitted.rates) > 0) and len(fitted.rates) > 10  # finer than the 10-bin map
    # each block's rate is its rows' observed rate
    bins = np.searchsorted(np.asarray(fitted.edges), scores, side="right")
    for b in (0, len(fitted.rates) // 2, len(fitted.rates) - 1):
        assert labels[bins == b].mean() == pytest.approx(fitted.rates[b])


def test_the_map_is_kept_only_when_it_beats_the_raw_scores() -> None:
    """Calibrated scores (labels drawn from them) keep the raw scores; over-confident ones get the map."""
    from mlops.model.reference_profile import calibration_map

    rng = np.random.default_rng(14)
    logits = rng.normal(-1, 1.2, 5000)
    probability = 1 / (1 + np.exp(-logits))
    labels = (rng.random(5000) < probability).astype(int)
    assert calibration_map(probability, labels).method == "identity"
    over_confident = 1 / (1 + np.exp(-3 * logits))
    assert calibration_map(over_confident, labels).method == "isotonic"
    calibrate = Calibrator(calibration_map(probability, labels))
    assert np.array_equal(calibrate(probability), probability)  # identity: the scores are the probabilities
