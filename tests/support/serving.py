"""Shared fixtures for the serving tests (this module holds no tests of its own).

Building a real model (sample data -> FeatureSpec -> a few training steps -> ONNX
export -> registry) takes ~10 s, so it happens once per pytest process and every
serving test module reuses the store; tests that move aliases or add versions use
their own model names in it. Servers run as real subprocesses (`mlops serve`'s own
code path) on a free 127.0.0.1 port and are stopped with SIGTERM like a pod would be.
"""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

from components.register.version_registration import register_onnx_model
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import Lineage
from mlops.workspace import Workspace

MODEL = "credit-default"


@dataclass(frozen=True)
class DemoStore:
    """A workspace whose registry holds ``credit-default`` v1 (alias champion) and two ONNX exports."""

    workspace: Workspace
    onnx_a: Path
    """Directory holding model A's model.onnx (registered as credit-default v1)."""
    onnx_b: Path
    """Directory holding model B's model.onnx (different weights, so different predictions)."""
    holdout: pd.DataFrame
    """Labelled rows the models never trained on."""

    @cached_property
    def tracking(self) -> TrackingStore:
        """The workspace's store, through the seam (one client for the whole test process)."""
        return TrackingStore(
            tracking_uri=self.workspace.tracking_uri,
            experiment="serving-tests",
            pipeline_run_id="serving-tests",
            artifact_root=self.workspace.artifact_root,
        )


def train_onnx(
    directory: Path,
    frame: pd.DataFrame,
    seed: int,
    hidden_units: tuple[int, ...] = (32, 16),
    poisoned: bool = False,
) -> Path:
    """A briefly trained TabularNet exported to ``directory/model.onnx``.

    ``poisoned``: one weight tensor is NaN after training (as after a diverged run), so the
    exported model loads and runs but every score it returns is NaN.
    """
    import torch

    from mlops.data.features import FeatureSpec
    from training.config import ModelConfig
    from training.model import TabularNet
    from training.onnx_export import export_onnx

    spec = FeatureSpec.fit(frame, SAMPLE_SCHEMA)
    torch.manual_seed(seed)
    model = TabularNet(spec, ModelConfig(hidden_units=hidden_units, dropout=0.0))
    x = torch.from_numpy(spec.encode(frame))
    y = torch.tensor(frame[SAMPLE_SCHEMA.label].to_numpy(), dtype=torch.float32)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(25):
        optimizer.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(model(x), y).backward()
        optimizer.step()
    if poisoned:
        with torch.no_grad():
            model.mlp[0].weight.fill_(float("nan"))
    export_onnx(model, directory / "model.onnx")
    return directory


def register(store: DemoStore, name: str, onnx_dir: Path, alias: str | None = "champion") -> str:
    """Register ``onnx_dir`` as a new version of ``name``; point ``alias`` at it; return the version."""
    lineage = Lineage("serving-tests", "", "digest", "1", "0.1.0", "run")
    registered = register_onnx_model(onnx_dir, store.holdout, name, lineage, store.tracking)
    if alias:
        store.tracking.point_alias(name, alias, registered.version)
    return registered.version


@functools.cache
def demo_store(base: Path) -> DemoStore:
    workspace = Workspace(base / "workspace").create()
    train = generate(SampleDataConfig(rows=1500, seed=11))
    holdout = generate(SampleDataConfig(rows=600, seed=12))
    store = DemoStore(
        workspace=workspace,
        onnx_a=train_onnx(base / "onnx-a", train, seed=0),
        onnx_b=train_onnx(base / "onnx-b", train, seed=1, hidden_units=(16,)),
        holdout=holdout,
    )
    register(store, MODEL, store.onnx_a)
    return store


def encoded(store: DemoStore, rows: int, offset: int = 0) -> np.ndarray:
    """Encoded float32 rows of the holdout frame, exactly what a V2 client sends."""
    from mlops.model.onnx_model import OnnxScorer

    spec = OnnxScorer.load(store.onnx_a / "model.onnx").spec
    return spec.encode(store.holdout.iloc[offset : offset + rows])


