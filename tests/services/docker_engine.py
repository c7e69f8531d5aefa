"""A private Docker engine (Debian's docker.io) with the platform image in it, for kfp.local's DockerRunner.

Registered from ``tests/conftest.py``. ``docker_engine`` starts ``dockerd`` with its own socket and state
directory (``infra/testing/start_docker.sh``: no systemd, no iptables, host networking), once per session;
``docker_platform_image`` loads the platform image into it (``infra/testing/load_image.sh``: built by
buildah, cached, exported as a docker archive; about 40 s). Tests that use either carry the marker
``docker``. When the engine cannot start the test fails with the reason and the set-up command; it never skips.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mlops.images import PLATFORM_IMAGE
from tests.services.plugin import _start, _stop

MARKER = "docker"
FIXTURES = {"docker_engine", "docker_platform_image"}
SETUP = "bash infra/testing/install_docker.sh && bash infra/testing/install_node.sh"


@dataclass(frozen=True)
class DockerEngine:
    host: str
    """The ``DOCKER_HOST`` value (``unix://…/docker.sock``)."""
    state: Path
    """The engine's data root, exec root and log (``dockerd.log``)."""


@dataclass(frozen=True)
class DockerPlatformImage:
    engine: DockerEngine
    build_tag: str
    """``localhost/mlops:<sources key>``, also tagged as :data:`mlops.images.PLATFORM_IMAGE`."""
    name: str = PLATFORM_IMAGE


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(MARKER)


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[DockerEngine]:
    state = Path(tempfile.mkdtemp(prefix="mlops-test-docker-"))
    env = {"D": str(state)}
    try:
        host = _start("docker engine", "start_docker.sh", env, timeout_s=60, setup=SETUP)
        yield DockerEngine(host, state)
    finally:
        _stop("stop_docker.sh", env)
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session")
def docker_platform_image(docker_engine: DockerEngine) -> DockerPlatformImage:
    tag = _start(
        "platform image in docker",
        "load_image.sh",
        {"DOCKER_HOST": docker_engine.host, "LOAD_IMAGE_NAME": PLATFORM_IMAGE},
        timeout_s=1800,
        setup=SETUP,
    )
    return DockerPlatformImage(docker_engine, tag)
