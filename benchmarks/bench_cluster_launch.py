"""What a cluster job's pod path costs over the local launcher, for the same training.

Both sides train the same rows with the same config and ``nproc`` ranks. The local side
is :class:`training.launcher.LocalProcessesLauncher` (spawned ranks, job via a temp file).
The pod side is what every pod of a TrainJob runs, on this machine: the job
staged through ``mlops.storage``, ``torchrun -m training.cluster_worker`` started with
the ``PET_*`` rendezvous environment, rank 0's result written back and read. Cluster
scheduling and image pulls come on top and are not measured here (no kubelet).

    python benchmarks/bench_cluster_launch.py --rows 20000 --epochs 3 --nproc 2 --repeats 2
"""

from __future__ import annotations

import argparse
import functools
import os
import pickle
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from training.config import TrainConfig
    from training.launcher import Launcher
    from training.loop import WorkerJob, WorkerResult

REPO = Path(__file__).resolve().parents[1]


@dataclass
class PodPathLauncher:
    """Stage, torchrun the pod command, read the result: a pod's work without Kubernetes."""

    staging: Path

    def run(self, job: WorkerJob) -> WorkerResult:
        from mlops import storage
        from training.kubernetes_jobs import worker_command
        from training.launcher import JOB_FILE, RESULT_FILE, load_result

        storage.write_bytes(str(self.staging / JOB_FILE), pickle.dumps(replace(job, result_path=None)))
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env = {
            **os.environ,
            "PET_NNODES": "1",
            "PET_NODE_RANK": "0",
            "PET_NPROC_PER_NODE": str(job.config.nproc),
            "PET_MASTER_ADDR": "127.0.0.1",
            "PET_MASTER_PORT": str(port),
            "PYTHONPATH": str(REPO),
            "MLOPS_METRICS_PORT": "0",
        }
        command = worker_command(str(self.staging))
        subprocess.run([sys.executable, "-m", "torch.distributed.run", *command[1:]], env=env, check=True)
        return load_result(self.staging / RESULT_FILE)


def timed(
    launcher_factory: Callable[[], Launcher], frame: pd.DataFrame, config: TrainConfig, out: Path
) -> tuple[float, float]:
    from mlops.data.sample_data import SAMPLE_SCHEMA
    from training.trainer import train

    start = time.perf_counter()
    result = train(frame, SAMPLE_SCHEMA, config, out, launcher=launcher_factory())
    return time.perf_counter() - start, result.best_val_auc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    from mlops.data.sample_data import SampleDataConfig, generate
    from training.config import TrainConfig
    from training.launcher import LocalProcessesLauncher

    frame = generate(SampleDataConfig(rows=args.rows, seed=1))
    config = TrainConfig(epochs=args.epochs, patience=0, nproc=args.nproc, device="cpu", precision="fp32")
    local: list[float] = []
    pod: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for i in range(args.repeats):
            seconds, auc_local = timed(LocalProcessesLauncher, frame, config, root / f"local{i}")
            local.append(seconds)
            stage = root / f"stage{i}"
            seconds, auc_pod = timed(
                functools.partial(PodPathLauncher, stage), frame, config, root / f"pod{i}"
            )
            pod.append(seconds)
    print(f"rows={args.rows} epochs={args.epochs} nproc={args.nproc} repeats={args.repeats}")
    print(f"local launcher (spawned ranks): median {statistics.median(local):.2f} s  {local}")
    print(f"pod path (stage + torchrun + result): median {statistics.median(pod):.2f} s  {pod}")
    print(f"ratio pod/local: {statistics.median(pod) / statistics.median(local):.2f}")
    print(f"val AUC local {auc_local:.4f} pod {auc_pod:.4f}")


if __name__ == "__main__":
    main()
