"""The PostgreSQL online store (the tests' real PostgreSQL): ``feast materialize`` writes the values into
its tables and ``feast serve`` answers the same lookups as from the SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import psycopg2
import pytest

from mlops.features.environment import FeastEnvironment
from mlops.features.online import FeatureServer, MissingEntityError, OnlineClient
from mlops.features.repository import FeatureRepo
from tests.services.plugin import PostgresService
from tests.support.feast_table import EARLY, LATE, SETTINGS, STALE_ONLY, applied_repository

DATABASE = "feast_online"


@pytest.fixture(scope="module")
def postgres_store(
    feast_environment: FeastEnvironment, postgres: PostgresService, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[FeatureRepo, OnlineClient, str]]:
    url = urlsplit(postgres.database(DATABASE))
    store = f"postgresql://{url.username}@{url.hostname}:{url.port}/{DATABASE}?sslmode=disable"
    folder = tmp_path_factory.mktemp("feast-postgres")
    repo = applied_repository(feast_environment, folder, online_store=store)
    with FeatureServer(feast_environment, repo.path, SETTINGS, folder / "serve.log") as server:
        client = OnlineClient(server.address, SETTINGS)
        yield repo, client, f"postgresql://{url.username}@{url.hostname}:{url.port}/{DATABASE}"
        client.close()


def test_materialize_writes_the_values_into_postgres(
    postgres_store: tuple[FeatureRepo, OnlineClient, str],
) -> None:
    repo, _, dsn = postgres_store
    connection = psycopg2.connect(dsn)
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name LIKE %s",
                (f"%{repo.view}%",),
            )
            tables = [row[0] for row in cursor.fetchall()]
            assert len(tables) == 1, tables
            cursor.execute(f'SELECT count(DISTINCT entity_key) FROM "{tables[0]}"')
            assert cursor.fetchone() == (23,)  # every customer of the table, its newest value each
    finally:
        connection.close()


def test_postgres_answers_the_same_lookups_as_sqlite(
    postgres_store: tuple[FeatureRepo, OnlineClient, str],
    feature_repo: FeatureRepo,
    online_client: OnlineClient,
) -> None:
    repo, client, _ = postgres_store
    ids = [LATE, EARLY, STALE_ONLY]
    from_postgres = client.lookup(repo.service, repo.entity, ids)
    assert from_postgres == online_client.lookup(feature_repo.service, feature_repo.entity, ids)
    assert [row["tenure"] for row in from_postgres] == [13, 12, 4]
    with pytest.raises(MissingEntityError, match=r"customerID='0000-NOPE' has no features"):
        client.lookup(repo.service, repo.entity, [EARLY, "0000-NOPE"])