def direct(onnx_dir: Path, x: np.ndarray) -> np.ndarray:
    """Reference probabilities straight from ONNX Runtime, no server involved."""
    from mlops.model.onnx_model import OnnxScorer

    return OnnxScorer.load(onnx_dir / "model.onnx").predict_encoded(x)


def v2_body(x: np.ndarray, request_id: str | None = None) -> dict[str, object]:
    values = [None if np.isnan(v) else float(v) for v in x.ravel()]
    body: dict[str, object] = {
        "inputs": [{"name": "features", "shape": list(x.shape), "datatype": "FP32", "data": values}]
    }
    if request_id is not None:
        body["id"] = request_id
    return body


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ServerProcess:
    url: str
    process: subprocess.Popen[str]
    log_path: Path
    grpc_port: int | None = None
    """The gRPC port, when the server was asked for one (``grpc=True``)."""

    @property
    def grpc_address(self) -> str:
        assert self.grpc_port is not None, "start the server with running_server(..., grpc=True)"
        return f"127.0.0.1:{self.grpc_port}"

    def log(self) -> str:
        return self.log_path.read_text()


def serve_command(store: DemoStore, port: int, *flags: str) -> list[str]:
    """``mlops serve`` on ``port``; the demo model by name unless ``flags`` name one: the shared store holds
    many models (other tests register their own), and serve asks which when there is more than one."""
    if not any(f == "--model-name" or f.startswith("--model-name=") for f in flags):
        flags = ("--model-name", MODEL, *flags)
    return [
        sys.executable,
        "-m",
        "cli.commands.serve",
        "--workspace",
        str(store.workspace.root),
        "--port",
        str(port),
        *flags,
    ]


def clean_env() -> dict[str, str]:
    """The environment of a user's shell, without any ``MLFLOW_*`` variable of this process (a server
    that ignored its --tracking-uri must not pass by reading MLFLOW_TRACKING_URI instead)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    return {**env, "PYTHONUNBUFFERED": "1"}


PORT_TAKEN = ("address already in use", "failed to bind")
"""What a server's log says (uvicorn for HTTP, gRPC for its port; compared in lower case) when a port free_port found was taken before the server bound it (an outgoing
connection of another test worker draws its local port from the same ephemeral range)."""


@contextmanager
def running_server(
    store: DemoStore, *flags: str, grpc: bool = False, timeout_s: float = 90.0, attempts: int = 3
) -> Iterator[ServerProcess]:
    """``mlops serve`` in a subprocess, ready when /v2/health/ready answers; SIGTERM on exit.

    The ports are chosen here (HTTP, and gRPC with ``grpc``: ``ServerProcess.grpc_address``), so a port
    taken between choosing and binding is chosen again, up to ``attempts`` starts; any other early exit
    fails at once.
    """
    for attempt in range(1, attempts + 1):
        server = _start(store, flags, grpc)
        try:
            _wait_ready(server, timeout_s)
        except PortTaken:
            stop(server.process)
            if attempt == attempts:
                raise
            continue
        except BaseException:
            stop(server.process)
            raise
        break
    try:
        yield server
    finally:
        stop(server.process)


class PortTaken(RuntimeError):
    """The server could not bind a port chosen for it."""


def _start(store: DemoStore, flags: tuple[str, ...], grpc: bool) -> ServerProcess:
    port = free_port()
    grpc_port = free_port() if grpc else None
    given = (*flags, "--grpc-port", str(grpc_port)) if grpc_port is not None else flags
    log_path = store.workspace.root / f"server-{port}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            serve_command(store, port, *given),
            cwd=store.workspace.root,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            env=clean_env(),
        )
    return ServerProcess(f"http://127.0.0.1:{port}", process, log_path, grpc_port)


def _wait_ready(server: ServerProcess, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if server.process.poll() is not None:
            log = server.log()
            taken = any(words in log.lower() for words in PORT_TAKEN)
            raise (PortTaken if taken else RuntimeError)(
                f"server exited with {server.process.returncode}:\n{log}"
            )
        try:
            if httpx.get(f"{server.url}/v2/health/ready", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"server not ready after {timeout_s} s:\n{server.log()}")
        time.sleep(0.1)


def stop(process: subprocess.Popen[str]) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode
