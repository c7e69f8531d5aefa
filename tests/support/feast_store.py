"""Feature store fixtures for every test folder (a pytest plugin, tests/conftest.py): the Feast venv, built once per session by infra/testing/install_feast.sh (cached per machine), and one
applied, materialized feature repository (the churn-like table of ``feast_fixtures``) shared by every test
that reads it; a test that needs a repository of its own writes one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mlops.features.environment import FeastEnvironment
from mlops.features.online import FeatureServer, OnlineClient
from mlops.features.repository import FeatureRepo
from tests.support.feast_table import SETTINGS, applied_repository, build_feast_environment


@pytest.fixture(scope="session")
def feast_environment() -> FeastEnvironment:
    return build_feast_environment()


@pytest.fixture(scope="session")
def feature_repo(
    feast_environment: FeastEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> FeatureRepo:
    """Applied, and materialized from BASE - 1 day to NOW (Feast's CLI takes seconds to start: once)."""
    return applied_repository(feast_environment, tmp_path_factory.mktemp("feast-repo"))


@pytest.fixture(scope="session")
def feature_server(
    feast_environment: FeastEnvironment, feature_repo: FeatureRepo, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FeatureServer]:
    """``feast serve`` over ``feature_repo``, stopped (and checked stopped) at the session's end."""
    log = tmp_path_factory.mktemp("feast-serve") / "serve.log"
    with FeatureServer(feast_environment, feature_repo.path, SETTINGS, log) as server:
        yield server
    assert server.process is not None and server.process.poll() is not None


@pytest.fixture
def online_client(feature_server: FeatureServer) -> Iterator[OnlineClient]:
    client = OnlineClient(feature_server.address, SETTINGS)
    yield client
    client.close()
