"""Write infra/docker/requirements.txt: the project's dependencies as pyproject.toml declares them.

The image installs its dependencies from this file rather than from pyproject.toml, so the layer that holds
them (GBs, ten minutes and more to build) is rebuilt only when a dependency changes, not when a tool's
settings in pyproject.toml do. ``tests/test_architecture.py`` checks the two agree.

    python infra/docker/write_requirements.py
"""

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "infra" / "docker" / "requirements.txt"
HEADER = (
    "# The platform's dependencies, as pyproject.toml's [project] dependencies declare them (each one's reason is\n"
    "# there). Written by infra/docker/write_requirements.py; the image's dependency layer installs from it.\n"
)


def requirements_text(pyproject: Path = ROOT / "pyproject.toml") -> str:
    dependencies = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    return HEADER + "".join(f"{line}\n" for line in dependencies)


if __name__ == "__main__":
    TARGET.write_text(requirements_text(), encoding="utf-8")
    sys.stdout.write(f"wrote {TARGET.relative_to(ROOT)}\n")
