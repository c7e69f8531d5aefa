"""MLflow's tracking server in one process: its FastAPI app under uvicorn, as ``mlflow server --workers 1`` serves it.

``mlflow server`` is a command-line process that imports MLflow, writes the server's settings into
environment variables and starts uvicorn as a second process, which imports MLflow again and serves while
the first one waits. For a local run's store that is a second import of MLflow, seconds of CPU in the run's
busiest moment on two cores (py-spy: 1,202 of the server's 2,478 samples were the waiting process).
Run as ``python -m mlops.tracking.mlflow_app --backend-store-uri URI …``, this sets the same variables and
serves the same app, ``mlflow.server.fastapi_app:app``, with uvicorn in this very process.

What ``mlflow server`` does besides, and this does not: job execution (off for a run's server,
:data:`mlops.tracking.served.SERVER_ENVIRONMENT`), other apps (``--app-name basic-auth``), gunicorn or
waitress, and its start-up check that SQL trace roll-ups, when turned off, left no rows behind (a
workspace's store never turns them on). ``mlops ui`` runs ``mlflow server`` itself. The variables' names are
MLflow's private ones; ``tests/mlops/test_mlflow_app.py`` checks them against MLflow's own constants, and
every local run in the test suite goes through this server.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

APP = "mlflow.server.fastapi_app:app"
"""The app ``mlflow server`` serves with uvicorn."""

BACKEND_STORE_URI_ENV = "_MLFLOW_SERVER_FILE_STORE"
"""``mlflow.server.constants.BACKEND_STORE_URI_ENV_VAR``."""
REGISTRY_STORE_URI_ENV = "_MLFLOW_SERVER_REGISTRY_STORE"
"""``mlflow.server.constants.REGISTRY_STORE_URI_ENV_VAR``."""
ARTIFACT_ROOT_ENV = "_MLFLOW_SERVER_ARTIFACT_ROOT"
"""``mlflow.server.constants.ARTIFACT_ROOT_ENV_VAR``."""
STATIC_PREFIX_ENV = "_MLFLOW_STATIC_PREFIX"
"""``mlflow.server.handlers.STATIC_PREFIX_ENV_VAR``: read when ``mlflow.server`` is imported (its routes)."""
SERVER_NAME_ENV = "_MLFLOW_SGI_NAME"
"""``mlflow.environment_variables._MLFLOW_SGI_NAME``: which server hosts the app."""
BOOT_ID_ENV = "_MLFLOW_SERVER_BOOT_ID"
"""``mlflow.environment_variables._MLFLOW_SERVER_BOOT_ID``: one id per server start."""
IN_JOB_EXECUTOR_ENV = "_MLFLOW_IN_JOB_EXECUTOR"
"""``mlflow.environment_variables._MLFLOW_IN_JOB_EXECUTOR``: ``mlflow server`` forces it off for its workers."""


def server_environment(
    backend_store_uri: str, registry_store_uri: str, default_artifact_root: str, static_prefix: str
) -> dict[str, str]:
    """The variables ``mlflow server`` sets for its uvicorn worker, given these options and
    ``--no-serve-artifacts`` (MLflow's ``_run_server``); an empty option sets nothing, as there."""
    environment = {
        SERVER_NAME_ENV: "uvicorn",
        BOOT_ID_ENV: uuid.uuid4().hex,
        IN_JOB_EXECUTOR_ENV: "false",
    }
    for name, value in (
        (BACKEND_STORE_URI_ENV, backend_store_uri),
        (REGISTRY_STORE_URI_ENV, registry_store_uri),
        (ARTIFACT_ROOT_ENV, default_artifact_root),
        (STATIC_PREFIX_ENV, static_prefix),
    ):
        if value:
            environment[name] = value
    return environment


def uvicorn_log_config() -> str:
    """MLflow's own uvicorn logging set-up (``mlflow/server/uvicorn_log_config.yaml``), found without
    importing ``mlflow.server`` (which reads the variables above when imported)."""
    spec = importlib.util.find_spec("mlflow")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            "MLflow is not installed in this environment: pip install the platform's requirements"
        )
    return str(Path(next(iter(spec.submodule_search_locations))) / "server" / "uvicorn_log_config.yaml")


def server_command(
    store_uri: str, host: str, port: int, static_prefix: str, default_artifact_root: str
) -> list[str]:
    """The command that serves ``store_uri`` (tracking and registry) this way: the options :func:`command_line`
    reads, an empty ``default_artifact_root`` left out."""
    command = [
        sys.executable, "-m", "mlops.tracking.mlflow_app",
        "--backend-store-uri", store_uri, "--registry-store-uri", store_uri, "--host", host, "--port", str(port), "--static-prefix", static_prefix,
    ]  # fmt: skip
    if default_artifact_root:
        command += ["--default-artifact-root", default_artifact_root]
    return command


def command_line(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """``mlflow server``'s options that a local run's server uses, spelled as there."""
    parser = argparse.ArgumentParser(prog="python -m mlops.tracking.mlflow_app", description=__doc__)
    parser.add_argument("--backend-store-uri", required=True)
    parser.add_argument("--registry-store-uri", default="")
    parser.add_argument("--default-artifact-root", default="")
    parser.add_argument("--static-prefix", default="")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Set the server's variables, create or upgrade the stores' tables (as ``mlflow server`` does before it
    starts its worker; here the stores it opens are the ones the app then serves), and serve."""
    options = command_line(argv)
    backend = options.backend_store_uri
    registry = options.registry_store_uri or backend
    from mlflow.utils.server_cli_utils import resolve_default_artifact_root

    artifact_root = resolve_default_artifact_root(False, options.default_artifact_root, backend)
    os.environ.update(server_environment(backend, registry, artifact_root, options.static_prefix))
    import uvicorn
    from mlflow.server.handlers import initialize_backend_stores

    initialize_backend_stores(backend, registry, artifact_root)
    uvicorn.run(APP, host=options.host, port=options.port, workers=1, log_config=uvicorn_log_config())


if __name__ == "__main__":
    main()
