"""A 2-pod DDP TrainJob from submission to its first epoch, on the real controllers, and where the time goes.

The cluster case is the train task's own path: :class:`training.kubernetes_launcher.KubernetesLauncher`
stages the job in S3 (Ceph RGW), creates the TrainJob, and Kueue, Kubeflow Trainer and JobSet (the pinned
releases, ``infra/testing/start_controllers.sh``) make two pods on a warm node (platform image already
imported). The baseline, in the same run, is the pods' own command (``torchrun -m
training.cluster_worker``) started directly on this machine with the same job and the Trainer's ``PET_*``
rendezvous: what is left between the two is what Kubernetes adds. Each case is timed from the launcher's
call (staging included) to rank 0's "epoch 1/N" line; the cluster case is split by the objects' own
records (Workload ``QuotaReserved``, pod ``PodScheduled``, container ``startedAt``) and rank 0's log
timestamps ("training starts" after the rendezvous). API timestamps have one-second resolution.

    python -m benchmarks.bench_trainjob_submit --repeats 3
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.node_cluster import BenchNode, running_node, script

ROOT = Path(__file__).resolve().parents[1]
RUNTIMES = ROOT / "infra" / "k8s" / "base" / "platform" / "trainingruntime.yaml"
GATEWAY = "10.244.0.1"
"""The pods' address of this machine (start_node.sh's default pod network, first address)."""
ACCESS_KEY = SECRET_KEY = "bench"
KMS_KEY_ID = "benchkey-1"
BUCKET = "bench"
STARTS, EPOCH = "training starts", ": epoch 1/"


@contextmanager
def running_controllers(kubeconfig: Path) -> Iterator[None]:
    """JobSet, Trainer, Kueue and KServe on fixed ports away from the test suite's."""
    state = Path(tempfile.mkdtemp(prefix="bench-controllers-"))
    env = {"KUBECONFIG": str(kubeconfig), "N": str(state), "PYTHON": sys.executable}
    for i, key in enumerate(("JOBSET", "TRAINER", "KUEUE", "KSERVE")):
        env.update({f"{key}_PORT": str(27443 + i), f"{key}_HEALTH_PORT": str(27453 + i)})
    try:
        script("start_controllers.sh", env, timeout=300)
        yield
    finally:
        script("stop_controllers.sh", env, timeout=120)
        shutil.rmtree(state, ignore_errors=True)


@contextmanager
def running_s3() -> Iterator[str]:
    """Ceph RGW listening on every address (pods reach it at the gateway); its endpoint on this machine."""
    state = Path(tempfile.mkdtemp(prefix="bench-rgw-"))
    env = {
        "DIR": str(state), "MON_PORT": "26789", "RGW_PORT": "27480", "MSGR_MIN": "26800", "MSGR_MAX": "26899",
        "RGW_AK": ACCESS_KEY, "RGW_SK": SECRET_KEY, "BIND": "0.0.0.0", "RGW_KMS_KEY_ID": KMS_KEY_ID,
    }  # fmt: skip
    try:
        yield script("start_rgw.sh", env, timeout=300)
    finally:
        script("stop_rgw.sh", env, timeout=120)
        shutil.rmtree(state, ignore_errors=True)


def _team(node: BenchNode, endpoint: str) -> str:
    """The dev overlay's team rules and queues in a fresh team namespace, the platform runtimes, the S3 Secret."""
    import yaml
    from kubernetes import client

    from cli.manifests import team_rules

    kubectl = ["kubectl", "--kubeconfig", str(node.kubeconfig)]
    subprocess.run([*kubectl, "apply", "--server-side", "-f", str(RUNTIMES)], check=True, capture_output=True)
    ns = "team-bench"
    node.core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=ns, labels={"mlops.platform/role": "team"}))
    )
    objs = team_rules("dev", ns)
    subprocess.run(
        [*kubectl, "apply", "--server-side", "-f", "-"],
        input=yaml.safe_dump_all(objs, sort_keys=False), text=True, check=True, capture_output=True,
    )  # fmt: skip
    keys = {"aws-access-key-id": ACCESS_KEY, "aws-secret-access-key": SECRET_KEY}
    node.core.create_namespaced_secret(
        ns, client.V1Secret(metadata=client.V1ObjectMeta(name="mlops-tracking"), string_data=keys)
    )
    import boto3

    boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
    ).create_bucket(Bucket=BUCKET)  # fmt: skip
    port = endpoint.rsplit(":", 1)[1]
    os.environ.update(
        AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_DEFAULT_REGION="us-east-1",
        MLOPS_S3_SSE="aws:kms", MLOPS_S3_SSE_KMS_KEY_ID=KMS_KEY_ID,
        MLFLOW_S3_ENDPOINT_URL=f"http://{GATEWAY}:{port}",  # the task forwards it to the pods
    )  # fmt: skip
    os.environ.pop("AWS_ENDPOINT_URL", None)
    return ns


