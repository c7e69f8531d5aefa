"""What ``mlops run <pipeline>`` prints after a successful local run, one module per pipeline."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pipelines.catalog import PIPELINE_NAMES

if TYPE_CHECKING:
    from cli.local_run import LocalRun
    from mlops.workspace import Workspace


def summaries() -> dict[str, Callable[[Workspace, Mapping[str, Any], LocalRun], dict[str, str]]]:
    """What each pipeline prints after a successful local run, given the run's settings by address
    (``PipelineForm.values``); each returns the run's facts for ``mlops runs``."""
    return {name: importlib.import_module(f"cli.summaries.{name}").print_summary for name in PIPELINE_NAMES}
