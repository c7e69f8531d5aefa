"""The private ``mlflow server`` of tests/components/register/test_registration_faults.py, which a test
SIGKILLs and starts again on the same port: in about a second after the first start (each later start is
forked from a process that imported the server's app once)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.services.plugin import SCRIPTS

RESTARTER = """
import importlib, os, signal, sys, uuid
sys.argv = ["uvicorn", *sys.argv[1:]]
importlib.import_module(sys.argv[-1].partition(":")[0])  # the server's app: most of a start's seconds
from uvicorn.main import main
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # a killed server is reaped at once
while sys.stdin.readline():
    pid = os.fork()
    if pid == 0:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.dup2(2, 1)  # the server logs to the log file; stdout is the pipe that carries the pids
        if "_MLFLOW_SERVER_BOOT_ID" in os.environ:
            os.environ["_MLFLOW_SERVER_BOOT_ID"] = uuid.uuid4().hex
        try:
            main()
        except SystemExit as stop:
            os._exit(stop.code if isinstance(stop.code, int) else 1)
        os._exit(0)
    print(pid, flush=True)
"""
"""Imports a server's app once; each line on stdin forks a server from it and prints that server's pid."""


@dataclass
class PrivateMlflow:
    """An ``mlflow server`` of one test module alone, which a test may kill and start again on the same port.

    The first start is ``mlflow server`` (infra/testing/start_mlflow.sh): it checks the store and runs
    the app in a uvicorn process. After :meth:`restart_fast`, each later start runs that uvicorn process
    again (its command line and environment, read from /proc, with a boot id of its own), forked from a
    process that imported the app once while the first server served: about a second instead of the
    CLI's and the app's imports (15 to 30 s of CPU-bound start on a loaded machine, for every fault).
    Nothing runs on the port between a kill and the next :meth:`start`.
    """

    env: dict[str, str]
    state: Path
    worker: tuple[list[str], dict[str, str]] | None = None
    """The uvicorn command line and environment that ``mlflow server`` started."""
    restarter: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.env['MLFLOW_PORT']}"

    def start(self) -> None:
        """Serve on the port: a server forked by the restarter when there is one, else ``mlflow server``."""
        if self.restarter is not None:
            self._fork_server(self.restarter)
            return
        result = subprocess.run(
            ["bash", str(SCRIPTS / "start_mlflow.sh")],
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert result.returncode == 0, f"mlflow server did not start: {result.stderr[-2000:]}"
        self.worker = self._uvicorn_worker(int((self.state / "mlflow.pid").read_text()))

    def restart_fast(self) -> None:
        """From now on, a start forks the server from a process that imported its app (it imports now)."""
        assert self.worker is not None, "the server was never started"
        command, env = self.worker
        with (self.state / "mlflow.log").open("ab") as log:
            self.restarter = subprocess.Popen(
                [sys.executable, "-c", RESTARTER, *command],
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )

    def _fork_server(self, restarter: subprocess.Popen[bytes]) -> None:
        assert restarter.stdin is not None and restarter.stdout is not None
        assert restarter.poll() is None, (
            f"the restarter exited with {restarter.returncode}: {self._log_tail()}"
        )
        restarter.stdin.write(b"serve\n")
        restarter.stdin.flush()
        pid = int(restarter.stdout.readline() or 0)
        assert pid, f"the restarter forked no server: {self._log_tail()}"
        (self.state / "mlflow.pid").write_text(str(pid))
        deadline = time.monotonic() + 90
        while not self._answers():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                pytest.fail(f"the restarted mlflow server exited: {self._log_tail()}")
            assert time.monotonic() < deadline, (
                f"the restarted server did not answer in 90 s: {self._log_tail()}"
            )
            time.sleep(0.05)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as reply:
                return bool(reply.status == 200)
        except OSError:
            return False

    def _log_tail(self) -> str:
        return (self.state / "mlflow.log").read_text(errors="replace")[-2000:]

    @staticmethod
    def _uvicorn_worker(cli_pid: int) -> tuple[list[str], dict[str, str]]:
        """The arguments after ``python -m uvicorn`` and the environment of the CLI's server process."""
        children = [
            int(stat.parent.name)
            for stat in Path("/proc").glob("[0-9]*/stat")
            if _parent_pid(stat) == cli_pid
        ]
        assert len(children) == 1, f"mlflow server (pid {cli_pid}) runs {len(children)} processes, not 1"
        proc = Path("/proc") / str(children[0])
        argv = [arg.decode() for arg in (proc / "cmdline").read_bytes().split(b"\0") if arg]
        assert argv[1:3] == ["-m", "uvicorn"] and ":" in argv[-1], f"not a uvicorn server: {argv}"
        pairs = [
            item.decode().partition("=") for item in (proc / "environ").read_bytes().split(b"\0") if item
        ]
        return argv[3:], {key: value for key, _, value in pairs}

    def kill(self) -> None:
        """SIGKILL, the whole process group: no shutdown handler runs."""
        pid = int((self.state / "mlflow.pid").read_text())
        os.killpg(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)

    def stop(self) -> None:
        subprocess.run(["bash", str(SCRIPTS / "stop_mlflow.sh")], env={**os.environ, **self.env}, check=False)
        if self.restarter is not None:
            os.killpg(self.restarter.pid, signal.SIGKILL)
            self.restarter.wait(timeout=10)
            self.restarter = None


def _parent_pid(stat: Path) -> int | None:
    try:
        return int(stat.read_text().rsplit(")", 1)[1].split()[1])  # after "pid (comm) state"
    except (OSError, IndexError, ValueError):  # gone meanwhile
        return None
