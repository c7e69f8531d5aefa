"""Which step commands may start warm: exactly the command KFP writes for a lightweight Python component.

``kfp.dsl.component_factory`` gives every lightweight component the same command: ``sh -ec SCRIPT SOURCE
ARGS…``, where SCRIPT writes SOURCE to ``$program_path/ephemeral_component.py`` in a fresh ``mktemp -d``
folder and runs ``_KFP_RUNTIME=true python3 -m kfp.dsl.executor_main --component_module_path <that file>
ARGS…``. A warm step does the same inside a forked process, so only a command whose script is that one,
byte for byte, is taken; any other (a ``packages_to_install`` line, a container component, a KFP that
changed its template) runs cold, as kfp.local would run it.
"""

from __future__ import annotations

import ast
import functools
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path

EXECUTOR_MODULE = "kfp.dsl.executor_main"
"""The module the script runs; imported by the warm process too."""

LIGHTWEIGHT_SCRIPT = textwrap.dedent(f"""\
    program_path=$(mktemp -d)

    printf "%s" "$0" > "$program_path/ephemeral_component.py"
    _KFP_RUNTIME=true python3 -m {EXECUTOR_MODULE} \
                        --component_module_path \
                        "$program_path/ephemeral_component.py" \
                        "$@"
""")
"""The script of KFP's lightweight-component command (``component_factory``), the only one run warm."""

RUNTIME_ENV = {"_KFP_RUNTIME": "true"}
"""What the script puts in the executor's environment."""


@dataclass(frozen=True)
class LightweightProgram:
    """A lightweight component's step: the component's source and the executor's arguments."""

    source: str
    args: tuple[str, ...]


def lightweight_program(full_command: Sequence[str], python: str) -> LightweightProgram | None:
    """The step ``full_command`` runs, when it is KFP's lightweight-component command; else None (run cold).

    kfp.local's ``SubprocessRunner`` writes the interpreter it runs steps with (``python``: this process's
    own, ``sys.executable``) for ``python3`` in the script; a script naming any other interpreter runs cold.
    """
    if len(full_command) < 4 or list(full_command[:2]) != ["sh", "-ec"]:
        return None
    if full_command[2] not in (LIGHTWEIGHT_SCRIPT, LIGHTWEIGHT_SCRIPT.replace("python3", python)):
        return None
    return LightweightProgram(source=full_command[3], args=tuple(full_command[4:]))


PLATFORM_PACKAGES = frozenset({"mlops", "training", "serving", "delivery", "components", "pipelines"})
"""The platform's own packages: importing their modules has no side effects (a house rule, checked in review)."""

HEAVY_LIBRARIES = frozenset(
    {
        "kfp", "numpy", "pandas", "pyarrow", "scipy", "sklearn", "torch", "onnx", "onnxruntime", "mlflow",
        "great_expectations", "fairlearn", "optuna", "matplotlib",
    }
)  # fmt: skip
"""Libraries that cost seconds to import and do nothing at import a step could tell apart."""

LAZY_COMPANIONS = {"torch": ("torch._dynamo",)}
"""Modules a library imports lazily on first use, at seconds' cost inside the step: torch's first
optimizer (``Optimizer.__init__`` → ``_disable_dynamo``) imports ``torch._dynamo`` (about 1.5 s on a
quiet machine, as long as torch itself). Taken, after everything else, when the key module is."""


def imported_by(source: str) -> list[str]:
    """Every absolute import in ``source``, at any depth (a component imports inside its function); for
    ``from a.b import c`` both ``a.b`` and ``a.b.c`` (``c`` may be a module)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


@functools.lru_cache(maxsize=4096)
def _imported_by_module(source: str) -> tuple[str, ...]:
    """:func:`imported_by` of a module's text, kept: the warm process asks again for each step's request."""
    return tuple(imported_by(source))


def preloadable_imports(sources: Iterable[str], module_source: Callable[[str], str | None]) -> list[str]:
    """What the warm process imports for steps of the components' ``sources``, in the order they need it.

    A component imports its logic inside its function (``from components.train.training_task import run_training``)
    and the platform's modules import their heavy libraries inside theirs: so the platform's modules are
    followed through their source text (``module_source(name)``: None for a name that is no module),
    without importing them, to the :data:`HEAVY_LIBRARIES` they reach. Those and the platform modules named
    by the components are taken; a user's own modules are not (one that reads its environment when
    imported would read the warm process's, not its task's).
    """
    wanted: dict[str, None] = {EXECUTOR_MODULE: None}
    followed: set[str] = set()
    module_source = functools.cache(module_source)  # a module named by several components is read once

    def follow(name: str) -> None:
        pending = [name]
        while pending:
            current = pending.pop()
            if current in followed:
                continue
            followed.add(current)
            text = module_source(current)
            if text is None:
                continue
            for imported in _imported_by_module(text):
                top = imported.split(".")[0]
                if top in HEAVY_LIBRARIES:  # a name that is no module (``from torch import nn``) fails there
                    wanted.setdefault(imported, None)
                elif top in PLATFORM_PACKAGES:
                    pending.append(imported)

    for source in sources:
        named = imported_by(source)
        for name in named:
            if name.split(".")[0] in PLATFORM_PACKAGES:
                follow(name)
        for name in named:
            top = name.split(".")[0]
            if top in HEAVY_LIBRARIES or (top in PLATFORM_PACKAGES and module_source(name) is not None):
                wanted.setdefault(name, None)
    for name in list(wanted):
        for companion in LAZY_COMPANIONS.get(name, ()):
            wanted.setdefault(companion, None)
    return list(wanted)


def module_source(name: str) -> str | None:
    """The source text of module ``name`` (a ``.py`` file), found as the import system would find it but
    without importing anything: the top-level package through ``sys.meta_path`` (an editable install's
    finder is there, not on ``sys.path``), the rest through its package's folders."""
    parts = name.split(".")
    spec = None
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is not None:
            try:
                spec = find_spec(parts[0], None)
            except (ImportError, ValueError):
                spec = None
            if spec is not None:
                break
    for depth in range(1, len(parts)):
        if spec is None or not spec.submodule_search_locations:
            return None
        spec = PathFinder.find_spec(".".join(parts[: depth + 1]), list(spec.submodule_search_locations))
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        return Path(spec.origin).read_text(encoding="utf-8")
    except OSError:
        return None
