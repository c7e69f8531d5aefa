"""Training launchers: where the ``nproc`` worker processes of one training job run.

:func:`training.trainer.train` prepares a :class:`~training.loop.WorkerJob` (encoded
splits, config, runtime, checkpoint place) and hands it to a :class:`Launcher`, which
runs :func:`training.loop.run_worker` as every rank and returns rank 0's
:class:`~training.loop.WorkerResult`. The trainer never knows where the ranks ran.

Today's launchers run on this machine: :class:`InProcessLauncher` (one process, the
caller's own) and :class:`LocalProcessesLauncher` (``nproc`` spawned DDP ranks, see
:mod:`training.distributed`). The Kubernetes launcher (a Kubeflow Trainer v2 TrainJob)
goes beside them (``training/kubernetes_launcher.py``): it writes the job to the
artifact store where :func:`training.loop.run_worker_from_file` reads it, creates the
job with ``nproc`` ranks on its pods, which join through the Trainer's
``MASTER_ADDR``/``RANK``/``WORLD_SIZE`` environment, waits for it, and reads rank 0's
result file back, exactly as :class:`LocalProcessesLauncher` does with a temporary
directory.
"""

from __future__ import annotations

import pickle
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import torch

from training.checkpoint import EarlyStopping
from training.distributed import launch
from training.loop import WorkerJob, WorkerResult, run_worker, run_worker_from_file

JOB_FILE = "job.pkl"
RESULT_FILE = "rank0_result.pt"


class Launcher(Protocol):
    """Runs one training job as ``job.config.nproc`` ranks and returns rank 0's result."""

    def run(self, job: WorkerJob) -> WorkerResult:
        """Train ``job`` to the end (or to early stopping); raise if any rank fails."""
        ...


class InProcessLauncher:
    """One rank in the calling process: no spawn, no process group, the cheapest way to train."""

    def run(self, job: WorkerJob) -> WorkerResult:
        if job.config.nproc != 1:
            raise ValueError(
                f"InProcessLauncher runs a single process, but the job asks for nproc={job.config.nproc}; "
                "use LocalProcessesLauncher (or local_launcher) for several"
            )
        result = run_worker(0, 1, job)
        assert result is not None  # rank 0 always returns
        return result


class LocalProcessesLauncher:
    """``nproc`` DDP ranks spawned on this machine; the job and rank 0's result travel as files."""

    def run(self, job: WorkerJob) -> WorkerResult:
        with tempfile.TemporaryDirectory(prefix="mlops-ddp-") as scratch:
            # The job travels as a file, not as spawn arguments: a large argument pickle blocks the parent
            # on a pipe write until the child reads it, hiding a child that dies while starting up.
            job_path, result_path = Path(scratch) / JOB_FILE, Path(scratch) / RESULT_FILE
            with job_path.open("wb") as handle:
                pickle.dump(replace(job, result_path=result_path), handle, protocol=pickle.HIGHEST_PROTOCOL)
            launch(run_worker_from_file, job.config.nproc, job.runtime.backend, (job_path,))
            return load_result(result_path)


def load_result(path: Path) -> WorkerResult:
    """The :class:`WorkerResult` rank 0 saved at ``path`` (see :func:`training.loop.run_worker`)."""
    payload = torch.load(path, map_location="cpu", weights_only=True)
    payload["early_stopping"] = EarlyStopping(**payload["early_stopping"])
    return WorkerResult(**payload)


def local_launcher(nproc: int) -> Launcher:
    """Today's default: in the caller for one process, spawned local ranks for several."""
    return InProcessLauncher() if nproc == 1 else LocalProcessesLauncher()
