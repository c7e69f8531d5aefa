"""Feast's own virtual environment: found where the install script built it, or built on request.

Every call into Feast is a subprocess of this venv's ``feast`` or ``python``; its errors come back as a
``FeastError`` carrying Feast's own last words (the exception line, not the whole traceback).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mlops.features.config import FEAST_PIN, HOME_ENV, INSTALL_SCRIPT, FeastSettings

SETUP_HINT = (
    f"create it with `mlops features setup` (runs {INSTALL_SCRIPT.relative_to(INSTALL_SCRIPT.parents[2])})"
)


ANSI = re.compile(r"\x1b\[[0-9;]*m")
"""Feast's CLI colours its output; the platform prints it plain."""
ENTRY_ERROR = "mlops-feast-error:"
"""How feast_entry.py prefixes its one error line."""


class FeastError(ValueError):
    """A Feast command failed or Feast is not installed; the message says what and how to fix it."""


@dataclass(frozen=True)
class FeastEnvironment:
    """A complete Feast venv (``.complete`` is written by the install script only after ``feast version`` ran)."""

    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def feast(self) -> Path:
        return self.venv / "bin" / "feast"

    def run(self, args: list[str], *, cwd: Path, timeout_s: float, what: str) -> str:
        """Runs ``args`` (argv[0] one of this venv's programs) in ``cwd``; returns stdout, raises FeastError
        with Feast's last error line and ``what`` was being done."""
        try:
            done = subprocess.run(
                args, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, env=feast_env(), check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise FeastError(
                f"{what}: Feast did not finish within {timeout_s:.0f} s (raise features.command_timeout_s)"
            ) from exc
        if done.returncode != 0:
            raise FeastError(f"{what} failed: {last_error_line(done.stderr or done.stdout)}")
        return ANSI.sub("", done.stdout)


def feast_env() -> dict[str, str]:
    """The caller's environment minus what would make the Feast venv's python import the platform's packages."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    }
    env["FEAST_USAGE"] = "False"  # no usage telemetry from a platform command
    return env


def last_error_line(output: str) -> str:
    """Feast's own message: the traceback's final ``Error: message`` line (or the last line printed)."""
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    if not lines:
        return "no output"
    for line in lines:
        if line.startswith(ENTRY_ERROR):
            return line.removeprefix(ENTRY_ERROR).strip()
    for line in reversed(lines):
        head = line.split(":", 1)[0].strip()
        if head and " " not in head and (head.endswith(("Error", "Exception")) or "." in head):
            return line.strip()
    return lines[-1].strip()


def find(settings: FeastSettings) -> FeastEnvironment:
    """The built Feast venv, or a FeastError saying how to build it."""
    venv = settings.venv
    if not (venv / ".complete").is_file():
        raise FeastError(f"no Feast {FEAST_PIN} environment at {venv}; {SETUP_HINT}")
    return FeastEnvironment(venv)


def install(settings: FeastSettings) -> FeastEnvironment:
    """Builds the Feast venv with the install script (a no-op when it is already complete)."""
    env = {**os.environ, HOME_ENV: str(settings.home.expanduser())}
    done = subprocess.run(["bash", str(INSTALL_SCRIPT)], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise FeastError(
            f"{INSTALL_SCRIPT} failed (exit {done.returncode}): {last_error_line(done.stderr)}; "
            "it needs python3 >= 3.10 with venv, and pip access to feast (or its wheels in PIP_FIND_LINKS)"
        )
    return find(settings)
