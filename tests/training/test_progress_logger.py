"""ProgressLogger: forwards everything and prints one progress event per epoch (not for the summary)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from mlops.progress import Progress, parse
from training.metrics_logger import ProgressLogger


class Keep:
    def __init__(self) -> None:
        self.metrics: list[tuple[dict[str, float], int]] = []

    def log_params(self, params: Mapping[str, Any]) -> None:
        pass

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        self.metrics.append((dict(metrics), step))

    def log_artifacts(self, local_dir: Path, artifact_path: str) -> None:
        pass


def test_each_epoch_is_a_progress_line_and_the_summary_is_not(capsys: pytest.CaptureFixture[str]) -> None:
    inner = Keep()
    logger = ProgressLogger(inner, epochs=5)
    logger.log_metrics({"val_auc": 0.71234, "train_loss": 0.5}, step=1)
    logger.log_metrics({"best_val_auc": 0.71234}, step=1)
    lines = capsys.readouterr().out.splitlines()
    assert [parse(line) for line in lines] == [Progress("epoch", 5, completed=1, text="val AUC 0.7123")]
    assert inner.metrics == [({"val_auc": 0.71234, "train_loss": 0.5}, 1), ({"best_val_auc": 0.71234}, 1)]
