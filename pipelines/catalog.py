"""The platform's pipelines, by name, and how they compile to YAML beside their definitions.

Each name is a folder ``pipelines/<name>/``: ``pipeline.py`` (``FORM``, the pipeline's
settings and which are per-run, and ``<name>_pipeline``) and the compiled ``<name>.yaml``; what ``mlops run <name>`` prints
afterwards lives with the command line (``cli/summaries/<name>.py``).
The list is the only place a pipeline is registered; nothing here imports KFP until asked.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kfp.dsl.base_component import BaseComponent
    from pydantic import BaseModel

    from pipelines.signature import PipelineForm


PIPELINE_NAMES = ("training", "tuning", "monitoring", "batch_scoring")
PIPELINES_DIR = Path(__file__).resolve().parent


def _module(name: str, part: str) -> ModuleType:
    return importlib.import_module(f"pipelines.{name}.{part}")


def pipelines() -> dict[str, BaseComponent]:
    return {name: getattr(_module(name, "pipeline"), f"{name}_pipeline") for name in PIPELINE_NAMES}


def forms() -> dict[str, PipelineForm]:
    """Each pipeline's form: every setting with its default, per-run or in its section's dict."""
    return {name: _module(name, "pipeline").FORM for name in PIPELINE_NAMES}


def defaults() -> dict[str, tuple[BaseModel, ...]]:
    """Each pipeline's stage configs, as the instances holding its defaults."""
    return {name: form.defaults for name, form in forms().items()}


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