def _job(rows: int, epochs: int) -> Any:
    from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
    from training.config import ModelConfig, TrainConfig, resolve_runtime
    from training.data_splits import encode_splits, split_frame
    from training.loop import WorkerJob
    from training.metrics_logger import NullLogger
    from training.model import rank_step_macs

    config = TrainConfig(
        epochs=epochs, batch_size=256, learning_rate=3e-3, model=ModelConfig(hidden_units=(64, 32), dropout=0.0),
        precision="fp32", device="cpu", patience=0, nproc=2,
    )  # fmt: skip
    frame = generate(SampleDataConfig(rows=rows, seed=7))
    data = encode_splits(split_frame(frame, SAMPLE_SCHEMA, config), SAMPLE_SCHEMA)
    return WorkerJob(
        data=data, config=config, runtime=resolve_runtime(config, macs_per_step=rank_step_macs(data.spec, config)), fingerprint="bench", checkpoint_dir=None,
        logger=NullLogger(),
    )  # fmt: skip


@dataclass
class ClusterRun:
    total_s: float
    """Launcher called → rank 0's first "epoch 1/N" line."""
    phases: dict[str, float]
    """Seconds from the launcher's call to each milestone."""
    finished_s: float
    """Launcher called → launcher returned (job done, result read)."""


def _seconds(stamp: str) -> float:
    """An RFC 3339 time (the API's seconds, or the kubelet's nanoseconds) as a Unix timestamp."""
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    return datetime.fromisoformat(whole + "+00:00").timestamp() + (
        float(f"0.{fraction}") if fraction else 0.0
    )


def _rank0_log(node: BenchNode, ns: str, pod: str) -> dict[str, float]:
    """Wall-clock time of rank 0's "training starts" and first epoch lines (the kubelet's timestamps)."""
    found: dict[str, float] = {}
    for line in str(node.core.read_namespaced_pod_log(pod, ns, timestamps=True)).splitlines():
        stamp, _, text = line.partition(" ")
        for key in (STARTS, EPOCH):
            if key in text and key not in found:
                found[key] = _seconds(stamp)
    return found


def cluster_case(node: BenchNode, ns: str, job: Any, cpu_per_worker: str) -> ClusterRun:
    from kubernetes import client

    from training.kubernetes_config import KubernetesJobSettings
    from training.kubernetes_jobs import JOB_LABEL
    from training.kubernetes_launcher import KUEUE_WORKLOADS, KubernetesLauncher

    api = node.core.api_client
    settings = KubernetesJobSettings(
        namespace=ns, staging_uri=f"s3://{BUCKET}/staging", workers=2, cpu_per_worker=cpu_per_worker,
        memory_per_worker="2Gi", training_image=node.image, poll_interval_s=0.2, keep_job=True,
    )  # fmt: skip
    reports: list[tuple[float, str]] = []
    launcher = KubernetesLauncher(
        settings, api_client=api, report=lambda line: reports.append((time.time(), line))
    )
    t0 = time.time()
    launcher.run(job)
    finished = time.time() - t0
    created = next(t for t, line in reports if " created: " in line) - t0
    name = next(line for _, line in reports if " created: " in line).split()[1].split("/")[1]
    (workload,) = [
        w
        for w in client.CustomObjectsApi(api).list_namespaced_custom_object(
            *KUEUE_WORKLOADS[:2], ns, KUEUE_WORKLOADS[2]
        )["items"]
        if w["metadata"]["ownerReferences"][0]["name"] == name
    ]
    conditions = {c["type"]: c for c in workload["status"]["conditions"]}
    pods = node.core.list_namespaced_pod(ns, label_selector=f"{JOB_LABEL}={name}").items
    rank0 = min(pods, key=lambda p: int(p.metadata.labels.get("batch.kubernetes.io/job-completion-index", 0)))
    scheduled = max(
        c.last_transition_time.timestamp()
        for p in pods
        for c in p.status.conditions
        if c.type == "PodScheduled"
    )
    started = max(p.status.container_statuses[0].state.terminated.started_at.timestamp() for p in pods)
    log = _rank0_log(node, ns, rank0.metadata.name)
    phases = {
        "TrainJob created (job staged in S3)": created,
        "Kueue quota reserved": _seconds(conditions["QuotaReserved"]["lastTransitionTime"]) - t0,
        "both pods created": max(p.metadata.creation_timestamp.timestamp() for p in pods) - t0,
        "both pods scheduled": scheduled - t0,
        "both containers started": started - t0,
        "rank 0: rendezvous done, training starts": log[STARTS] - t0,
        "rank 0: epoch 1 ended": log[EPOCH] - t0,
    }
    from training.kubernetes_jobs import TRAINJOB_API

    group, version, plural, _ = TRAINJOB_API
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        group, version, ns, plural, name, propagation_policy="Foreground"
    )
    while node.core.list_namespaced_pod(ns, label_selector=f"{JOB_LABEL}={name}").items:
        time.sleep(0.2)
    return ClusterRun(log[EPOCH] - t0, phases, finished)


