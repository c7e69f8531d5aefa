"""Data-parallel training with torch.distributed (gloo, 2 CPU processes).

At the same GLOBAL batch size, 2 ranks see exactly the rows of the
single-process batches (a shared DistributedSampler permutation), and DDP
averages their gradients, so the loss curves agree. They still differ in the
last bits: gloo sums gradients in another order than one process's backward,
each rank runs its matmuls with half the threads (another reduction order),
and an odd training split is padded by one repeated row. Dropout would add
per-rank masks, so it is off here.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import torch
import torch.distributed as dist

from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from training.checkpoint import CHECKPOINT_FILE
from training.config import ModelConfig, TrainConfig
from training.distributed import DistributedTrainingError, launch
from training.metrics_logger import NullLogger
from training.trainer import train

pytestmark = pytest.mark.slow

CONFIG = TrainConfig(
    epochs=3,
    batch_size=128,
    learning_rate=5e-3,
    model=ModelConfig(hidden_units=(32, 16), dropout=0.0),
    precision="fp32",
    device="cpu",
    patience=0,
)


@dataclass(frozen=True)
class FileLogger(NullLogger):
    """Picklable logger for spawned ranks: appends (pid, step) lines the test can read back."""

    path: Path

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        with self.path.open("a") as handle:
            handle.write(json.dumps({"pid": os.getpid(), "step": step, "keys": sorted(metrics)}) + "\n")


def _fail_on_rank_one(rank: int, world_size: int) -> None:
    if rank == 1:
        raise ValueError(f"boom on rank {rank} of {world_size}")
    dist.barrier()  # rank 0 would wait forever for rank 1: the launcher must end it


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return generate(SampleDataConfig(rows=3000, seed=2))


def test_two_process_ddp_matches_single_process(frame: pd.DataFrame, tmp_path: Path) -> None:
    single = train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "single")
    ddp_config = CONFIG.model_copy(update={"nproc": 2})
    log = tmp_path / "metrics.jsonl"
    ddp = train(
        frame,
        SAMPLE_SCHEMA,
        ddp_config,
        tmp_path / "ddp",
        checkpoint_dir=tmp_path / "ckpt",
        logger=FileLogger(log),
    )

    assert ddp.system_info["nproc"] == "2" and ddp.system_info["backend"] == "gloo"
    assert [h.epoch for h in ddp.history] == [1, 2, 3]
    for one, two in zip(single.history, ddp.history, strict=True):
        assert two.train_loss == pytest.approx(one.train_loss, rel=2e-3)
        assert two.val_loss == pytest.approx(one.val_loss, rel=2e-3)
        assert two.val_auc == pytest.approx(one.val_auc, abs=5e-3)
    assert ddp.history[-1].train_loss < ddp.history[0].train_loss
    # The model trained by the ranks came back to the caller and was saved.
    assert (tmp_path / "ddp" / "model.pt").is_file()
    x = torch.from_numpy(single.model.spec.encode(single.test_frame))
    with torch.no_grad():
        gap = (torch.sigmoid(ddp.model(x)) - torch.sigmoid(single.model(x))).abs().max().item()
    assert gap < 0.03, f"DDP and single-process predictions differ by up to {gap:.4f}"
    # Rank 0 (one process, not the caller) logged each epoch once; the caller logged the summary.
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    per_epoch = [line for line in lines if "val_auc" in line["keys"]]
    assert [line["step"] for line in per_epoch] == [1, 2, 3]
    assert len({line["pid"] for line in per_epoch}) == 1 and per_epoch[0]["pid"] != os.getpid()
    assert lines[-1]["pid"] == os.getpid() and "best_val_auc" in lines[-1]["keys"]
    # Rank 0 checkpointed every rank's RNG state.
    state = torch.load(tmp_path / "ckpt" / CHECKPOINT_FILE, weights_only=True)
    assert state["epoch"] == 3 and len(state["rng"]) == 2
    # Nothing leaks into the caller: no process group, no live workers.
    assert not dist.is_initialized()
    assert multiprocessing.active_children() == []


def test_a_failing_rank_stops_all_ranks_with_its_error() -> None:
    with pytest.raises(
        DistributedTrainingError, match=r"process 1 of 2 failed: ValueError: boom on rank 1 of 2"
    ):
        launch(_fail_on_rank_one, 2, "gloo", ())
    assert multiprocessing.active_children() == []


def test_launch_rejects_a_single_process() -> None:
    with pytest.raises(ValueError, match="nproc >= 2"):
        launch(_fail_on_rank_one, 1, "gloo", ())


def test_available_cpus_honours_a_pods_cgroup_cpu_limit(tmp_path: Path) -> None:
    from training.loop import available_cpus

    affinity = len(os.sched_getaffinity(0))
    limit = tmp_path / "cpu.max"
    limit.write_text("max 100000\n")
    assert available_cpus(limit) == affinity
    limit.write_text("100000 100000\n")  # a pod limited to 1 CPU
    assert available_cpus(limit) == 1
    limit.write_text("50000 100000\n")  # half a CPU still runs one thread
    assert available_cpus(limit) == 1
    assert available_cpus(tmp_path / "absent") == affinity


def test_the_root_cause_skips_a_record_a_terminated_rank_left_unfinished(tmp_path: Path) -> None:
    """A rank terminated while writing its record (the others are, once one fails) must not hide the cause."""
    from training.distributed import _root_cause

    (tmp_path / "rank0.json").write_text("")  # truncated by the kill before a byte was written
    (tmp_path / "rank2.json").write_text('{"time": 1.0')  # cut mid-record
    (tmp_path / "rank1.json.partial").write_text(json.dumps({"time": 0.5, "error": "not yet published"}))
    assert _root_cause(str(tmp_path)) is None
    (tmp_path / "rank3.json").write_text(json.dumps({"time": 2.0, "error": "RuntimeError: boom"}))
    (tmp_path / "rank4.json").write_text(json.dumps({"time": 3.0, "error": "RuntimeError: follow-on"}))
    assert _root_cause(str(tmp_path)) == (3, "RuntimeError: boom")
