"""A real Kubernetes API server (etcd + kube-apiserver + controller manager), started once per session.

Registered from ``tests/conftest.py``. A test asks for ``kube_apiserver`` and gets a running API
server on a free 127.0.0.1 port with RBAC on; such tests carry the marker ``kubernetes``
automatically. The binaries come from ``infra/testing/build_k8s.sh`` (built once per machine
into ``~/.cache``; ``.ci/run`` runs it). This server has no node, scheduler or add-on controllers:
its tests check objects against the published CRDs and play a controller where they need one (each
stand-in says what it hides); the real Kueue, Trainer, JobSet and KServe controllers run with the node
(``tests/services/node.py``, fixture ``k8s_controllers``). When the server cannot start the test fails
with the reason and the build command; it never skips.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.services.plugin import _free_ports, _start, _stop

MARKER = "kubernetes"
FIXTURES = {"kube_apiserver"}


@dataclass(frozen=True)
class KubeCluster:
    kubeconfig: Path
    """Admin kubeconfig (token auth, ``system:masters``)."""
    state: Path
    """Where etcd's data and the servers' logs live (``apiserver.log``, ``kcm.log``)."""

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for the admin user."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run ``kubectl`` against this server (the machine's kubectl, 1.32, against the 1.34 server)."""
        result = subprocess.run(
            ["kubectl", f"--kubeconfig={self.kubeconfig}", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}"
            )
        return result


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(MARKER)


def _k8s_ports() -> dict[str, str]:
    """Every port start_k8s.sh listens on, each chosen free: the port after a free one may be taken."""
    api, etcd, etcd_peer, controller_manager = _free_ports(4)
    return {
        "PORT": str(api),
        "ETCD_PORT": str(etcd),
        "ETCD_PEER_PORT": str(etcd_peer),
        "KCM_PORT": str(controller_manager),
    }


@contextmanager
def running_cluster(name: str = "kube-apiserver") -> Iterator[KubeCluster]:
    """etcd 3.6 + kube-apiserver 1.34 + kube-controller-manager on free ports, RBAC on; stopped on exit."""
    state = Path(tempfile.mkdtemp(prefix="mlops-test-k8s-"))
    env = {"DIR": str(state), **_k8s_ports()}
    try:
        kubeconfig = _start(name, "start_k8s.sh", env, timeout_s=120, setup="bash infra/testing/build_k8s.sh")
        yield KubeCluster(Path(kubeconfig), state)
    finally:
        _stop("stop_k8s.sh", env)
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session")
def kube_apiserver() -> Iterator[KubeCluster]:
    """An API server without nodes, shared by the session's Kubernetes tests (the ``pods`` tests have their own)."""
    with running_cluster() as cluster:
        yield cluster
