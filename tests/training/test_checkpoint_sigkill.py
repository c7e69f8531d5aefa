"""A training process killed with SIGKILL mid-epoch: the re-run resumes from the last checkpoint and ends
exactly where an uninterrupted run does. What was lost: the epoch in flight (measured and printed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from mlops.data.sample_data import SAMPLE_SCHEMA
from tests.training.test_checkpoint import CONFIG, Recorder, _same_run, frame, uninterrupted
from training.checkpoint import CHECKPOINT_FILE
from training.trainer import TrainResult, train

__all__ = ["frame", "uninterrupted"]

CHILD = """
import sys, time
from pathlib import Path
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from tests.training.test_checkpoint import CONFIG
from training.metrics_logger import NullLogger
from training.trainer import train

marker = Path(sys.argv[2])

class Announce(NullLogger):
    def log_metrics(self, metrics, step):
        if "val_auc" in metrics:  # the epoch's checkpoint is written before its metrics are logged
            marker.write_text(str(step))

train(generate(SampleDataConfig(rows=2500, seed=11)), SAMPLE_SCHEMA, CONFIG, Path(sys.argv[1]) / "model",
      checkpoint_dir=Path(sys.argv[1]) / "ckpt", logger=Announce())
"""


def test_a_training_process_killed_mid_epoch_resumes_from_its_last_checkpoint(
    frame: pd.DataFrame, uninterrupted: TrainResult, tmp_path: Path
) -> None:
    marker = tmp_path / "epoch-done"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), str(marker)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 300
    checkpoint = tmp_path / "ckpt" / CHECKPOINT_FILE
    # Checkpoints are written in the background: wait until epoch 1 is logged *and* its file has landed.
    while not (marker.is_file() and marker.read_text() and checkpoint.is_file()):
        assert child.poll() is None, child.stdout.read().decode() if child.stdout else ""
        assert time.monotonic() < deadline
        time.sleep(0.005)
    killed_after = int(marker.read_text())
    os.kill(child.pid, signal.SIGKILL)  # the next epoch is in flight
    assert child.wait(timeout=60) == -signal.SIGKILL
    leftovers = sorted(p.name for p in (tmp_path / "ckpt").iterdir() if p.name != CHECKPOINT_FILE)

    resumed = train(
        frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "model", checkpoint_dir=tmp_path / "ckpt", logger=Recorder()
    )
    lost = killed_after - resumed.resumed_from_epoch  # logged epochs whose work the re-run repeats
    print(
        f"SIGKILL after epoch {killed_after} was logged: resumed from epoch {resumed.resumed_from_epoch}; "
        f"finished epochs lost: {lost} (plus the epoch in flight); stray files {leftovers}"
    )
    assert 1 <= resumed.resumed_from_epoch < CONFIG.epochs and 0 <= lost <= 1
    _same_run(resumed, uninterrupted)
