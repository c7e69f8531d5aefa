"""2-pod DDP against 1-pod training on the same data, on a real node, in one run.

Each case runs the training pods' real command (``torchrun -m training.cluster_worker STAGE``, the
TrainJob's) as pods of the platform image, with the rendezvous variables the Trainer sets
(``PET_NNODES``, ``PET_NODE_RANK``, ``PET_MASTER_ADDR`` …). Cases: one rank in a 1-CPU pod (the
baseline), one rank in a 2-CPU pod (the same cores as the DDP case, no DDP), and two ranks in 1-CPU
pods talking gloo across their network namespaces. Efficiency = speed-up over the baseline / pods. The
job is staged on a hostPath both cases share (no S3 in the way). Samples/s is rank 0's own count
(training rows x epochs / loop seconds, validation and checkpoints included); the wall column adds
pod start-up and torch's rendezvous. Cases are interleaved, ``--repeats`` times each.

    python -m benchmarks.bench_pods_training --rows 200000 --epochs 3 --repeats 2
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.node_cluster import running_node, wait_for_pod

MASTER_PORT = 29400


def _stage(directory: Path, rows: int, epochs: int, nproc: int, batch_size: int) -> None:
    from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
    from training.config import ModelConfig, TrainConfig, resolve_runtime
    from training.data_splits import encode_splits, split_frame
    from training.launcher import JOB_FILE
    from training.loop import WorkerJob
    from training.metrics_logger import NullLogger
    from training.model import rank_step_macs

    config = TrainConfig(
        epochs=epochs,
        batch_size=batch_size,
        model=ModelConfig(hidden_units=(128, 64), dropout=0.0),
        precision="fp32",
        device="cpu",
        patience=0,
        nproc=nproc,
    )
    frame = generate(SampleDataConfig(rows=rows, seed=3))
    data = encode_splits(split_frame(frame, SAMPLE_SCHEMA, config), SAMPLE_SCHEMA)
    job = WorkerJob(
        data,
        config,
        resolve_runtime(config, macs_per_step=rank_step_macs(data.spec, config)),
        "bench",
        None,
        NullLogger(),
    )
    (directory / JOB_FILE).write_bytes(pickle.dumps(job))


def _pod(name: str, image: str, stage: Path, nodes: int, rank: int, master: str, cpus: str) -> dict[str, Any]:
    env = {
        "PET_NNODES": str(nodes),
        "PET_NPROC_PER_NODE": "1",
        "PET_NODE_RANK": str(rank),
        "PET_MASTER_ADDR": master,
        "PET_MASTER_PORT": str(MASTER_PORT),
        "MLOPS_METRICS_PORT": "0",
        "PYTHONUNBUFFERED": "1",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "node",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": ["torchrun", "-m", "training.cluster_worker", str(stage)],
                    "env": [{"name": k, "value": v} for k, v in env.items()],
                    "resources": {"requests": {"cpu": cpus}, "limits": {"cpu": cpus}},
                    "volumeMounts": [{"name": "stage", "mountPath": str(stage)}],
                }
            ],
            "volumes": [{"name": "stage", "hostPath": {"path": str(stage), "type": "Directory"}}],
        },
    }


def _run(core: Any, image: str, stage: Path, nodes: int, cpus: str) -> tuple[float, float]:
    """One training job as ``nodes`` pods; (rank 0's samples/s, wall seconds from creation to done)."""
    from training.launcher import RESULT_FILE, load_result

    (stage / RESULT_FILE).unlink(missing_ok=True)
    names = [f"ddp-{nodes}-{rank}-{time.monotonic_ns() % 10**6}" for rank in range(nodes)]
    started = time.monotonic()
    core.create_namespaced_pod("default", _pod(names[0], image, stage, nodes, 0, "127.0.0.1", cpus))
    master = ""
    while not master:
        master = core.read_namespaced_pod(names[0], "default").status.pod_ip or ""
        time.sleep(0.1)
    for rank in range(1, nodes):
        core.create_namespaced_pod("default", _pod(names[rank], image, stage, nodes, rank, master, cpus))
    phases = [wait_for_pod(core, name) for name in names]
    wall = time.monotonic() - started
    if phases != ["Succeeded"] * nodes:
        logs = core.read_namespaced_pod_log(names[0], "default", tail_lines=30)
        raise RuntimeError(f"{nodes}-pod job failed ({phases}):\n{logs}")
    for name in names:
        core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
    result = load_result(stage / RESULT_FILE)
    return result.rows_trained / result.loop_seconds, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--batch-size", type=int, default=512, help="global batch (each of 2 ranks takes half)"
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-ddp-"))
    stages = {nodes: root / f"{nodes}-pods" for nodes in (1, 2)}
    for nodes, stage in stages.items():
        stage.mkdir()
        stage.chmod(0o777)  # the image's user is not root
        _stage(stage, args.rows, args.epochs, nodes, args.batch_size)
    cases = (("1 pod x 1 CPU", 1, "1"), ("1 pod x 2 CPUs", 1, "2"), ("2 pods x 1 CPU (DDP)", 2, "1"))
    results: dict[str, list[tuple[float, float]]] = {label: [] for label, _, _ in cases}
    with running_node() as node:
        for _ in range(args.repeats):
            for label, nodes, cpus in cases:
                results[label].append(_run(node.core, node.image, stages[nodes], nodes, cpus))
    base = statistics.median(s for s, _ in results[cases[0][0]])
    print(
        f"{args.rows} rows (70% trained), {args.epochs} epochs, MLP 128-64, batch {args.batch_size}, fp32, gloo; median of {args.repeats}\n"
    )
    print(
        "| job | samples/s (rank 0 loop) | wall s (pods created -> done) | speed-up vs 1 pod x 1 CPU | efficiency |"
    )
    print("| --- | --- | --- | --- | --- |")
    for label, nodes, _ in cases:
        speed = statistics.median(s for s, _ in results[label])
        wall = statistics.median(w for _, w in results[label])
        print(f"| {label} | {speed:,.0f} | {wall:.1f} | {speed / base:.2f}x | {speed / base / nodes:.0%} |")


if __name__ == "__main__":
    main()
