"""The platform's pipelines, by name, and how they compile to YAML."""

from __future__ import annotations

from pathlib import Path

from kfp.dsl.base_component import BaseComponent


def pipelines() -> dict[str, BaseComponent]:
    from pipelines.training import training_pipeline
    from pipelines.tuning import tuning_pipeline

    return {"training": training_pipeline, "tuning": tuning_pipeline}


def compile_all(out_dir: Path) -> list[Path]:
    from kfp import compiler

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, pipeline in pipelines().items():
        path = out_dir / f"{name}.yaml"
        compiler.Compiler().compile(pipeline, str(path))
        written.append(path)
    return written
