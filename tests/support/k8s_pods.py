"""A training pod's ``torchrun`` command run on this machine, for the tests that need no node.

:class:`tests.support.k8s_controller.JobController` and the cluster worker's own tests give the pod's
command the ``PET_*`` rendezvous environment the Trainer's Torch runtime sets on a single node
(nodes, node rank, master address/port, ranks per node) and run it with this interpreter's torchrun. What runs is the platform's real entry point (``training.cluster_worker``) and
real DDP ranks. What it hides: the container, the pod's resources and the rendezvous by DNS name, which
tests/training/test_training_on_pods.py exercises on real pods made by the real Trainer and JobSet.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def run_pod_command(
    command: Sequence[str], ranks_per_node: int, env: Mapping[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` (``torchrun ...``) as one node of the job; the finished process."""
    assert command[0] == "torchrun", command
    environment = {
        **os.environ,
        **(env or {}),
        "PET_NNODES": "1",
        "PET_NODE_RANK": "0",
        "PET_NPROC_PER_NODE": str(ranks_per_node),
        "PET_MASTER_ADDR": "127.0.0.1",
        "PET_MASTER_PORT": str(free_port()),
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", *command[1:]],
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
