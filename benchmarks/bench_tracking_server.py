"""A local run's tracking server: MLflow's app in one process against ``mlflow server``, start to ``/health``.

Both serve the same SQLite store (created by an untimed first start) with the options a local run uses
(one worker, no artifact serving, a path prefix, MLflow's job execution off). Each start is timed from the
launch to the first ``/health`` that answers 200; the CPU seconds are those of every process in the
server's session (the CLI and its uvicorn worker, or the one process), read from ``/proc`` right then.
``/health`` is asked as a local run's tasks ask it (``wait_until_answering``: every 0.2 s), for both alike.
The starts alternate, ``--repeats`` of each.

    ../shared/recipes/quiet.sh .venv/bin/python -m benchmarks.bench_tracking_server
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mlops.tracking.mlflow_app import server_command
from mlops.tracking.served import SERVER_ENVIRONMENT, mlflow_server_command, wait_until_answering

PREFIX = "/bench"


def commands(store: str, artifacts: str, port: int) -> dict[str, list[str]]:
    """The two ways to serve ``store``, by label."""
    return {
        "mlflow server (CLI + uvicorn worker)": mlflow_server_command(
            store, "127.0.0.1", port, "--registry-store-uri", store, "--no-serve-artifacts",
            "--static-prefix", PREFIX, "--default-artifact-root", artifacts,
        ),
        "mlops.tracking.mlflow_app (one process)": server_command(store, "127.0.0.1", port, PREFIX, artifacts),
    }  # fmt: skip


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def session_cpu_s(session: int) -> float:
    """User + system CPU seconds of every live process in ``session``."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == session:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def start_once(command: list[str], port: int, log: Path) -> tuple[float, float]:
    """Seconds to a healthy ``/health``, and the server's CPU seconds by then."""
    started = time.monotonic()
    with log.open("ab") as handle:
        process = subprocess.Popen(
            command,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **SERVER_ENVIRONMENT},
        )
    try:
        wait_until_answering(
            f"http://127.0.0.1:{port}{PREFIX}",
            str(log),
            gone=lambda: "" if process.poll() is None else f"{command[2]} exited with {process.returncode}",
        )
        return time.monotonic() - started, session_cpu_s(process.pid)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-tracking-server-"))
    try:
        store, artifacts = f"sqlite:///{root}/mlflow.db", str(root / "artifacts")
        port = free_port()
        labelled = commands(store, artifacts, port)
        for label, command in labelled.items():
            print(
                f"{label}: first start (untimed: creates the store) {start_once(command, port, root / 'log')[0]:.2f} s"
            )
        figures: dict[str, list[tuple[float, float]]] = {label: [] for label in labelled}
        for repeat in range(args.repeats):
            for label, command in labelled.items():
                wall, cpu = start_once(command, port, root / "log")
                figures[label].append((wall, cpu))
                print(f"{label} #{repeat + 1}: healthy after {wall:.2f} s, CPU {cpu:.2f} s", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print()
    print("| server | start to /health s, median (range) | CPU s by then, median (range) |")
    print("|---|---:|---:|")
    for label, runs in figures.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        print(
            f"| {label} | {statistics.median(walls):.2f} ({min(walls):.2f}–{max(walls):.2f}) | "
            f"{statistics.median(cpus):.2f} ({min(cpus):.2f}–{max(cpus):.2f}) |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
