"""``mlops image build|load``: the platform image every component declares, on this machine.

``build`` makes it from ``infra/docker/Dockerfile`` with buildah when the machine has it (no engine or
registry needed: ``infra/testing/build_image.sh``, cached in ``~/.cache`` by the hash of the sources) or
else with ``docker build``; ``load`` puts the buildah build into the Docker engine ``DOCKER_HOST`` names
(``infra/testing/load_image.sh``), tagged with the name the compiled pipeline uses, so
``mlops run <pipeline> --runner docker`` runs every step in it. Both need a clone of the repository (the
Dockerfile and scripts are not part of the installed package).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import time
from pathlib import Path

from mlops.images import PLATFORM_IMAGE
from mlops.workspace import Workspace

BUILDERS = ("auto", "buildah", "docker")

TORCH_INDEX_ENV = "TORCH_CPU_INDEX_URL"
"""PyTorch's CPU wheel index for a ``docker build`` (empty: torch from PyPI, the several-GB CUDA build)."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "image",
        help="build the platform image and load it into a local Docker engine (for --runner docker)",
        description="The platform image every component declares "
        f"({PLATFORM_IMAGE}): build it, then load it into the Docker engine DOCKER_HOST names.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="{build,load}")
    build = actions.add_parser(
        "build",
        help="build the image (buildah if present, else docker build)",
        description="Build infra/docker/Dockerfile: with buildah (cached in ~/.cache by the sources' hash; "
        "then `mlops image load`) or with docker build straight into the engine. "
        f"{TORCH_INDEX_ENV} in the environment names PyTorch's CPU wheel index for docker build.",
    )
    build.add_argument("--builder", choices=BUILDERS, default="auto", help="which builder (default: auto)")
    build.set_defaults(handler=build_command)
    load = actions.add_parser(
        "load",
        help="put the buildah-built image into the Docker engine (DOCKER_HOST)",
        description=f"Export the buildah build to the Docker engine DOCKER_HOST names and tag it {PLATFORM_IMAGE}; "
        "builds first when the sources changed.",
    )
    load.set_defaults(handler=load_command)


def repository_root() -> Path:
    """The clone this package runs from (an editable install), where the Dockerfile and scripts are."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "infra" / "docker" / "Dockerfile").is_file():
        raise ValueError(
            f"no infra/docker/Dockerfile beside the installed package ({root}): `mlops image` builds from a clone "
            "of the repository installed with `pip install -e .`"
        )
    return root


def choose_builder(wanted: str) -> str:
    """``wanted``, or for ``auto`` buildah when present (no engine needed), else docker; refused naming the
    missing tool."""
    found = {name: shutil.which(name) is not None for name in ("buildah", "docker")}
    builder = (
        wanted if wanted != "auto" else next((name for name in ("buildah", "docker") if found[name]), "")
    )
    if not builder:
        raise ValueError(
            "neither buildah nor docker is installed: install one (Debian: apt-get install buildah)"
        )
    if not found[builder]:
        raise ValueError(f"--builder {builder}: {builder} is not installed")
    return builder


def build_command(args: argparse.Namespace, workspace: Workspace) -> int:
    root = repository_root()
    builder = choose_builder(args.builder)
    started = time.monotonic()
    if builder == "buildah":
        print("building the platform image with buildah (infra/testing/build_image.sh) …", flush=True)
        result = subprocess.run(
            ["bash", str(root / "infra/testing/build_image.sh")], cwd=root, stdout=subprocess.PIPE, text=True
        )
        if result.returncode != 0:
            return result.returncode
        archive, image = result.stdout.strip().splitlines()[-1].split()
        print(f"built {image} in {time.monotonic() - started:.0f} s ({archive})")
        print("next: mlops image load   (puts it into the Docker engine DOCKER_HOST names)")
        return 0
    command = ["docker", "build", "-f", "infra/docker/Dockerfile", "-t", PLATFORM_IMAGE]
    if os.environ.get(TORCH_INDEX_ENV):
        command += ["--build-arg", f"{TORCH_INDEX_ENV}={os.environ[TORCH_INDEX_ENV]}"]
    print(f"building the platform image with {' '.join(command)} .", flush=True)
    code = subprocess.run([*command, "."], cwd=root).returncode
    if code == 0:
        print(
            f"built {PLATFORM_IMAGE} in {time.monotonic() - started:.0f} s, in the engine already (no load needed)"
        )
    return code


def load_command(args: argparse.Namespace, workspace: Workspace) -> int:
    root = repository_root()
    if shutil.which("buildah") is None:
        raise ValueError(
            "mlops image load exports a buildah build; without buildah, `mlops image build` uses docker build, "
            "which puts the image into the engine itself"
        )
    started = time.monotonic()
    result = subprocess.run(
        ["bash", str(root / "infra/testing/load_image.sh"), PLATFORM_IMAGE],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    if result.returncode != 0:
        return result.returncode
    build = result.stdout.strip().splitlines()[-1]
    print(f"{PLATFORM_IMAGE} is {build} in the engine ({time.monotonic() - started:.0f} s)")
    print("next: mlops run training --runner docker")
    return 0
