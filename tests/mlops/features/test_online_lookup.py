"""Online lookups through Feast's own feature server (``feast serve``) on the SQLite online store.

One repository is applied and materialized, and one server started, per module; the server is stopped after.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from mlops.data.dataset import load_table
from mlops.features import feast_cli
from mlops.features.config import FeastSettings
from mlops.features.environment import FeastEnvironment
from mlops.features.online import FeatureServer, MissingEntityError, OnlineClient
from mlops.features.repository import FeatureRepo, init_repository
from tests.mlops.features.feast_fixtures import BASE, EARLY, LATE, NOW, STALE_ONLY, TTL, write_features

SETTINGS = FeastSettings()


@pytest.fixture(scope="module")
def served(
    feast_environment: FeastEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[FeatureRepo, OnlineClient]]:
    folder = tmp_path_factory.mktemp("feast-online")
    table, _ = load_table(str(write_features(folder / "input")))
    repo = init_repository(
        table,
        table_name="telco-churn.csv",
        out=folder / "repo",
        entity="customerID",
        timestamp="event_timestamp",
        ttl=TTL,
    )
    feast_cli.apply(feast_environment, repo.path, SETTINGS)
    feast_cli.materialize(feast_environment, repo.path, SETTINGS, start=BASE - timedelta(days=1), end=NOW)
    with FeatureServer(feast_environment, repo.path, SETTINGS, folder / "serve.log") as server:
        client = OnlineClient(server.address, SETTINGS)
        yield repo, client
        client.close()
    assert server.process is not None and server.process.poll() is not None  # stopped


def test_one_batched_request_returns_the_latest_values_in_order(
    served: tuple[FeatureRepo, OnlineClient],
) -> None:
    repo, client = served
    rows = client.lookup(repo.service, "customerID", [LATE, EARLY])
    assert [row["tenure"] for row in rows] == [13, 12]
    assert [row["TotalCharges"] for row in rows] == [1000.0, 999.0]
    assert rows[0]["Contract"] == "One year"
    assert set(rows[0]) == set(repo.features)


def test_a_missing_entity_is_named(served: tuple[FeatureRepo, OnlineClient]) -> None:
    repo, client = served
    with pytest.raises(
        MissingEntityError, match=r"customerID='0000-NOPE' has no features in the online store"
    ):
        client.lookup(repo.service, "customerID", [EARLY, "0000-NOPE"])


def test_a_value_older_than_the_ttl_is_refused_when_the_client_is_given_it(
    served: tuple[FeatureRepo, OnlineClient],
) -> None:
    """Feast's server answers STALE_ONLY's 20-day-old value as PRESENT whatever the view's 7-day TTL; the
    client applies the age limit it is given (15 days here: EARLY's newest value is 10 days old)."""
    repo, client = served
    assert client.lookup(repo.service, "customerID", [STALE_ONLY])[0]["tenure"] == 4
    limit = timedelta(days=15)
    with pytest.raises(
        MissingEntityError, match=rf"customerID='{STALE_ONLY}'.*older than their feature view's TTL"
    ):
        client.lookup(repo.service, "customerID", [EARLY, STALE_ONLY], max_age=limit)
    assert client.lookup(repo.service, "customerID", [EARLY], max_age=limit)[0]["tenure"] == 12
    with pytest.raises(MissingEntityError, match=rf"customerID='{EARLY}'"):
        client.lookup(repo.service, "customerID", [EARLY], max_age=TTL)


def test_a_server_that_cannot_start_says_why(feast_environment: FeastEnvironment, tmp_path: Path) -> None:
    (tmp_path / "feature_store.yaml").write_text("project: mlops\nprovider: nowhere\n")
    with pytest.raises(ValueError, match="feast serve .* exited"):
        FeatureServer(feast_environment, tmp_path, SETTINGS, tmp_path / "serve.log").start()
