"""A real single-node Kubernetes for the pod benchmarks, started with the repository's test scripts.

``build_image.sh`` (cached), ``start_k8s.sh`` (API server + controller manager) and
``start_node.sh`` (containerd, scheduler, kubelet, images imported); stopped on exit. Ports are
fixed away from the test suite's, so a benchmark may run beside an idle test session but not
beside one that runs pods (one node at a time uses containerd's image store).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "infra" / "testing"
NODE_IMAGES = Path.home() / ".cache" / "mlops-node-images"


@dataclass(frozen=True)
class BenchNode:
    core: Any
    """``kubernetes.client.CoreV1Api`` for the admin user."""
    image: str
    """The platform image's reference on the node."""
    archive: Path
    """Its OCI archive."""
    build_s: float
    """Seconds build_image.sh took (a cache hit is a hash check)."""
    node_s: float
    """Seconds until the node was Ready with the images imported."""
    kubeconfig: Path
    """The admin kubeconfig of the node's API server."""


def script(name: str, env: dict[str, str], timeout: float = 1800) -> str:
    """Run one infra/testing script; its last line of output."""
    result = subprocess.run(
        ["bash", str(SCRIPTS / name)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""


@contextmanager
def running_node(with_base_image: bool = False) -> Iterator[BenchNode]:
    """API server + one Ready node holding the platform image (and the bare base image if asked)."""
    from kubernetes import client, config

    started = time.monotonic()
    archive, image = script("build_image.sh", {}).split()
    build_s = time.monotonic() - started
    k8s, node = Path(tempfile.mkdtemp(prefix="bench-k8s-")), Path(tempfile.mkdtemp(prefix="bench-node-"))
    k8s_env = {"DIR": str(k8s), "PORT": "26443", "ETCD_PORT": "22379"}
    images = [
        NODE_IMAGES / "pause.oci.tar",
        *([NODE_IMAGES / "base.oci.tar"] if with_base_image else []),
        archive,
    ]
    try:
        kubeconfig = script("start_k8s.sh", k8s_env)
        started = time.monotonic()
        node_env = {
            "KUBECONFIG": kubeconfig,
            "N": str(node),
            "KPORT": "21250",
            "IMAGES": " ".join(map(str, images)),
        }
        script("start_node.sh", node_env)
        core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
        yield BenchNode(core, image, Path(archive), build_s, time.monotonic() - started, Path(kubeconfig))
    finally:
        script("stop_node.sh", {"N": str(node)}, timeout=120)
        script("stop_k8s.sh", {"DIR": str(k8s)}, timeout=120)
        shutil.rmtree(k8s, ignore_errors=True)  # etcd's data and the node's logs: tens of MB per run
        shutil.rmtree(node, ignore_errors=True)


def wait_for_pod(core: Any, name: str, namespace: str = "default", timeout_s: float = 1800) -> str:
    """Poll until the pod has Succeeded or Failed; its phase."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        phase = str(core.read_namespaced_pod(name, namespace).status.phase)
        if phase in ("Succeeded", "Failed"):
            return phase
        time.sleep(0.1)
    raise TimeoutError(f"pod {namespace}/{name} still running after {timeout_s:.0f} s")
