"""Every step of a local run in the platform image: kfp.local's ``DockerRunner``, set up for a workspace.

KFP users test their containerized components with ``DockerRunner`` before they go to a cluster; here
it runs each step in the image the compiled pipeline names (``mlops.images.PLATFORM_IMAGE``, put into
the local engine by ``mlops image load``). The runner mounts only the pipeline root, so the rest of
what a step reads or writes is mounted at the same absolute path: the workspace (the SQLite tracking
store, the artifact root, the signing keys, the audit trail), the folders of the files the settings
name, and the paths the ``MLOPS_*`` environment names. Containers use the host's network (a tracking server on
127.0.0.1 stays reachable), run as the calling user (files in the workspace stay the user's) and get
the platform's environment variables, since a container inherits none.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlops.images import PLATFORM_IMAGE
from mlops.tracking.telemetry import TELEMETRY_OFF
from mlops.workspace import Workspace, workspace_of

FORWARDED_PREFIXES = ("MLOPS_", "MLFLOW_", "AWS_", "KFP_")
"""Environment variables a step may read (settings, tracking, S3 credentials), passed into each container."""

DOCKER_HOME = ".docker-home"
"""A writable home inside the workspace for the calling user's uid (the image has no such user)."""

HOW_TO_LOAD = "mlops image build && mlops image load"


class DockerUnavailable(ValueError):
    """No engine to run steps in, or no platform image in it: what is missing and the command that fixes it
    (a ValueError, so the command line reports it as a usage error rather than a traceback)."""


@dataclass(frozen=True)
class ImageInEngine:
    """The platform image as the engine has it: its id, every tag (the build's own tag names its sources)."""

    id: str
    tags: tuple[str, ...]

    @property
    def build_tag(self) -> str:
        return next((tag for tag in self.tags if tag != PLATFORM_IMAGE), PLATFORM_IMAGE)


def docker_client() -> Any:
    """A client of the engine ``DOCKER_HOST`` names (else the default socket), checked to answer."""
    try:
        import docker
    except ImportError as exc:  # pragma: no cover - docker is a dependency of the package
        raise DockerUnavailable("the docker Python package is missing: pip install docker") from exc
    where = os.environ.get("DOCKER_HOST", "the default socket (unix:///var/run/docker.sock)")
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:  # noqa: BLE001 - docker raises several unrelated types for "no engine"
        raise DockerUnavailable(
            f"no Docker engine answers at {where} ({type(exc).__name__}): start one, or point DOCKER_HOST at it "
            "(infra/testing/start_docker.sh starts a private engine), or run with --runner subprocess"
        ) from exc
    return client


def platform_image(client: Any) -> ImageInEngine:
    """The platform image in the engine, or :class:`DockerUnavailable` naming the commands that put it there."""
    import docker

    try:
        image = client.images.get(PLATFORM_IMAGE)
    except docker.errors.ImageNotFound as exc:
        raise DockerUnavailable(
            f"the platform image {PLATFORM_IMAGE} is not in the Docker engine: build it and load it ({HOW_TO_LOAD})"
        ) from exc
    return ImageInEngine(id=image.short_id.removeprefix("sha256:"), tags=tuple(image.tags))


def forwarded_environment(environ: Mapping[str, str], workspace: Workspace) -> dict[str, str]:
    """The variables a step reads, a home it can write to (the image has no user for our uid), and MLflow's
    telemetry off (:mod:`mlops.tracking.telemetry`; the image sets it too, this holds for any image)."""
    forwarded = {name: value for name, value in environ.items() if name.startswith(FORWARDED_PREFIXES)}
    forwarded["HOME"] = str(workspace.root / DOCKER_HOME)
    forwarded.update(TELEMETRY_OFF)
    return forwarded


def mounts_for(
    workspace: Workspace,
    named_files: Iterable[str],
    environment: Mapping[str, str],
    writable: Iterable[Path] = (),
) -> list[Any]:
    """Bind mounts at the same absolute paths: the workspace and ``writable`` (a tracking store or artifact
    root outside it) read-write; the folder of each file the settings name, read-only (a schema file names
    its suite and behavioural tests relative to itself); and the existing paths the forwarded environment
    names (read-write: an audit trail or key elsewhere). A path inside another mount is left out unless it
    needs write access the outer one does not give (docker mounts the inner one over it)."""
    from docker.types import Mount

    read_only: dict[Path, bool] = {workspace.root: False}
    for path in writable:
        read_only[path] = False
    for value in named_files:
        path = Path(value)
        if path.is_absolute() and path.exists():
            read_only.setdefault(path if path.is_dir() else path.parent, True)
    for value in environment.values():
        if value.startswith("/") and Path(value).exists():
            read_only[Path(value)] = False

    def covered(path: Path) -> bool:
        return any(
            path != outer and path.is_relative_to(outer) and (read_only[path] or not read_only[outer])
            for outer in read_only
        )

    return [
        Mount(target=str(path), source=str(path), type="bind", read_only=read_only[path])
        for path in sorted(read_only)
        if not covered(path)
    ]


def docker_runner(
    workspace: Workspace, named_files: Iterable[str] = (), writable: Iterable[Path] = ()
) -> tuple[Any, ImageInEngine]:
    """kfp.local's DockerRunner for ``workspace``, after checking the engine and the image are there."""
    from kfp import local

    client = docker_client()
    try:
        image = platform_image(client)
    finally:
        client.close()
    environment = forwarded_environment(os.environ, workspace)
    writable = list(writable)
    for path in [Path(environment["HOME"]), *writable]:
        path.mkdir(parents=True, exist_ok=True)
    runner = local.DockerRunner(
        network_mode="host",
        user=f"{os.getuid()}:{os.getgid()}",
        environment=environment,
        mounts=mounts_for(workspace, named_files, environment, writable),
    )
    return runner, image


def local_store_paths(tracking_uri: str, artifact_root: str) -> list[Path]:
    """The directories a SQLite tracking store and a ``file://`` artifact root live in (steps write there)."""
    store = workspace_of(tracking_uri)
    paths = [store] if store is not None else []
    if artifact_root.startswith("file://"):
        paths.append(Path(artifact_root.removeprefix("file://")))
    return [path for path in paths if path.is_absolute()]
