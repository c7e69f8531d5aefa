"""A real Kubernetes node (containerd + runc + CNI + scheduler + kubelet) and the platform image on it.

Registered from ``tests/conftest.py``. ``platform_image`` builds ``infra/docker/Dockerfile`` with
buildah (``infra/testing/build_image.sh``, cached in ``~/.cache`` by the hash of what the image is
made of); ``k8s_node`` starts an API server of its own (``node_apiserver``: the other tests'
objects must not land on a real node), adds a node to it and imports the image,
so pods of the platform image really run (``imagePullPolicy: Never``; no registry). Tests that use
either carry the marker ``pods``. What is not here: Services (no kube-proxy), cluster DNS and every
add-on controller: a test reaches a pod at its IP and plays the operator's part itself. Pods reach
this machine's services (S3, MLflow) at the bridge's gateway, :attr:`K8sNode.gateway`.
When the node cannot start the test fails with the reason and the set-up command; it never skips.
"""

from __future__ import annotations

import ipaddress
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.services.kubernetes import KubeCluster, running_cluster
from tests.services.plugin import _free_ports, _start, _stop

MARKER = "pods"
FIXTURES = {"k8s_node", "platform_image", "node_apiserver", "k8s_controllers"}
NODE_IMAGES = Path.home() / ".cache" / "mlops-node-images"
SUBNET = "10.244.0.0/24"
"""The pod network of start_node.sh; its first address is the bridge, the pods' gateway to this machine."""
SETUP = (
    "bash infra/testing/install_node.sh && bash infra/testing/build_k8s.sh"
    " && bash infra/testing/build_controllers.sh"
)


@dataclass(frozen=True)
class PlatformImage:
    archive: Path
    """OCI archive containerd imports."""
    name: str
    """Image reference pods name (``localhost/mlops:<hash>``)."""


@dataclass(frozen=True)
class K8sNode:
    cluster: KubeCluster
    name: str
    image: str
    """The platform image, present on the node."""
    state: Path
    """containerd's and the kubelet's state and logs (``kubelet.log``, ``containerd.log``)."""

    @property
    def gateway(self) -> str:
        """This machine's address as the pods see it."""
        return str(next(ipaddress.ip_network(SUBNET).hosts()))

    def from_pod(self, url: str) -> str:
        """``url`` of a service on this machine (``http://127.0.0.1:PORT``) as a pod must call it."""
        parts = urlsplit(url)
        return urlunsplit(parts._replace(netloc=f"{self.gateway}:{parts.port}"))

    def core(self) -> Any:
        """A ``kubernetes.client.CoreV1Api`` for the admin user."""
        from kubernetes import client

        return client.CoreV1Api(self.cluster.api_client())

    def wait_for_pod(self, name: str, namespace: str, until: str = "done", timeout_s: float = 300) -> Any:
        """Wait until the pod is Succeeded/Failed (``until="done"``) or Ready (``until="ready"``)."""
        core, deadline, pod = self.core(), time.monotonic() + timeout_s, None
        while time.monotonic() < deadline:
            pod = core.read_namespaced_pod(name, namespace)
            if until == "done" and pod.status.phase in ("Succeeded", "Failed"):
                return pod
            if until == "ready" and any(
                c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []
            ):
                return pod
            time.sleep(0.3)
        phase = pod.status.phase if pod is not None else "unknown"
        raise AssertionError(
            f"pod {namespace}/{name} not {until} after {timeout_s:.0f} s (phase {phase}); "
            f"logs:\n{self.logs(name, namespace)}\nkubelet log: {self.state / 'kubelet.log'}"
        )

    def logs(self, name: str, namespace: str, container: str | None = None) -> str:
        try:
            return str(self.core().read_namespaced_pod_log(name, namespace, container=container))
        except Exception as exc:  # a pod that never started has no log: say why instead
            return f"(no log: {exc})"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(MARKER)


@pytest.fixture(scope="session")
def platform_image() -> PlatformImage:
    """The platform image built here by buildah (minutes cold, instant when the tree is unchanged)."""
    last = _start("platform image", "build_image.sh", {}, timeout_s=1800, setup=SETUP)
    archive, name = last.split()
    return PlatformImage(Path(archive), name)


@pytest.fixture(scope="session")
def node_apiserver() -> Iterator[KubeCluster]:
    """The node's own API server: objects other tests create (pods of stand-in controllers, the
    platform's manifests) never land on the real node, and those tests keep a cluster without one."""
    with running_cluster("node's kube-apiserver") as cluster:
        yield cluster


@pytest.fixture(scope="session")
def k8s_node(node_apiserver: KubeCluster, platform_image: PlatformImage) -> Iterator[K8sNode]:
    """A Ready node, on an API server of its own, with the platform image imported (about 30 s)."""
    state = Path(tempfile.mkdtemp(prefix="mlops-test-node-"))
    env = {
        "KUBECONFIG": str(node_apiserver.kubeconfig),
        "N": str(state),
        "IMAGES": f"{NODE_IMAGES / 'pause.oci.tar'} {platform_image.archive}",
        "SUBNET": SUBNET,
    }
    try:
        for attempt in (1, 2):  # free ports are picked here and bound later: one retry covers a lost race
            names = ("KPORT", "SCHED_PORT", "HEALTHZ_PORT", "PROXY_PORT", "PROXY_METRICS_PORT")
            env.update(zip(names, map(str, _free_ports(len(names))), strict=True))
            try:
                name = _start("node", "start_node.sh", env, timeout_s=300, setup=SETUP)
                break
            except pytest.fail.Exception:
                _stop("stop_node.sh", env)
                if attempt == 2:
                    raise
        yield K8sNode(node_apiserver, name, platform_image.name, state)
    finally:
        _stop("stop_node.sh", env)
        shutil.rmtree(state, ignore_errors=True)


@dataclass(frozen=True)
class Controllers:
    """JobSet, Kubeflow Trainer, Kueue and KServe, the real controllers, reconciling on the node's API server."""

    node: K8sNode
    state: Path
    """Their configurations, certificates and logs (``trainer-controller-manager.log``, …)."""

    def log(self, name: str) -> str:
        return (self.state / f"{name}.log").read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="session")
def k8s_controllers(k8s_node: K8sNode) -> Iterator[Controllers]:
    """The releases' own controllers with their CRDs and admission webhooks (infra/testing/start_controllers.sh).

    Started once per session, after the node; objects the tests create are reconciled by them for real."""
    state = Path(tempfile.mkdtemp(prefix="mlops-test-controllers-"))
    env = {"KUBECONFIG": str(k8s_node.cluster.kubeconfig), "N": str(state), "PYTHON": sys.executable}
    try:
        for attempt in (1, 2):  # free ports are picked here and bound later: one retry covers a lost race
            names = [
                f"{key}_{kind}"
                for key in ("JOBSET", "TRAINER", "KUEUE", "KSERVE")
                for kind in ("PORT", "HEALTH_PORT")
            ]
            env.update(zip(names, map(str, _free_ports(len(names))), strict=True))
            try:
                _start("controllers", "start_controllers.sh", env, timeout_s=240, setup=SETUP)
                break
            except pytest.fail.Exception:
                _stop("stop_controllers.sh", env)
                if attempt == 2:
                    raise
        yield Controllers(k8s_node, state)
    finally:
        _stop("stop_controllers.sh", env)
        shutil.rmtree(state, ignore_errors=True)
