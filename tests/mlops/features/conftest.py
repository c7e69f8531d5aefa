"""The Feast venv, built once per session by infra/testing/install_feast.sh (cached per machine)."""

from __future__ import annotations

import pytest

from mlops.features.environment import FeastEnvironment
from tests.mlops.features.feast_fixtures import build_feast_environment


@pytest.fixture(scope="session")
def feast_environment() -> FeastEnvironment:
    return build_feast_environment()
