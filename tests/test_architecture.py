"""The rooms stay as ARCHITECTURE.md draws them: every package under a layer contract, every component
under the independence contract (generated from the folders), and the page naming what exists.

``lint-imports`` enforces the contracts; these tests make sure the contracts cover everything, so a
new component or package cannot slip past them.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
IMPORTLINTER = PYPROJECT["tool"]["importlinter"]
CONTRACTS = {contract["name"]: contract for contract in IMPORTLINTER["contracts"]}
ARCHITECTURE = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


def top_level_packages() -> list[str]:
    """Every importable top-level package the distribution installs (setuptools' include list)."""
    include = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    names = sorted(path.parent.name for path in ROOT.glob("*/__init__.py"))
    return [name for name in names if f"{name}*" in include]


def component_folders() -> list[str]:
    return sorted(path.parent.name for path in (ROOT / "components").glob("*/component.py"))


def contract_of_type(kind: str, containing: str) -> dict:
    matches = [c for c in CONTRACTS.values() if c["type"] == kind and containing in c["name"]]
    assert len(matches) == 1, f"expected one {kind} contract named like {containing!r}, found {len(matches)}"
    return matches[0]


def test_every_installed_package_is_a_root_package_and_in_the_layers_contract() -> None:
    packages = top_level_packages()
    assert set(packages) == set(IMPORTLINTER["root_packages"])
    layers = contract_of_type("layers", "Layers:")["layers"]
    layered = {name.strip() for layer in layers for name in layer.split("|")}
    assert layered == set(packages), "add the new package to the layers contract in pyproject.toml"


def test_the_component_independence_contract_lists_exactly_the_component_folders() -> None:
    contract = contract_of_type("independence", "component never imports another")
    assert contract["modules"] == [f"components.{name}" for name in component_folders()], (
        "a components/<name>/ folder is missing from (or gone from) the independence contract in "
        "pyproject.toml: list every components.<name>, sorted"
    )


def test_the_bottom_package_contract_is_exhaustive() -> None:
    """A new module in ``mlops/`` must be placed in a layer of the bottom package's contract."""
    contract = contract_of_type("layers", "bottom package")
    assert contract["containers"] == ["mlops"]
    assert contract.get("exhaustive") is True
    children = {p.stem for p in (ROOT / "mlops").glob("*.py") if p.stem != "__init__"}
    children |= {p.parent.name for p in (ROOT / "mlops").glob("*/__init__.py")}
    layered = {name.strip() for layer in contract["layers"] for name in layer.split("|")}
    assert children == layered


def test_the_serving_process_is_kept_apart_from_the_control_plane() -> None:
    contract = contract_of_type("forbidden", "serving process")
    assert contract["source_modules"] == ["serving"]
    assert {"delivery", "cli", "pipelines", "components"} <= set(contract["forbidden_modules"])


@pytest.mark.parametrize(
    "package",
    sorted(
        {
            str(path.parent.relative_to(ROOT))
            for path in ROOT.glob("*/*/__init__.py")
            if path.parts[-3] in {"mlops", "serving", "delivery", "cli"} and path.parent.name != "proto"
        }
        | {f"{name}" for name in top_level_packages()}
    ),
)
def test_architecture_md_names_every_package(package: str) -> None:
    assert f"`{package}/" in ARCHITECTURE, f"ARCHITECTURE.md does not say what {package}/ is"


@pytest.mark.parametrize("package", top_level_packages())
def test_the_platform_image_carries_every_package(package: str) -> None:
    """The image's build context, cache key and install check name every installed package (the image
    once shipped without `cli/`, and every pod that ran `mlops` failed with ModuleNotFoundError)."""
    dockerignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert f"!{package}" in dockerignore
    build_image = (ROOT / "infra/testing/build_image.sh").read_text(encoding="utf-8")
    hashed = next(line for line in build_image.splitlines() if line.strip().startswith("find "))
    assert f" {package} " in hashed
    install = (ROOT / "infra/docker/install.sh").read_text(encoding="utf-8")
    imported = next(line for line in install.splitlines() if '-c "import mlops' in line)
    assert f" {package}," in imported


NAMED_PACKAGES = ("mlops", "training", "serving", "delivery", "components", "pipelines", "cli")
CONVENTIONAL_NAMES = {"__init__.py", "component.py", "config.py", "pipeline.py"}
"""Module names every folder of a kind has by convention (a component's wrapper and settings, a pipeline)."""
GENERATED = Path("serving/proto")
"""The gRPC stubs ``generate.sh`` writes: named by protoc."""
COMMANDS = Path("cli/commands")


def module_name_clashes(root: Path = ROOT) -> dict[str, list[str]]:
    """File names two modules share, each with the modules, except the conventional names and generated code.

    A command module (``cli/commands/<command>.py``) is named after its command, so it may share its name
    with a module outside ``cli/`` (``cli/commands/tune.py`` beside a ``tune.py`` elsewhere), never with another
    module of the command line.
    """
    by_name: dict[str, list[Path]] = {}
    for package in NAMED_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if (
                path.name in CONVENTIONAL_NAMES
                or "__pycache__" in relative.parts
                or relative.is_relative_to(GENERATED)
            ):
                continue
            by_name.setdefault(path.name, []).append(relative)
    clashes = {}
    for name, paths in by_name.items():
        command = [p for p in paths if p.parent == COMMANDS]
        others = [p for p in paths if p.parent != COMMANDS]
        if len(others) > 1 or (command and any(p.parts[0] == "cli" for p in others)):
            clashes[name] = [str(p) for p in paths]
    return clashes


def test_no_two_modules_share_a_file_name() -> None:
    clashes = module_name_clashes()
    assert not clashes, (
        f"modules that share a name: {clashes}; name each after what it holds "
        "(data_report.py, drift_report.py …), so a name found in a traceback or an import says which it is"
    )


def test_a_second_module_of_one_name_is_a_clash(tmp_path: Path) -> None:
    for relative in (
        "components/a/report.py",
        "components/b/report.py",
        "components/a/component.py",
        "components/b/component.py",
        "serving/proto/x_pb2.py",
        "serving/x_pb2.py",
        "cli/commands/submit.py",
        "cli/kfp_client/submit.py",
        "cli/commands/tune.py",
        "training/tune.py",
    ):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("")
    assert module_name_clashes(tmp_path) == {
        "report.py": ["components/a/report.py", "components/b/report.py"],
        "submit.py": ["cli/commands/submit.py", "cli/kfp_client/submit.py"],
    }


def folder_named_modules(root: Path = ROOT) -> list[str]:
    """Component logic modules named after their folder (``components/train/train.py``): a name that says
    where the module is, not what it holds."""
    return sorted(
        str(folder.relative_to(root) / f"{folder.name}.py")
        for folder in (root / "components").iterdir()
        if (folder / f"{folder.name}.py").is_file()
    )


def test_no_component_module_is_named_after_its_folder(tmp_path: Path) -> None:
    assert folder_named_modules() == []
    (tmp_path / "components" / "train").mkdir(parents=True)
    (tmp_path / "components" / "train" / "train.py").write_text("")
    (tmp_path / "components" / "train" / "training_task.py").write_text("")
    assert folder_named_modules(tmp_path) == ["components/train/train.py"]


def test_the_image_installs_the_dependencies_pyproject_declares() -> None:
    """The image's dependency layer reads requirements.txt, so a dependency added to pyproject.toml alone would
    never reach the pods."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "write_requirements", ROOT / "infra/docker/write_requirements.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = (ROOT / "infra/docker/requirements.txt").read_text(encoding="utf-8")
    assert written == module.requirements_text(), (
        "run `python infra/docker/write_requirements.py` and commit the file"
    )
