"""The canary's quality feed over request logs written by the server's own writer and labels stored by
``mlops feedback``'s code: each file read once, each label counted once, a worse challenger rolled back."""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist
from types import SimpleNamespace

import numpy as np
import pandas as pd

from delivery.rollout.config import RolloutConfig
from delivery.rollout.quality_feed import RequestLogQuality, for_rollout
from delivery.rollout.sequential import CanaryQuality
from mlops.data.features import FeatureSpec
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.model.reference_profile import Calibration, ProfileError
from mlops.monitoring.feedback import store_labels
from serving.request_log import RequestLogger
from serving.request_log_blocks import Block

MODEL = "quality-feed"


def write(
    root: Path, spec: FeatureSpec, x: np.ndarray, version: str, scores: np.ndarray, prefix: str
) -> list[str]:
    block = Block(version, spec, len(scores))
    for i, score in enumerate(scores):
        block.add(x[i % len(x)][None, :], np.array([score], dtype=np.float32), 1_000_000 * i, f"{prefix}-{i}")
    return RequestLogger(str(root), MODEL, 1.0, 60, 10**9).write([block])


def binormal(rng: np.random.Generator, auc: float, rows: int) -> tuple[np.ndarray, np.ndarray]:
    d = math.sqrt(2) * NormalDist().inv_cdf(auc)
    labels = (rng.random(rows) < 0.3).astype(int)
    return 1 / (1 + np.exp(-(rng.normal(0, 1, rows) + d * labels - 1))), labels


def test_a_worse_challenger_is_rolled_back_on_its_labelled_requests(tmp_path: Path) -> None:
    frame = generate(SampleDataConfig(rows=50, seed=3))
    spec = FeatureSpec.fit(frame, SAMPLE_SCHEMA)
    x = spec.encode(frame)
    root = tmp_path / "request-logs"
    rng = np.random.default_rng(0)
    quality = CanaryQuality(alpha=0.05, min_units=100)
    feed = RequestLogQuality(str(root), MODEL, champion="1", challenger="2", calibrations={}, quality=quality)
    verdicts = []
    for interval in range(12):
        labels_file = tmp_path / f"labels-{interval}.csv"
        parts = []
        for version, auc in (("1", 0.85), ("2", 0.65)):
            scores, labels = binormal(rng, auc, 400)
            prefix = f"v{version}-i{interval}"
            write(root, spec, x, version, scores, prefix)
            parts.append(pd.DataFrame({"request_id": [f"{prefix}-{i}" for i in range(400)], "label": labels}))
        pd.concat(parts).to_csv(labels_file, index=False)
        assert store_labels(str(labels_file), str(root), MODEL).matched == 800
        verdicts.append(feed())
        if verdicts[-1].outcome != "continue":
            break
    assert verdicts[-1].outcome == "rollback", verdicts[-1].reason
    assert "challenger worse on realised AUC" in verdicts[-1].reason
    assert len(verdicts) >= 2  # not on the first interval's few pairs
    pairs = quality.realised.pairs
    assert feed().figures["quality_realised_pairs"] == pairs  # nothing new: nothing counted twice
    assert quality.estimated.pairs == 400 * len(verdicts)


def test_rows_of_other_versions_and_unlabelled_rows_add_only_estimated_units(tmp_path: Path) -> None:
    frame = generate(SampleDataConfig(rows=20, seed=4))
    spec = FeatureSpec.fit(frame, SAMPLE_SCHEMA)
    x = spec.encode(frame)
    root = tmp_path / "logs"
    write(root, spec, x, "1", np.full(30, 0.9), "a")
    write(root, spec, x, "2", np.full(20, 0.2), "b")
    write(root, spec, x, "9", np.full(50, 0.5), "c")  # a third version: not this rollout's
    quality = CanaryQuality(min_units=5)
    verdict = RequestLogQuality(str(root), MODEL, "1", "2", {}, quality)()
    assert quality.estimated.pairs == 20 and quality.realised.pairs == 0
    # challenger units 0.8 (1 - 0.2), champion 0.9: the paired difference is -0.1 on every pair
    assert verdict.outcome == "continue" and verdict.figures["quality_estimated_pairs"] == 20
    assert abs(quality.estimated.mean_difference + 0.1) < 1e-6


class ProfileRegistry:
    """Stand-in for the one TrackingStore method the feed asks (a real registry: tests/components/drift_monitor)."""

    def __init__(self, calibrations: dict[str, Calibration]):
        self.calibrations = calibrations

    def reference_profile(self, model_name: str, version: str) -> SimpleNamespace:
        if version not in self.calibrations:
            raise ProfileError(f"model {model_name!r} version {version} has no reference profile")
        return SimpleNamespace(calibration=self.calibrations[version])


def test_a_rollouts_feed_takes_the_configs_quality_settings_and_each_versions_calibration(
    tmp_path: Path,
) -> None:
    config = RolloutConfig(
        quality_alpha=0.02, quality_auc_margin=0.03, quality_min_pairs=7, agreement_threshold=0.4
    )
    state = SimpleNamespace(model_name=MODEL, champion="1", challenger="2")
    mapped = Calibration(edges=(0.5,), rates=(0.1, 0.7))
    feed = for_rollout(config, str(tmp_path), state, ProfileRegistry({"1": mapped}))
    assert (feed.quality.alpha, feed.quality.auc_margin, feed.quality.min_units) == (0.02, 0.03, 7)
    assert feed.calibrations == {
        "1": mapped,
        "2": None,
    }  # version 2 has no profile: its scores are used as they are
    assert feed.threshold == 0.4
    assert feed().outcome == "continue"  # no log yet: nothing decided
