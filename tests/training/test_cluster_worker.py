"""The pods' entry point trains exactly like the local launchers, under a real torchrun."""

from __future__ import annotations

import pickle
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import pytest

from mlops import storage
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from tests.support.k8s_pods import free_port, run_pod_command
from training.checkpoint import CHECKPOINT_FILE
from training.cluster_worker import PrometheusLogger, main
from training.config import ModelConfig, TrainConfig
from training.kubernetes_jobs import worker_command
from training.launcher import JOB_FILE, RESULT_FILE, LocalProcessesLauncher, load_result
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
    nproc=2,
)


@dataclass
class TorchrunPodLauncher:
    """Stages the job as the Kubernetes launcher does, then runs the pod command on this machine."""

    staging: Path
    metrics_port: int = 0
    log: str = ""
    """What the pod command printed (stdout): the pod's log as the launcher streams it."""

    def run(self, job: WorkerJob) -> WorkerResult:
        storage.write_bytes(str(self.staging / JOB_FILE), pickle.dumps(replace(job, result_path=None)))
        env = {"MLOPS_METRICS_PORT": str(self.metrics_port), "MLOPS_JOB_NAME": "train-test"}
        done = run_pod_command(worker_command(str(self.staging)), job.config.nproc, env)
        assert done.returncode == 0, done.stderr[-3000:]
        self.log = done.stdout
        return load_result(self.staging / RESULT_FILE)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return generate(SampleDataConfig(rows=1200, seed=4))


def test_torchrun_ranks_train_like_the_local_launcher(frame: pd.DataFrame, tmp_path: Path) -> None:
    pod = TorchrunPodLauncher(tmp_path / "stage", free_port())
    pods = train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "pods", launcher=pod)
    local = train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "local", launcher=LocalProcessesLauncher())
    assert pods.epochs_run == local.epochs_run == 2
    assert pods.best_val_auc == pytest.approx(local.best_val_auc, abs=1e-6)
    assert [h.val_loss for h in pods.history] == pytest.approx([h.val_loss for h in local.history], abs=1e-6)
    assert (tmp_path / "stage" / RESULT_FILE).is_file()
    # Rank 0 alone says when training starts and how each epoch ended, on the pod's log.
    lines = [line for line in pod.log.splitlines() if line.startswith("rank ")]
    assert lines[0] == "rank 0: 2 rank(s) joined on cpu; training starts", pod.log
    epochs = [line for line in lines if ": epoch " in line]
    assert [line.split(":")[1] for line in epochs] == [" epoch 1/2", " epoch 2/2"], pod.log
    assert f"val_auc={pods.history[0].val_auc:.4g}" in epochs[0], epochs


def test_a_job_planned_for_other_ranks_fails_clearly(frame: pd.DataFrame, tmp_path: Path) -> None:
    class OneRankPod(TorchrunPodLauncher):
        def run(self, job: WorkerJob) -> WorkerResult:
            storage.write_bytes(str(self.staging / JOB_FILE), pickle.dumps(job))
            done = run_pod_command(worker_command(str(self.staging)), 1)
            assert done.returncode != 0
            assert "planned for nproc=2 ranks but torchrun started 1" in done.stderr
            raise RuntimeError("failed as expected")

    with pytest.raises(RuntimeError, match="failed as expected"):
        train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "m", launcher=OneRankPod(tmp_path / "stage"))


def test_entry_point_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: torchrun -m training.cluster_worker STAGING_URI" in capsys.readouterr().err


def test_rank0_serves_training_gauges_for_prometheus() -> None:
    port = free_port()
    logger = PrometheusLogger.serve(NullLogger(), port, "train-x")
    logger.log_metrics({"samples_per_second": 1234.5, "val_auc": 0.75, "other": 1.0}, step=3)
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    assert 'mlops_training_samples_per_second{job_name="train-x"} 1234.5' in body
    assert 'mlops_training_epoch{job_name="train-x"} 3.0' in body
    assert 'mlops_training_val_auc{job_name="train-x"} 0.75' in body


class KilledAfterEpoch(NullLogger):
    """A pod killed right after ``epoch`` was checkpointed (the upload finishes first, as the writer waits)."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        if step == self.epoch:
            raise RuntimeError(f"killed after epoch {step}")


@dataclass
class RestartingPodLauncher:
    """Stages like the Kubernetes launcher (checkpoints next to the job); the first attempt is killed."""

    staging: Path
    attempts: list[str]

    def run(self, job: WorkerJob) -> WorkerResult:
        staged = replace(
            job, result_path=None, checkpoint_dir=None, checkpoint_uri=str(self.staging / "ckpt")
        )
        for logger in (KilledAfterEpoch(2), NullLogger()):  # the same job, restarted with a fresh pod
            storage.write_bytes(str(self.staging / JOB_FILE), pickle.dumps(replace(staged, logger=logger)))
            try:
                main([str(self.staging)])
                self.attempts.append("finished")
            except RuntimeError as exc:
                self.attempts.append(str(exc))
        return load_result(self.staging / RESULT_FILE)


def test_a_restarted_pod_resumes_from_the_uploaded_checkpoint(
    frame: pd.DataFrame, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = CONFIG.model_copy(update={"nproc": 1, "epochs": 4})
    attempts: list[str] = []
    resumed = train(
        frame, SAMPLE_SCHEMA, config, tmp_path / "m", launcher=RestartingPodLauncher(tmp_path / "s", attempts)
    )
    assert attempts == ["killed after epoch 2", "finished"]
    assert (tmp_path / "s" / "ckpt" / CHECKPOINT_FILE).is_file()
    assert "resuming from the checkpoint at" in capsys.readouterr().out
    assert resumed.resumed_from_epoch == 2
    whole = train(frame, SAMPLE_SCHEMA, config, tmp_path / "w")
    assert [h.val_loss for h in resumed.history] == pytest.approx(
        [h.val_loss for h in whole.history], abs=1e-6
    )
