"""kfp.local's subprocess runner with warm steps: a lightweight component's step forks from the warm process.

``kfp.local.SubprocessRunner`` runs each step through ``subprocess_task_handler.run_local_subprocess``
(the command, the task's environment; it prints the step's output line by line and returns its exit
status). :func:`warm_steps` puts :meth:`WarmSteps.run` in that place for one local run: the same
contract (same output, same status, same environment and working directory), with the step forked from
:mod:`cli.warm_steps.zygote` instead of a new interpreter that imports torch, MLflow and Great
Expectations again. A command that is not KFP's lightweight one, a warm process that is not ready in
:data:`READY_TIMEOUT_S` or that died, runs cold through kfp.local's own function, and the step log says so.
The same components run unchanged under ``--runner docker`` and on a cluster, where each step is a
container.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from cli.warm_steps.program import RUNTIME_ENV, lightweight_program
from cli.warm_steps.zygote import EXIT_STATUS_PREFIX
from mlops.workspace import Workspace

READY_TIMEOUT_S = 60.0
"""How long a step waits for the warm process to listen before it runs cold (it listens before it imports)."""

RunSubprocess = Callable[..., int]
"""``run_local_subprocess(full_command, env_vars=None) -> int``, kfp.local's signature."""


class WarmSteps:
    """One warm process for one local run, and the steps it forks."""

    def __init__(self, cold: RunSubprocess, sources: list[str], log: IO[str] | None = None) -> None:
        self.cold = cold
        self._log = log
        self._component_sources = sources
        self._folder: Path | None = None  # made by start(), removed by close()
        self.socket_path = ""
        self._ready = threading.Event()
        self._process: subprocess.Popen[bytes] | None = None
        self.warm_steps = 0
        self.cold_steps = 0

    def start(self) -> WarmSteps:
        """Start the warm process; its imports run while the pipeline compiles and its first steps start."""
        self._folder = Path(tempfile.mkdtemp(prefix="mlops-warm-"))
        self.socket_path = str(self._folder / "socket")
        sources = self._folder / "components.json"
        sources.write_text(json.dumps(self._component_sources), encoding="utf-8")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "cli.warm_steps.zygote", self.socket_path, str(sources)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log if self._log is not None else subprocess.DEVNULL,
        )
        threading.Thread(target=self._await_ready, name="warm-steps-ready", daemon=True).start()
        return self

    def _await_ready(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        line = self._process.stdout.readline().decode(errors="replace").strip()
        if line.startswith("ready"):
            self._ready.set()

    def is_ready(self, timeout: float = READY_TIMEOUT_S) -> bool:
        """Whether the warm process answers: waits for its imports up to ``timeout``; False once it died."""
        process = self._process
        if process is None:
            return False
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.1):
            if process.poll() is not None or time.monotonic() > deadline:
                return False
        return process.poll() is None

    def run(self, full_command: list[str], env_vars: dict[str, str] | None = None) -> int:
        """Run one step as kfp.local's ``run_local_subprocess`` does: print its output, return its status."""
        program = lightweight_program(full_command, sys.executable)
        if program is None or not self.is_ready():
            why = "not KFP's lightweight-component command" if program is None else "no warm process"
            print(f"[mlops] cold step ({why}): a new interpreter imports what the step needs")
            self.cold_steps += 1
            return self.cold(full_command=full_command, env_vars=env_vars)
        self.warm_steps += 1
        request = {
            "source": program.source,
            "args": list(program.args),
            "env": {**os.environ, **(env_vars or {}), **RUNTIME_ENV},
            "cwd": os.getcwd(),
            "sent_at": time.time(),
        }
        read_end, write_end = os.pipe()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            try:
                conn.connect(self.socket_path)
                _send(conn, (json.dumps(request) + "\n").encode(), write_end)
            finally:
                os.close(write_end)
            with open(read_end, encoding="utf-8", errors="replace", newline="") as output:
                for line in iter(output.readline, ""):
                    print(line, end="")
            print("\n")  # as kfp.local ends a step's output
            return _exit_status(conn)

    def close(self) -> None:
        """Stop the warm process (closing its stdin ends its loop); steps already forked finish on their own."""
        process = self._process
        if process is not None:
            with contextlib.suppress(OSError):
                assert process.stdin is not None
                process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)


def component_sources(pipeline: Any) -> list[str]:
    """The sources of ``pipeline``'s lightweight components, in the order its tasks run (dependencies first,
    groups such as ``dsl.If`` and ``ParallelFor`` entered where they stand)."""
    from google.protobuf.json_format import MessageToDict

    spec = MessageToDict(pipeline.pipeline_spec)
    components = spec.get("components", {})
    executors = spec.get("deploymentSpec", {}).get("executors", {})
    sources: list[str] = []

    def visit(tasks: dict[str, Any]) -> None:
        done: set[str] = set()
        while len(done) < len(tasks):
            ready = [
                name
                for name, task in tasks.items()
                if name not in done and set(task.get("dependentTasks", [])) <= done
            ] or [name for name in tasks if name not in done]  # a cycle cannot be; take the rest as listed
            for name in ready:
                done.add(name)
                component = components.get(tasks[name].get("componentRef", {}).get("name", ""), {})
                if "dag" in component:
                    visit(component["dag"].get("tasks", {}))
                command = (
                    executors.get(component.get("executorLabel", ""), {})
                    .get("container", {})
                    .get("command", [])
                )
                program = lightweight_program(command, sys.executable)
                if program is not None and program.source not in sources:
                    sources.append(program.source)

    visit(spec.get("root", {}).get("dag", {}).get("tasks", {}))
    return sources


def _send(conn: socket.socket, payload: bytes, descriptor: int) -> None:
    sent = socket.send_fds(conn, [payload], [descriptor])
    conn.sendall(payload[sent:])


def _exit_status(conn: socket.socket) -> int:
    """The status the child wrote last; a child killed before it could write one failed."""
    received = b""
    while not received.endswith(b"\n"):
        chunk = conn.recv(64)
        if not chunk:
            break
        received += chunk
    if received.startswith(EXIT_STATUS_PREFIX) and received.endswith(b"\n"):
        return int(received[len(EXIT_STATUS_PREFIX) :])
    print("[mlops] the step's process ended without an exit status (killed by a signal?)")
    return -1


@contextlib.contextmanager
def warm_steps(pipeline: Any, workspace: Workspace) -> Iterator[WarmSteps]:
    """For the ``with`` block, kfp.local's subprocess runner starts ``pipeline``'s lightweight steps warm;
    the warm process's own output goes to ``<pipeline root>/.warm-steps-<pid>.log``."""
    from kfp.local import subprocess_task_handler as handler

    cold: RunSubprocess = handler.run_local_subprocess
    log_path = workspace.pipeline_root / f".warm-steps-{os.getpid()}.log"
    with open(log_path, "w", encoding="utf-8") as log:
        warm = WarmSteps(cold, component_sources(pipeline), log).start()
        handler.run_local_subprocess = warm.run
        try:
            yield warm
        finally:
            handler.run_local_subprocess = cold
            warm.close()
