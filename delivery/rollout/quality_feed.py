"""A canary's quality evidence, read from the request log and the feedback labels as they arrive.

At each analysis interval the request-log files ``mlops serve`` wrote since the last look
(``<root>/<model>/requests-*.parquet``; each row says which version answered it) give the
label-free units: each row's score through its version's calibration map (the reference
profile's), as its probability of being classified right. Labels sent with ``mlops feedback``
(``<root>/<model>/labels/``) are joined to the logged rows by ``(request_id, request_row)``,
each labelled row counted once, and give the realised-AUC couples. Both go to one
:class:`~delivery.rollout.sequential.CanaryQuality`, whose tests stay valid over the whole
rollout however often it is read. Pass an instance as the controller's ``quality``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from delivery.rollout.config import RolloutConfig
from delivery.rollout.sequential import CanaryQuality, QualityVerdict, accuracy_units
from mlops import storage

if TYPE_CHECKING:
    import pandas as pd

    from mlops.model.reference_profile import Calibration

IDS = ["request_id", "request_row"]
LOG_COLUMNS = ["prediction", "model_version", *IDS]


class RequestLogQuality:
    """Feeds ``quality`` from ``<log_root>/<model_name>/`` for the champion and the challenger."""

    def __init__(
        self,
        log_root: str,
        model_name: str,
        champion: str,
        challenger: str,
        calibrations: Mapping[str, Calibration | None],
        quality: CanaryQuality,
        threshold: float = 0.5,
    ):
        self.directory = f"{log_root.rstrip('/')}/{model_name}/"
        self.versions = (challenger, champion)
        self.calibrations = dict(calibrations)
        self.quality = quality
        self.threshold = threshold
        self._seen: set[str] = set()
        self._logged: list[pd.DataFrame] = []
        self._labels: list[pd.DataFrame] = []

    def __call__(self, state: Any = None) -> QualityVerdict:
        self.read()
        return self.quality.verdict()

    def _calibrated(self, version: str, scores: np.ndarray) -> np.ndarray:
        calibration = self.calibrations.get(version)
        return calibration.apply(scores) if calibration is not None else scores

    def read(self) -> None:
        """Take in every request-log and labels file not read yet."""
        import pandas as pd

        new = sorted(set(storage.list_prefix(self.directory)) - self._seen)
        for uri in new:
            self._seen.add(uri)
            name = uri.rsplit("/", 1)[-1]
            if not name.endswith(".parquet"):
                continue
            if "/labels/" in uri[len(self.directory) - 1 :]:
                self._labels.append(
                    pd.read_parquet(io.BytesIO(storage.read_bytes(uri)), columns=[*IDS, "label"])
                )
            elif name.startswith("requests-"):
                self._take_log(pd.read_parquet(io.BytesIO(storage.read_bytes(uri)), columns=LOG_COLUMNS))
        self._join_labels()

    def _take_log(self, frame: pd.DataFrame) -> None:
        frame = frame[frame["model_version"].isin(self.versions)]
        units = []
        for version in self.versions:
            scores = frame.loc[frame["model_version"] == version, "prediction"].to_numpy(np.float64)
            units.append(accuracy_units(scores, self._calibrated(version, scores), self.threshold))
        self.quality.add_estimated(units[0], units[1])
        self._logged.append(frame)

    def _join_labels(self) -> None:
        """Labelled rows not counted yet, per version, to the realised-AUC couples; each counted once."""
        import pandas as pd

        if not self._labels or not self._logged:
            return
        logged = pd.concat(self._logged, ignore_index=True)
        labels = pd.concat(self._labels, ignore_index=True).drop_duplicates(IDS, keep="last")
        labels["request_row"] = labels["request_row"].astype(logged["request_row"].dtype)
        joined = logged.merge(labels, on=IDS, how="inner")
        pairs = []
        for version in self.versions:
            rows = joined[joined["model_version"] == version]
            pairs.append((rows["prediction"].to_numpy(np.float64), rows["label"].to_numpy(np.int64)))
        self.quality.add_labelled(pairs[0], pairs[1])
        matched = logged.merge(labels[IDS], on=IDS, how="left", indicator=True)["_merge"] == "both"
        self._logged = [logged[~matched.to_numpy()]]
        keys = joined[IDS]
        rest = labels.merge(keys, on=IDS, how="left", indicator=True)
        self._labels = [labels[(rest["_merge"] == "left_only").to_numpy()]]


def calibrations_from_registry(store: Any, model_name: str, versions: tuple[str, ...]) -> dict[str, Any]:
    """Each version's calibration map from its reference profile; None (scores used as probabilities) for a
    version registered without one."""
    from mlops.model.reference_profile import ProfileError

    maps = {}
    for version in versions:
        try:
            maps[version] = store.reference_profile(model_name, version).calibration
        except ProfileError:
            maps[version] = None
    return maps


def for_rollout(config: RolloutConfig, log_root: str, state: Any, store: Any) -> RequestLogQuality:
    """The quality feed of the rollout ``state`` (model, champion, challenger) under ``config``'s quality settings."""
    versions = (state.challenger, state.champion)
    quality = CanaryQuality(
        alpha=config.quality_alpha,
        auc_margin=config.quality_auc_margin,
        accuracy_margin=config.quality_accuracy_margin,
        min_units=config.quality_min_pairs,
    )
    calibrations = calibrations_from_registry(store, state.model_name, versions)
    return RequestLogQuality(
        log_root,
        state.model_name,
        state.champion,
        state.challenger,
        calibrations,
        quality,
        config.agreement_threshold,
    )
