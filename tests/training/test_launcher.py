"""The launcher seam: train() runs its ranks through the launcher it is given.

A recording launcher wraps each real one, so the tests see both that the trainer
handed the job to it (and to nothing else) and where the ranks really ran.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest
import torch.distributed as dist

from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from training.config import ModelConfig, TrainConfig
from training.launcher import InProcessLauncher, Launcher, LocalProcessesLauncher, local_launcher
from training.loop import WorkerJob, WorkerResult
from training.metrics_logger import NullLogger
from training.trainer import train

CONFIG = TrainConfig(
    epochs=2,
    batch_size=128,
    learning_rate=5e-3,
    model=ModelConfig(hidden_units=(16,), dropout=0.0),
    precision="fp32",
    device="cpu",
    patience=0,
)


@dataclass(frozen=True)
class PidLogger(NullLogger):
    """Picklable logger: appends the logging process's pid per epoch, so a test sees where rank 0 ran."""

    path: Path

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        if "val_auc" in metrics:
            with self.path.open("a") as handle:
                handle.write(json.dumps({"pid": os.getpid(), "step": step}) + "\n")

    def epoch_pids(self) -> list[int]:
        return [json.loads(line)["pid"] for line in self.path.read_text().splitlines()]


@dataclass
class RecordingLauncher:
    """Delegates to ``inner`` and keeps every job it was given and every result it returned."""

    inner: Launcher
    runs: list[tuple[WorkerJob, WorkerResult]] = field(default_factory=list)

    def run(self, job: WorkerJob) -> WorkerResult:
        result = self.inner.run(job)
        self.runs.append((job, result))
        return result


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return generate(SampleDataConfig(rows=1200, seed=4))


def test_train_runs_one_process_through_the_launcher_it_is_given(frame: pd.DataFrame, tmp_path: Path) -> None:
    launcher = RecordingLauncher(InProcessLauncher())
    logger = PidLogger(tmp_path / "pids.jsonl")
    result = train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "model", logger=logger, launcher=launcher)

    assert len(launcher.runs) == 1
    job, outcome = launcher.runs[0]
    assert job.config == CONFIG and job.logger == logger
    assert [h.epoch for h in result.history] == [1, 2]
    assert [h.val_auc for h in result.history] == [entry["val_auc"] for entry in outcome.history]
    assert logger.epoch_pids() == [os.getpid(), os.getpid()]  # in the caller's own process
    assert (tmp_path / "model" / "model.pt").is_file()


@pytest.mark.slow
def test_train_runs_two_ranks_through_the_launcher_it_is_given(frame: pd.DataFrame, tmp_path: Path) -> None:
    config = CONFIG.model_copy(update={"nproc": 2})
    launcher = RecordingLauncher(LocalProcessesLauncher())
    logger = PidLogger(tmp_path / "pids.jsonl")
    result = train(frame, SAMPLE_SCHEMA, config, tmp_path / "model", logger=logger, launcher=launcher)

    assert len(launcher.runs) == 1 and launcher.runs[0][0].config.nproc == 2
    assert [h.epoch for h in result.history] == [1, 2]
    assert result.history[-1].train_loss < result.history[0].train_loss
    pids = logger.epoch_pids()
    assert len(pids) == 2 and len(set(pids)) == 1 and pids[0] != os.getpid()  # rank 0, a spawned process
    assert not dist.is_initialized()
    assert multiprocessing.active_children() == []


def test_in_process_launcher_refuses_several_ranks(frame: pd.DataFrame, tmp_path: Path) -> None:
    config = CONFIG.model_copy(update={"nproc": 2})
    with pytest.raises(
        ValueError, match="InProcessLauncher runs a single process, but the job asks for nproc=2"
    ):
        train(frame, SAMPLE_SCHEMA, config, tmp_path / "model", launcher=InProcessLauncher())
    assert not (tmp_path / "model").exists()


def test_local_launcher_is_in_process_for_one_rank_and_spawned_for_several() -> None:
    assert isinstance(local_launcher(1), InProcessLauncher)
    assert isinstance(local_launcher(2), LocalProcessesLauncher)
