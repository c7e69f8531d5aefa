"""Entry point of every rank of a Kubernetes training job: ``torchrun -m training.cluster_worker URI``.

torchrun (started by the TrainJob's pod) sets ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``; this joins the
process group from them, reads the :class:`~training.loop.WorkerJob` the launcher staged
at ``URI/job.pkl`` (its logger holds the task's tracking store: rank 0 logs through it, with
no tracking variable in the pod's environment), resolves the device against THIS pod (the task that staged the job
may have had no GPU), restores the job's last checkpoint from ``URI/checkpoints/`` when an
earlier attempt of the job left one (a restarted pod has no disk of its own), and runs
:func:`training.loop.run_worker` — the same loop the local launchers run; rank 0 uploads a
checkpoint there after every epoch. Rank 0 writes its result to ``URI/rank0_result.pt`` and, while training,
serves ``mlops_training_*`` gauges for Prometheus on ``MLOPS_METRICS_PORT``.
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mlops import storage
from training.checkpoint import fetch_checkpoint
from training.launcher import JOB_FILE, RESULT_FILE
from training.loop import WorkerJob, run_worker
from training.metrics_logger import ForwardingLogger, MetricsLogger


@dataclass(frozen=True)
class PrometheusLogger(ForwardingLogger):
    """Forwards to the job's logger and mirrors per-epoch throughput and quality as Prometheus gauges."""

    gauges: dict[str, Any]

    @classmethod
    def serve(cls, inner: MetricsLogger, port: int, job_name: str) -> PrometheusLogger:
        from prometheus_client import CollectorRegistry, Gauge, start_http_server

        registry = CollectorRegistry()
        gauges = {
            key: Gauge(f"mlops_training_{key}", help_text, ["job_name"], registry=registry).labels(job_name)
            for key, help_text in (
                ("samples_per_second", "Training rows per second of the last epoch (all ranks)."),
                ("epoch", "Last completed epoch."),
                ("val_auc", "Validation ROC AUC after the last epoch."),
                ("train_loss", "Training loss of the last epoch."),
            )
        }
        start_http_server(port, registry=registry)
        return cls(inner, gauges)

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        super().log_metrics(metrics, step)
        self.gauges["epoch"].set(step)
        for key, value in metrics.items():
            if key in self.gauges:
                self.gauges[key].set(value)


@dataclass(frozen=True)
class EpochPrinter(ForwardingLogger):
    """Forwards to the job's logger and prints one line per epoch on the pod's log: the launcher streams the
    log to the step, so the step shows a cluster job's progress (and when its first epoch ended)."""

    epochs: int

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        super().log_metrics(metrics, step)
        shown = ", ".join(f"{k}={v:.4g}" for k, v in sorted(metrics.items()))
        print(f"rank 0: epoch {step}/{self.epochs}: {shown}", flush=True)


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def _restore_checkpoint(job: WorkerJob, directory: Path, rank: int) -> Path | None:
    """This pod's checkpoint directory, holding the job's last uploaded checkpoint if an earlier attempt left one."""
    if job.checkpoint_uri is None:
        return None
    if fetch_checkpoint(job.checkpoint_uri, directory):
        print(f"rank {rank}: resuming from the checkpoint at {job.checkpoint_uri}", flush=True)
    return directory


def run(staging_uri: str) -> None:
    """Train as the rank torchrun made this process; rank 0 stores the result under ``staging_uri``."""
    import torch
    import torch.distributed as dist

    from training.config import resolve_runtime
    from training.distributed import TIMEOUT
    from training.model import rank_step_macs

    rank, world = _env_int("RANK", 0), _env_int("WORLD_SIZE", 1)
    local_rank, local_world = _env_int("LOCAL_RANK", 0), _env_int("LOCAL_WORLD_SIZE", 1)
    job: WorkerJob = pickle.loads(storage.read_bytes(f"{staging_uri}/{JOB_FILE}"))
    if world != job.config.nproc:
        raise ValueError(
            f"the job was planned for nproc={job.config.nproc} ranks but torchrun started {world}"
        )
    runtime = resolve_runtime(
        job.config.model_copy(update={"nproc": local_world}),
        macs_per_step=rank_step_macs(job.data.spec, job.config),
    )
    if runtime.device_type == "cuda":
        torch.cuda.set_device(local_rank)
    if world > 1:
        dist.init_process_group(runtime.backend, init_method="env://", timeout=TIMEOUT)
    try:
        with tempfile.TemporaryDirectory(prefix="mlops-rank-") as scratch:
            result_path = Path(scratch) / RESULT_FILE if rank == 0 else None
            checkpoint_dir = _restore_checkpoint(job, Path(scratch) / "checkpoint", rank)
            logger: MetricsLogger = job.logger
            port = _env_int("MLOPS_METRICS_PORT", 0)
            if rank == 0 and port:
                logger = PrometheusLogger.serve(logger, port, os.environ.get("MLOPS_JOB_NAME", "training"))
            if rank == 0:
                logger = EpochPrinter(logger, job.config.epochs)
                print(f"rank 0: {world} rank(s) joined on {runtime.device_type}; training starts", flush=True)
            job = replace(
                job, runtime=runtime, result_path=result_path, logger=logger, checkpoint_dir=checkpoint_dir
            )
            run_worker(rank, world, job)
            if result_path is not None:
                storage.write_file(f"{staging_uri}/{RESULT_FILE}", result_path)
    finally:
        if world > 1:
            dist.destroy_process_group()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: torchrun -m training.cluster_worker STAGING_URI", file=sys.stderr)
        return 2
    run(args[0].rstrip("/"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
