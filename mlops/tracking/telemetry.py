"""MLflow's and ONNX Runtime's usage telemetry, off in every process the platform starts.

Why: MLflow 3.17 creates a telemetry client at ``import mlflow`` and, on its first recorded call, a thread
that fetches the telemetry configuration from the internet. When that fetch fails (an offline machine, a
cluster without egress) the thread deletes ``_MLFLOW_TELEMETRY_SESSION_ID`` from ``os.environ``; a step
that iterates the environment at that moment (``requests`` does, for the proxy variables, on every
request to the tracking server) fails with ``KeyError: '_MLFLOW_TELEMETRY_SESSION_ID'``, in a random step
of a random run. ``MLFLOW_DISABLE_TELEMETRY=true`` keeps MLflow from creating the client at all (it reads
the variable at import), so there is no such thread.

MLflow turns telemetry off by itself under pytest and on CI machines (``PYTEST_CURRENT_TEST``, ``CI``,
``GITHUB_ACTIONS``, … in the environment), so a test suite never meets the thread unless it removes those
(``tests/mlops/test_telemetry.py`` does).

ONNX Runtime 1.31 reports usage too (Microsoft's 1DS client, to ``mobile.events.data.microsoft.com``, with a
device id and an event queue under ``~/.cache/Microsoft/DeveloperTools/.onnxruntime``): an offline pipeline
run tried that connection every time. ``ORT_DISABLE_TELEMETRY`` is the switch the library reads.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

TELEMETRY_ENV = "MLFLOW_DISABLE_TELEMETRY"
"""MLflow's switch (``mlflow.environment_variables.MLFLOW_DISABLE_TELEMETRY``, a boolean: true/1 turns it off)."""
ORT_TELEMETRY_ENV = "ORT_DISABLE_TELEMETRY"
"""ONNX Runtime's switch (read by its native library; 1 turns the 1DS telemetry off)."""
TELEMETRY_OFF = {TELEMETRY_ENV: "true", ORT_TELEMETRY_ENV: "1"}
"""What every process the platform starts carries: its own environment, a server's, a container's."""


def telemetry_off(environ: MutableMapping[str, str] = os.environ) -> None:
    """Turn MLflow's and ONNX Runtime's telemetry off in ``environ`` (this process's own by default, which every child
    process inherits). Replaces a ``false`` the caller's environment set: with it, any step may fail."""
    environ.update(TELEMETRY_OFF)
