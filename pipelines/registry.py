"""The platform's pipelines, by name, and how they compile to YAML beside their definitions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kfp.dsl.base_component import BaseComponent
from pydantic import BaseModel

if TYPE_CHECKING:
    from mlops.workspace import Workspace
    from pipelines.local_run import LocalRun

PIPELINES_DIR = Path(__file__).resolve().parent


def pipelines() -> dict[str, BaseComponent]:
    from pipelines.training.pipeline import training_pipeline
    from pipelines.tuning.pipeline import tuning_pipeline

    return {"training": training_pipeline, "tuning": tuning_pipeline}


def defaults() -> dict[str, tuple[BaseModel, ...]]:
    """Each pipeline's stage configs, as the instances holding its defaults."""
    from pipelines.training.pipeline import DEFAULTS as TRAINING
    from pipelines.tuning.pipeline import DEFAULTS as TUNING

    return {"training": TRAINING, "tuning": TUNING}


def summaries() -> dict[str, Callable[[Workspace, dict[str, Any], LocalRun], None]]:
    """What each pipeline prints after a successful local run."""
    from pipelines.training.summary import print_summary
    from pipelines.tuning.summary import print_tuning_summary

    return {"training": print_summary, "tuning": print_tuning_summary}


def compiled_path(name: str, out_dir: Path | None = None) -> Path:
    """``pipelines/<name>/<name>.yaml`` (the checked-in golden file), or ``<out_dir>/<name>.yaml``."""
    return (out_dir if out_dir is not None else PIPELINES_DIR / name) / f"{name}.yaml"


def compile_all(out_dir: Path | None = None) -> list[Path]:
    from kfp import compiler

    written = []
    for name, pipeline in pipelines().items():
        path = compiled_path(name, out_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        compiler.Compiler().compile(pipeline, str(path))
        written.append(path)
    return written