def direct_case(job: Any, staging: Path) -> tuple[float, float]:
    """The pods' command on this machine, both ranks in one torchrun: (seconds to "training starts",
    seconds to the first epoch line), from the call (staging the job included)."""
    import socket

    from mlops import storage
    from training.kubernetes_jobs import worker_command
    from training.launcher import JOB_FILE

    t0 = time.monotonic()
    storage.write_bytes(str(staging / JOB_FILE), pickle.dumps(replace(job, result_path=None)))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ, "PET_NNODES": "1", "PET_NODE_RANK": "0", "PET_NPROC_PER_NODE": "2",
        "PET_MASTER_ADDR": "127.0.0.1", "PET_MASTER_PORT": str(port), "PYTHONPATH": str(ROOT),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",  # the venv's torchrun
    }  # fmt: skip
    seen: dict[str, float] = {}
    with subprocess.Popen(
        worker_command(str(staging)), env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            for key in (STARTS, EPOCH):
                if key in line and key not in seen:
                    seen[key] = time.monotonic() - t0
    if proc.returncode != 0 or len(seen) < 2:
        raise RuntimeError(f"the pod command failed (exit {proc.returncode}, saw {sorted(seen)})")
    return seen[STARTS], seen[EPOCH]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--cpu-per-worker",
        default="1",
        help="each pod's CPU (requests = limits); 1 gives the 2 pods this machine's 2 cores, as the baseline has",
    )
    args = parser.parse_args()
    job = _job(args.rows, args.epochs)
    setup = time.monotonic()
    with running_s3() as endpoint, running_node() as node, running_controllers(node.kubeconfig):
        ready = time.monotonic() - setup
        ns = _team(node, endpoint)
        cluster: list[ClusterRun] = []
        direct: list[tuple[float, float]] = []
        # Warm-up: the first pod of an image on a node pays its unpacked layers' page-in.
        cluster_case(node, ns, job, args.cpu_per_worker)
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as staging:
                direct.append(direct_case(job, Path(staging)))
            cluster.append(cluster_case(node, ns, job, args.cpu_per_worker))
    print(f"S3 + node + controllers ready in {ready:.0f} s (node {node.node_s:.0f} s); {args.repeats} repeats, "
          f"{args.rows} rows, 2 ranks, cpu_per_worker={args.cpu_per_worker}, 1 warm-up TrainJob not counted")  # fmt: skip
    print("\n| milestone (s from the launcher's call) | median | min | max |\n| --- | --- | --- | --- |")
    for key in cluster[0].phases:
        values = [run.phases[key] for run in cluster]
        print(f"| {key} | {statistics.median(values):.1f} | {min(values):.1f} | {max(values):.1f} |")
    done = [run.finished_s for run in cluster]
    print(
        f"| launcher returned (job done, result read) | {statistics.median(done):.1f} | {min(done):.1f} | {max(done):.1f} |"
    )
    starts, epochs = [d[0] for d in direct], [d[1] for d in direct]
    print(
        f"| baseline: pod command run directly, training starts | {statistics.median(starts):.1f} | {min(starts):.1f} | {max(starts):.1f} |"
    )
    print(
        f"| baseline: pod command run directly, epoch 1 ended | {statistics.median(epochs):.1f} | {min(epochs):.1f} | {max(epochs):.1f} |"
    )
    total = statistics.median(run.total_s for run in cluster)
    print(f"\nsubmission → first epoch: {total:.1f} s on the cluster, {statistics.median(epochs):.1f} s direct "
          f"({total - statistics.median(epochs):.1f} s added by Kubernetes); budget 60 s")  # fmt: skip


if __name__ == "__main__":
    main()
