"""The server's end of the request log's writer process: starting it, handing it one batch at a time
over its pipe and waiting for its answer (the process itself is :mod:`serving.request_log_writer`)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading

from serving.request_log_blocks import FRAME, Block, encode_blocks

log = logging.getLogger("serving.request_log")


class WriteFailed(RuntimeError):
    """The writer process could not write a batch (its message says why), or died holding it."""


class WriterProcess:
    """The ``python -m serving.request_log_writer`` process and the pipe a batch travels on.

    :meth:`write` is blocking (call it from a thread: it waits on the pipe with the GIL
    released) and sends one batch at a time; the process is started on first use and
    again after it died.
    """

    def __init__(self, uri: str, model_name: str):
        self.uri = uri
        self.model_name = model_name
        self.process: subprocess.Popen[bytes] | None = None
        self._lock = threading.RLock()  # write() holds it while (re)starting the process

    def _started(self) -> subprocess.Popen[bytes]:
        with self._lock:
            return self._start_unless_running()

    def _start_unless_running(self) -> subprocess.Popen[bytes]:
        process = self.process
        if process is not None and process.poll() is None:
            return process
        # The server's import path, whatever put it there (PYTHONPATH, the working directory, a .pth).
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or os.getcwd() for p in sys.path)}
        command = [sys.executable, "-m", "serving.request_log_writer", self.uri, self.model_name]
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        # It imports the Parquet and storage libraries before it says ready: the first flush must not
        # wait for them (seconds on a loaded machine, longer than a short flush interval).
        assert process.stdout is not None
        ready = process.stdout.readline()
        if not ready:
            raise WriteFailed(f"the request-log writer process did not start (exit status {process.wait()})")
        self.process = process
        return process

    def write(self, blocks: list[Block]) -> list[str]:
        """Hand ``blocks`` to the writer and wait until they are written; the paths written.

        Raises :class:`WriteFailed` when the writer could not write them or died.
        """
        payload = encode_blocks(blocks)
        with self._lock:
            process = self._started()
            stdin, stdout = process.stdin, process.stdout
            assert stdin is not None and stdout is not None
            try:
                stdin.write(FRAME.pack(len(payload)))
                stdin.write(payload)
                stdin.flush()
                answer = stdout.readline()
            except (BrokenPipeError, OSError) as exc:
                raise WriteFailed(f"the request-log writer process ended: {exc}") from exc
        if not answer:
            raise WriteFailed(f"the request-log writer process ended (exit status {process.wait()})")
        reply = json.loads(answer)
        if "error" in reply:
            raise WriteFailed(reply["error"])
        return list(reply["written"])

    def close(self, timeout_s: float = 30.0) -> None:
        """End the writer: it sees the pipe close after its last batch and exits."""
        process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            log.error("the request-log writer did not exit within %.0f s; killing it", timeout_s)
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
