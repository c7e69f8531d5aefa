"""The warm process of a local run: it imports the steps' heavy libraries once, then forks one child per step.

Run as ``python -m cli.warm_steps.zygote SOCKET SOURCES_JSON``. It listens on the Unix socket, prints
``ready``, and imports what the run's components import (:func:`cli.warm_steps.program.preloadable_imports`
of their sources: for the training pipeline torch, MLflow, Great Expectations, ONNX Runtime, pandas,
scikit-learn, KFP's executor and the platform's modules, about 16 s on two cores, which every cold step
pays again for what it imports).
Each request carries a step (:class:`cli.warm_steps.program.LightweightProgram`), its environment, its
working directory and, as an ancillary file descriptor, the pipe its output goes to. The child does what
KFP's script does (the component source written to a fresh ``mktemp -d`` folder, ``_KFP_RUNTIME=true``,
``python -m kfp.dsl.executor_main --component_module_path <file> ARGS``), then exits through the
interpreter's own shutdown, so atexit handlers and non-daemon threads finish as in a cold process, and
the last thing it does is write its exit status to the socket.

The process imports and never computes, so no OpenMP or gRPC pool exists to be broken by a fork; the native
threads some libraries start when imported (OpenBLAS's pool with numpy, jemalloc's with pyarrow) handle a
fork themselves (``pthread_atfork``), and a Python thread, which would not, is reported before each fork
(:func:`python_threads_at_fork`). It exits when its parent closes its stdin.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import json
import os
import runpy
import select
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from cli.warm_steps.program import module_source, preloadable_imports

MAX_REQUEST_BYTES = 64 * 1024 * 1024
"""The largest step request read (a component's source and its executor input are a few hundred KB)."""

EXIT_STATUS_PREFIX = b"exit "
"""How a child's status line starts on the socket: ``exit <code>``."""


def python_threads_at_fork() -> list[str]:
    """Python threads besides this one: none should run in the warm process (a fork copies only this one)."""
    import threading

    return [thread.name for thread in threading.enumerate() if thread is not threading.current_thread()]


def receive(conn: socket.socket) -> tuple[dict[str, Any], int]:
    """One request: a JSON line and the output pipe's descriptor."""
    chunks, fds = [], []
    while True:
        data, received, _flags, _addr = socket.recv_fds(conn, 1 << 20, 1)
        fds.extend(received)
        if not data:
            break
        chunks.append(data)
        if data.endswith(b"\n") or sum(map(len, chunks)) > MAX_REQUEST_BYTES:
            break
    if len(fds) != 1:
        raise ValueError(f"a step request carries exactly one output descriptor, not {len(fds)}")
    return json.loads(b"".join(chunks)), fds[0]


def run_step(request: dict[str, Any], conn: socket.socket, output: int) -> int:
    """In the forked child: become the step's process and run KFP's executor; its exit status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the step waits for its own children
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(output)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    _reseed()
    program_path = tempfile.mkdtemp()  # the script's `mktemp -d`
    module_path = os.path.join(program_path, "ephemeral_component.py")
    with open(module_path, "w", encoding="utf-8") as file:
        file.write(request["source"])
    waited_ms = (time.time() - request["sent_at"]) * 1000
    imported = ", ".join(request["preloaded"]) or "nothing yet"
    print(
        f"[mlops] warm step: forked {waited_ms:.0f} ms after its request; imported once for the run: {imported}",
        flush=True,
    )
    sys.argv = [module_path, "--component_module_path", module_path, *request["args"]]
    try:
        runpy.run_module("kfp.dsl.executor_main", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return _code(exc.code)
    return 0


_status: list[int] = [0]
_child_connection: list[socket.socket] = []
"""In a forked child, its request's connection; empty in the warm process."""


def _code(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _end_of_step() -> None:
    """The last exit handler of a child: its status to the socket, then out without tearing down.

    Every exit handler (the step's own, the libraries') and the wait for non-daemon threads have run by
    then; what is left is the teardown of the imported modules, which in a forked child copies each page
    it touches (seconds for torch's and Great Expectations' objects) and changes nothing the step wrote.
    """
    if not _child_connection:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    with contextlib.suppress(OSError):
        _child_connection[0].sendall(EXIT_STATUS_PREFIX + str(_status[0]).encode() + b"\n")
    os._exit(_status[0])


def _leave() -> NoReturn:
    """End the warm process at once, its run over: it only imported, so it has nothing to write or close,
    and the interpreter's teardown of torch's, MLflow's and Great Expectations' modules took about 5 s on
    two cores, which the run waited for before printing its summary."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _reseed() -> None:
    """Fresh random state, as a new process has (``random`` reseeds itself after a fork; numpy does not)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


@dataclass
class StepRequest:
    """A step asked for: its request, the connection its status goes back on, its output pipe, and the
    modules of the warm process's list that it imports (it forks once each of them was tried)."""

    request: dict[str, Any]
    conn: socket.socket
    output: int
    needs: tuple[str, ...]


def serve(path: str, sources_file: str) -> int | None:
    """Answer step requests until stdin closes; in a forked child, the step's exit status (else None).

    The socket listens before the imports start, and requests are taken between two imports. A step
    forks once the warm process has tried every module of its list that the step imports; until then the
    warm process imports those first, the earliest request's first. A step forked earlier would import them
    itself beside the warm process importing them too: on two cores that made Great Expectations' import
    the larger part of the first validation step.
    """
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    atexit.register(_end_of_step)  # before the imports register theirs, so it runs after all of them
    print("ready", flush=True)
    sources = json.loads(Path(sources_file).read_text(encoding="utf-8"))
    source_of = functools.cache(module_source)  # read once for the list and every step's request
    remaining = preloadable_imports(sources, source_of)
    listed = frozenset(remaining)
    needs_by_source: dict[str, tuple[str, ...]] = {}
    tried: set[str] = set()
    imported: list[str] = []
    waiting: list[StepRequest] = []

    def needs(source: str) -> tuple[str, ...]:
        if not remaining:
            return ()  # everything was tried: nothing to wait for, nothing to work out
        if source not in needs_by_source:
            own = preloadable_imports([source], source_of)
            needs_by_source[source] = tuple(name for name in own if name in listed)
        return needs_by_source[source]

    while True:
        for step in _accept(listener, timeout=0.0 if remaining or waiting else None):
            step.needs = needs(step.request["source"])
            waiting.append(step)
        for step in [step for step in waiting if tried.issuperset(step.needs)]:
            waiting.remove(step)
            status = _fork(step, listener, imported)
            if status is not None:
                return status
        if remaining:
            name = next_import(remaining, [step.needs for step in waiting], tried)
            remaining.remove(name)
            started = time.monotonic()
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - a step that imports it fails as it would cold
                pass
            else:
                imported.append(f"{name} ({time.monotonic() - started:.1f} s)")
            tried.add(name)


def next_import(remaining: list[str], waiting: list[tuple[str, ...]], tried: set[str]) -> str:
    """Which of ``remaining`` (in the run's order) to import next: the first one not yet tried that the
    earliest waiting step imports, else the first of the list."""
    return next((name for needs in waiting for name in needs if name not in tried), remaining[0])


def _accept(listener: socket.socket, timeout: float | None) -> list[StepRequest]:
    """The step requests pending (waiting up to ``timeout`` for one); ends the warm process itself
    (:func:`_leave`) once its parent closed stdin."""
    steps: list[StepRequest] = []
    while True:
        readable, _, _ = select.select([listener, sys.stdin], [], [], 0.0 if steps else timeout)
        if not readable:
            return steps
        if sys.stdin in readable and not os.read(sys.stdin.fileno(), 4096):
            listener.close()
            _leave()
        if listener not in readable:
            continue
        conn, _ = listener.accept()
        try:
            request, output = receive(conn)
        except (OSError, ValueError) as exc:
            print(f"bad step request: {exc}", file=sys.stderr, flush=True)
            conn.close()
            continue
        steps.append(StepRequest(request, conn, output, ()))


def _fork(step: StepRequest, listener: socket.socket, imported: list[str]) -> int | None:
    """Fork the step's process; in the child, its status (else None)."""
    step.request["preloaded"] = list(imported)
    if threads := python_threads_at_fork():
        print(f"warning: Python threads at fork: {threads}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork() == 0:
        _child_connection[:] = [step.conn]
        listener.close()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)  # the step reads no input, as under kfp.local
        os.close(devnull)
        try:
            _status[0] = run_step(step.request, step.conn, step.output)
        except BaseException:  # what a cold interpreter prints for an uncaught exception
            import traceback

            traceback.print_exc()
            _status[0] = 1
        return _status[0]
    os.close(step.output)
    step.conn.close()
    return None


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit("usage: python -m cli.warm_steps.zygote SOCKET_PATH COMPONENT_SOURCES_JSON")
    code = serve(sys.argv[1], sys.argv[2])
    sys.exit(code or 0)


if __name__ == "__main__":
    main()
