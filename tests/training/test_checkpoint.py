"""Per-epoch checkpoints: a restarted run ends exactly where an uninterrupted one does."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch

from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from training.checkpoint import CHECKPOINT_FILE, EarlyStopping
from training.config import ModelConfig, TrainConfig
from training.metrics_logger import NullLogger
from training.trainer import TrainResult, train

# Dropout on, so a resume that failed to restore the RNG state would draw different masks and diverge.
CONFIG = TrainConfig(
    epochs=4,
    batch_size=128,
    learning_rate=5e-3,
    model=ModelConfig(hidden_units=(32, 16), dropout=0.2),
    precision="fp32",
    patience=0,
)


class Crash(RuntimeError):
    pass


class CrashAfterEpoch(NullLogger):
    """Stands in for a pod being killed: fails right after the given epoch was checkpointed."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.steps: list[int] = []

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        self.steps.append(step)
        if step == self.epoch and "val_auc" in metrics:
            raise Crash(f"killed after epoch {step}")


class Recorder(NullLogger):
    def __init__(self) -> None:
        self.metrics: list[tuple[int, dict[str, Any]]] = []

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        self.metrics.append((step, dict(metrics)))


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return generate(SampleDataConfig(rows=2500, seed=11))


@pytest.fixture(scope="module")
def uninterrupted(frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> TrainResult:
    return train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path_factory.mktemp("full") / "model")


def _same_run(a: TrainResult, b: TrainResult) -> None:
    assert [(h.epoch, h.train_loss, h.val_loss, h.val_auc) for h in a.history] == [
        (h.epoch, h.train_loss, h.val_loss, h.val_auc) for h in b.history
    ]
    for (name, x), y in zip(a.model.state_dict().items(), b.model.state_dict().values(), strict=True):
        assert torch.equal(x, y), name
    assert (a.best_epoch, a.best_val_auc) == (b.best_epoch, b.best_val_auc)


def test_resume_after_a_crash_matches_an_uninterrupted_run(
    frame: pd.DataFrame, uninterrupted: TrainResult, tmp_path: Path
) -> None:
    checkpoints = tmp_path / "ckpt"
    crash = CrashAfterEpoch(2)
    with pytest.raises(Crash):
        train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "model", checkpoint_dir=checkpoints, logger=crash)
    assert sorted(p.name for p in checkpoints.iterdir()) == [CHECKPOINT_FILE]  # no temp file left behind

    recorder = Recorder()
    resumed = train(
        frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "model", checkpoint_dir=checkpoints, logger=recorder
    )

    assert resumed.resumed_from_epoch == 2
    _same_run(resumed, uninterrupted)
    # The restarted run re-logs the restored epochs, so its tracker shows the whole curve.
    assert [step for step, m in recorder.metrics if "val_auc" in m] == [1, 2, 3, 4]


def test_raising_epochs_continues_a_finished_run(
    frame: pd.DataFrame, uninterrupted: TrainResult, tmp_path: Path
) -> None:
    checkpoints = tmp_path / "ckpt"
    short = CONFIG.model_copy(update={"epochs": 2})
    first = train(frame, SAMPLE_SCHEMA, short, tmp_path / "m1", checkpoint_dir=checkpoints)
    assert first.epochs_run == 2 and first.resumed_from_epoch == 0

    resumed = train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "m2", checkpoint_dir=checkpoints)
    assert resumed.resumed_from_epoch == 2
    _same_run(resumed, uninterrupted)

    # A retry of an already finished task trains nothing and returns the same model.
    again = train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "m3", checkpoint_dir=checkpoints)
    assert again.resumed_from_epoch == 4
    _same_run(again, uninterrupted)

    with pytest.raises(ValueError, match="already holds 4 epochs, more than epochs=3"):
        train(
            frame,
            SAMPLE_SCHEMA,
            CONFIG.model_copy(update={"epochs": 3}),
            tmp_path / "m4",
            checkpoint_dir=checkpoints,
        )


def test_checkpoint_of_different_settings_or_data_is_refused(frame: pd.DataFrame, tmp_path: Path) -> None:
    checkpoints = tmp_path / "ckpt"
    one_epoch = CONFIG.model_copy(update={"epochs": 1})
    train(frame, SAMPLE_SCHEMA, one_epoch, tmp_path / "m", checkpoint_dir=checkpoints)
    other_lr = TrainConfig(**{**one_epoch.model_dump(), "learning_rate": 1e-2})
    with pytest.raises(ValueError, match="different data or settings.*delete this one"):
        train(frame, SAMPLE_SCHEMA, other_lr, tmp_path / "m", checkpoint_dir=checkpoints)
    with pytest.raises(ValueError, match="different data or settings"):
        train(frame.iloc[:-10], SAMPLE_SCHEMA, one_epoch, tmp_path / "m", checkpoint_dir=checkpoints)


def test_checkpoint_holds_the_full_training_state(frame: pd.DataFrame, tmp_path: Path) -> None:
    train(
        frame, SAMPLE_SCHEMA, CONFIG.model_copy(update={"epochs": 2}), tmp_path / "m", checkpoint_dir=tmp_path
    )
    state = torch.load(tmp_path / CHECKPOINT_FILE, weights_only=True)
    assert state["epoch"] == 2 and len(state["history"]) == 2
    assert {"model", "best_model", "optimizer", "scaler", "early_stopping", "rng", "fingerprint"} <= set(
        state
    )
    assert state["optimizer"]["state"]  # Adam moments, not just hyperparameters
    assert set(state["rng"][0]) == {"torch", "cuda", "numpy", "python"}
    assert EarlyStopping(**state["early_stopping"]).best_epoch in (1, 2)


def test_unreadable_checkpoint_names_the_file(frame: pd.DataFrame, tmp_path: Path) -> None:
    (tmp_path / CHECKPOINT_FILE).write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=f"cannot read checkpoint .*{CHECKPOINT_FILE}.*delete it"):
        train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "m", checkpoint_dir=tmp_path)
