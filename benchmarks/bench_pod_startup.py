"""Pod start-up of the platform image on a real node, against the bare Debian base image in the same run.

Starts the API server and a node with the repository's scripts (infra/testing/), then, N times each,
creates a pod and times creation -> container exited 0 (``Succeeded``):
  base      localhost/debian-base:v1 running ``true``          (the node's own floor: sandbox, CNI, runc)
  platform  the platform image running ``python3 -c 'import mlops, components, serving, training'``
  kfp       the platform image importing what validate-data imports (kfp, mlflow, great_expectations)
Prints a Markdown table; the ratio platform/base is the figure to compare across machines.

    python benchmarks/bench_pod_startup.py --repeats 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "infra" / "testing"
NODE_IMAGES = Path.home() / ".cache" / "mlops-node-images"
CASES = {
    "base": ("localhost/debian-base:v1", ["true"]),
    "platform": ("", ["python3", "-c", "import mlops, components, serving, training"]),
    "kfp": ("", ["python3", "-c", "import kfp, mlflow, great_expectations, components.data_validation.core"]),
}


def _script(name: str, env: dict[str, str], timeout: float = 1800) -> str:
    result = subprocess.run(
        ["bash", str(SCRIPTS / name)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""


def _run_pod(core: object, image: str, command: list[str]) -> float:
    from kubernetes import client

    api: client.CoreV1Api = core
    name = f"bench-{uuid.uuid4().hex[:6]}"
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            restart_policy="Never",
            containers=[
                client.V1Container(name="c", image=image, image_pull_policy="Never", command=command)
            ],
        ),
    )
    started = time.monotonic()
    api.create_namespaced_pod("default", pod)
    while True:
        phase = api.read_namespaced_pod(name, "default").status.phase
        if phase in ("Succeeded", "Failed"):
            break
        time.sleep(0.1)
    elapsed = time.monotonic() - started
    api.delete_namespaced_pod(name, "default", grace_period_seconds=0)
    if phase != "Succeeded":
        raise RuntimeError(f"pod {name} ({image} {command}) failed")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from kubernetes import client, config

    build_started = time.monotonic()
    archive, image = _script("build_image.sh", {}).split()
    build_s = time.monotonic() - build_started
    k8s, node = Path(tempfile.mkdtemp(prefix="bench-k8s-")), Path(tempfile.mkdtemp(prefix="bench-node-"))
    k8s_env = {"DIR": str(k8s), "PORT": "26443", "ETCD_PORT": "22379"}
    kubeconfig = _script("start_k8s.sh", k8s_env)
    node_env = {"KUBECONFIG": kubeconfig, "N": str(node), "KPORT": "21250"}
    node_env["IMAGES"] = f"{NODE_IMAGES / 'pause.oci.tar'} {NODE_IMAGES / 'base.oci.tar'} {archive}"
    try:
        node_started = time.monotonic()
        _script("start_node.sh", node_env)
        node_s = time.monotonic() - node_started
        core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
        times: dict[str, list[float]] = {case: [] for case in CASES}
        for _ in range(args.repeats):  # interleaved, so load drifts hit every case alike
            for case, (case_image, command) in CASES.items():
                times[case].append(_run_pod(core, case_image or image, command))
    finally:
        _script("stop_node.sh", {"N": str(node)}, timeout=120)
        _script("stop_k8s.sh", {"DIR": str(k8s)}, timeout=120)
    base = statistics.median(times["base"])
    print(
        f"image {image}: archive {Path(archive).stat().st_size / 1e6:.0f} MB; build_image.sh {build_s:.1f} s"
    )
    print(f"node Ready (start_node.sh, images imported) in {node_s:.1f} s\n")
    print("| pod (create -> Succeeded) | median s | min s | max s | / base |")
    print("| --- | --- | --- | --- | --- |")
    for case, values in times.items():
        median = statistics.median(values)
        print(f"| {case} | {median:.2f} | {min(values):.2f} | {max(values):.2f} | {median / base:.2f} |")


if __name__ == "__main__":
    main()
