"""Server processes under a parent (``mlops serve --workers N``, and every granian server): the servers' own workers.

uvicorn binds the port once, in this process, and starts ``config.workers`` worker processes (each a
fresh interpreter: multiprocessing's spawn) that accept on the shared socket; granian
(``--http-server granian``) starts its workers the same way, each opening the port with ``SO_REUSEPORT``
after this process has checked that nothing else holds it (:func:`bindable_port`). Either restarts a
worker that dies and, on SIGINT or SIGTERM, stops them all, each finishing its in-flight requests and
flushing its request log as a single server does. Each worker builds the whole app from the same settings
(:func:`worker_app`; :func:`worker_rsgi_app` on granian): its own ONNX Runtime session (a session's thread
pools do not survive a fork), batcher, reload watcher and request-log writer, whose file names carry a
random part, so the writers never collide. With several workers, Prometheus values go to files in a folder
the workers share (prometheus_client's multiprocess mode), and ``/metrics``, answered by whichever worker
takes the scrape, adds them up; granian's one worker keeps them in its memory, as the single uvicorn server
does. With ``--grpc-port`` every worker binds that port too (gRPC sets ``SO_REUSEPORT``).

Before the port opens this process fetches, verifies and opens the model once, as the single server
does, so a model that fails its checks stops the start with its error; the workers then find the
verified copy in the cache folder they share (:func:`serving.startup.loader` takes turns on it).
"""

from __future__ import annotations

import contextlib
import errno
import multiprocessing
import os
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from serving.config import ServerConfig
from serving.metrics import MULTIPROCESS_DIR_ENV

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from serving.rsgi import AsgiOnRsgi
    from serving.runtime import LoadedModel

CONFIG_FILE_ENV = "MLOPS_SERVE_WORKER_CONFIG"
"""The file a worker reads its settings from (in a folder only this user can read: they hold the tokens)."""


def serve_workers(config: ServerConfig, check: Callable[[LoadedModel], None] | None = None) -> None:
    """Run ``config.workers`` server processes until interrupted; ``check`` as :func:`serving.server.serve`."""
    from serving.startup import first_model, given_cache, serving_line

    if config.http_server == "granian":
        config = config.model_copy(update={"port": bindable_port(config.host, config.port)})
    with tempfile.TemporaryDirectory(prefix="mlops-serving-workers-") as private:
        folder = Path(private)  # mode 0700
        shared = config.model_copy(
            update={"model_cache_dir": config.model_cache_dir or str(folder / "models")}
        )
        _, _, model = first_model(shared, given_cache(shared))
        if check is not None:
            check(model)
        line = serving_line(config, model)
        del model
        settings = folder / "settings.json"
        settings.write_text(shared.model_dump_json(), encoding="utf-8")
        environment = {CONFIG_FILE_ENV: str(settings)}
        if config.workers > 1:  # one worker (granian's) answers every scrape from its own memory
            (folder / "metrics").mkdir()
            environment[MULTIPROCESS_DIR_ENV] = str(folder / "metrics")
        with _environment(environment):
            print(line, flush=True)
            if config.http_server == "granian":
                _run_granian(config)
            else:
                _run_uvicorn(config)


def _run_uvicorn(config: ServerConfig) -> None:
    import uvicorn

    from serving.startup import UVICORN_OPTIONS

    uvicorn.run(
        "serving.workers:worker_app",
        factory=True,
        workers=config.workers,
        host=config.host,
        port=config.port,
        **UVICORN_OPTIONS,
    )


def _run_granian(config: ServerConfig) -> None:
    from granian.constants import Interfaces, Loops
    from granian.log import LogLevels
    from granian.server import Server

    from serving.lifecycle import GRACEFUL_SHUTDOWN_S

    # granian forks its workers when multiprocessing's start method is fork (Linux's default before 3.14). A
    # fork would inherit this process's imported state: prometheus_client's in-memory values, chosen before
    # the metrics folder was named, and the threads MLflow and ONNX Runtime started while the model was
    # checked. Fresh interpreters, as uvicorn's workers are; this process does nothing else once it serves.
    multiprocessing.set_start_method("spawn", force=True)
    Server(
        "serving.workers:worker_rsgi_app",
        address=config.host,
        port=config.port,
        interface=Interfaces.RSGI,
        workers=config.workers,
        loop=Loops.uvloop,
        log_level=LogLevels.warning,
        log_access=False,  # the request log and the metrics record requests; no line per request
        factory=True,
        respawn_failed_workers=True,  # as uvicorn restarts a worker that dies
        workers_kill_timeout=GRACEFUL_SHUTDOWN_S + 5,  # the app's own drain (gRPC's grace) comes first
    ).serve()


def bindable_port(host: str, port: int) -> int:
    """``port`` (a free one for 0) once a listener could bind it on ``host``; ValueError naming it when taken.

    granian's workers each open their own listener with ``SO_REUSEPORT``: a port another server holds the
    same way would be shared without an error, and port 0 would give each worker a different port. A plain
    bind here (``SO_REUSEADDR`` only, so a closing connection does not block it) fails on any listener."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            fix = (
                "stop the process that holds the port or pass another --port"
                if exc.errno == errno.EADDRINUSE
                else "pass a --host this machine has and a --port this user may bind"
            )
            reason = (exc.strerror or str(exc)).lower()
            raise ValueError(
                f"error while attempting to bind on address ({host!r}, {port}): {reason}; {fix}"
            ) from exc
        return int(probe.getsockname()[1])


def worker_app() -> Starlette:
    """In a worker: the app :func:`serving.server.serve` would build, from the settings its parent wrote."""
    from serving.startup import (
        app_with_first_model,
        configure_logging,
        freeze_long_lived_objects,
        given_cache,
    )

    configure_logging()
    config = ServerConfig.model_validate_json(Path(os.environ[CONFIG_FILE_ENV]).read_text(encoding="utf-8"))
    app, _ = app_with_first_model(config, given_cache(config))
    freeze_long_lived_objects()
    return app


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in this process's environment, which the workers inherit, for the block; restored after."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def worker_rsgi_app() -> AsgiOnRsgi:
    """In a granian worker: :func:`worker_app` on granian's RSGI interface."""
    from serving.rsgi import AsgiOnRsgi

    return AsgiOnRsgi(worker_app())
