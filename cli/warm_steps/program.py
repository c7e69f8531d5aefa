"""Which step commands may start warm: exactly the command KFP writes for a lightweight Python component.

``kfp.dsl.component_factory`` gives every lightweight component the same command: ``sh -ec SCRIPT SOURCE
ARGS…``, where SCRIPT writes SOURCE to ``$program_path/ephemeral_component.py`` in a fresh ``mktemp -d``
folder and runs ``_KFP_RUNTIME=true python3 -m kfp.dsl.executor_main --component_module_path <that file>
ARGS…``. A warm step does the same inside a forked process, so only a command whose script is that one,
byte for byte, is taken; any other (a ``packages_to_install`` line, a container component, a KFP that
changed its template) runs cold, as kfp.local would run it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

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
