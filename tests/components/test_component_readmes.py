"""Each component folder's README says which pipelines run its KFP steps, and says it truly.

The truth is the compiled pipelines (``pipelines/<name>/<name>.yaml``, what KFP runs): a pipeline uses a
component when one of its ``comp-*`` entries is a ``@dsl.component`` of that folder's ``component.py``.
The README names them on one line, ``**Used by pipelines:**`` followed by each pipeline name in backticks,
or ``none`` and why (a folder whose logic only a command runs). A step added to or removed from a pipeline
without its README following fails here.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import yaml
from kfp.dsl.python_component import PythonComponent

from pipelines.catalog import PIPELINE_NAMES, compiled_path

COMPONENTS = Path(__file__).resolve().parents[2] / "components"
FOLDERS = sorted(p.name for p in COMPONENTS.iterdir() if (p / "__init__.py").is_file())
USED_BY = re.compile(r"^\*\*Used by pipelines:\*\*(?P<rest>.*)$", re.M)


def steps_of(folder: str) -> set[str]:
    """The KFP component names (``comp-<name>``) the folder's ``component.py`` defines; none without one."""
    if not (COMPONENTS / folder / "component.py").is_file():
        return set()
    module = importlib.import_module(f"components.{folder}.component")
    return {
        "comp-" + value.component_spec.name.replace("_", "-")
        for value in vars(module).values()
        if isinstance(value, PythonComponent) and value.python_func.__module__ == module.__name__
    }


def pipelines_running(steps: set[str]) -> set[str]:
    found = set()
    for name in PIPELINE_NAMES:
        pipeline_spec, *_platform_specs = yaml.safe_load_all(compiled_path(name).read_text())
        if steps & set(pipeline_spec["components"]):
            found.add(name)
    return found


def readme_line(folder: str) -> tuple[set[str], str]:
    text = (COMPONENTS / folder / "README.md").read_text()
    lines = USED_BY.findall(text)
    assert len(lines) == 1, f"components/{folder}/README.md needs one '**Used by pipelines:**' line"
    return set(re.findall(r"`([a-z_]+)`", lines[0])), lines[0].strip()


def test_every_folder_with_steps_is_found() -> None:
    assert {"train", "tune", "batch_score", "drift_monitor"} <= {f for f in FOLDERS if steps_of(f)}
    assert steps_of("quantize") == set(), "quantize has no KFP component (mlops quantize runs it)"


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_readme_names_the_pipelines_that_run_the_folders_steps(folder: str) -> None:
    named, rest = readme_line(folder)
    actual = pipelines_running(steps_of(folder))
    assert named == actual, (
        f"components/{folder}/README.md says {named or 'none'}; the compiled pipelines: {actual}"
    )
    if not actual:
        assert rest.startswith("none"), f"components/{folder}/README.md: say 'none' and what runs it instead"
