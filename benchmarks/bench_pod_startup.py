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
import statistics
import time
import uuid
from pathlib import Path

from benchmarks.node_cluster import running_node, wait_for_pod

CASES = {
    "base": ("localhost/debian-base:v1", ["true"]),
    "platform": ("", ["python3", "-c", "import mlops, components, serving, training"]),
    "kfp": (
        "",
        [
            "python3",
            "-c",
            "import kfp, mlflow, great_expectations, components.data_validation.suite_validation",
        ],
    ),
}


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
    phase = wait_for_pod(api, name)
    elapsed = time.monotonic() - started
    api.delete_namespaced_pod(name, "default", grace_period_seconds=0)
    if phase != "Succeeded":
        raise RuntimeError(f"pod {name} ({image} {command}) failed")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {case: [] for case in CASES}
    with running_node(with_base_image=True) as node:
        for _ in range(args.repeats):  # interleaved, so load drifts hit every case alike
            for case, (case_image, command) in CASES.items():
                times[case].append(_run_pod(node.core, case_image or node.image, command))
    base = statistics.median(times["base"])
    size = Path(node.archive).stat().st_size / 1e6
    print(f"image {node.image}: archive {size:.0f} MB; build_image.sh {node.build_s:.1f} s")
    print(f"node Ready (start_node.sh, images imported) in {node.node_s:.1f} s\n")
    print("| pod (create -> Succeeded) | median s | min s | max s | / base |")
    print("| --- | --- | --- | --- | --- |")
    for case, values in times.items():
        median = statistics.median(values)
        print(f"| {case} | {median:.2f} | {min(values):.2f} | {max(values):.2f} | {median / base:.2f} |")


if __name__ == "__main__":
    main()
