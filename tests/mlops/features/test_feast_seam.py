"""Feast is reached only through its own venv: no platform module imports ``feast`` (the platform's venv
cannot hold it: feast 0.67 pins prometheus_client<0.25 and pandas<3), except the entry script that the
Feast venv's python runs."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ENTRY = ROOT / "mlops" / "features" / "feast_entry.py"
PACKAGES = ("mlops", "training", "serving", "delivery", "components", "pipelines", "cli")


def imports_feast(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if any(name == "feast" or name.startswith("feast.") for name in names):
            return True
    return False


def test_only_the_entry_script_imports_feast() -> None:
    importers = [
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "__pycache__" not in path.parts and imports_feast(path)
    ]
    assert importers == [str(ENTRY.relative_to(ROOT))]
