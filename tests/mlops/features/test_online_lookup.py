"""Online lookups through Feast's own feature server (``feast serve``) on the SQLite online store (the
session's applied repository and server, from conftest.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from mlops.features.environment import FeastEnvironment
from mlops.features.online import FeatureServer, MissingEntityError, OnlineClient
from mlops.features.repository import FeatureRepo
from tests.support.feast_table import EARLY, LATE, SETTINGS, STALE_ONLY, TTL


def test_one_batched_request_returns_the_latest_values_in_order(
    feature_repo: FeatureRepo, online_client: OnlineClient
) -> None:
    repo, client = feature_repo, online_client
    rows = client.lookup(repo.service, "customerID", [LATE, EARLY])
    assert [row["tenure"] for row in rows] == [13, 12]
    assert [row["TotalCharges"] for row in rows] == [1000.0, 999.0]
    assert rows[0]["Contract"] == "One year"
    assert set(rows[0]) == set(repo.features)


def test_a_missing_entity_is_named(feature_repo: FeatureRepo, online_client: OnlineClient) -> None:
    repo, client = feature_repo, online_client
    with pytest.raises(
        MissingEntityError, match=r"customerID='0000-NOPE' has no features in the online store"
    ):
        client.lookup(repo.service, "customerID", [EARLY, "0000-NOPE"])


def test_a_value_older_than_the_ttl_is_refused_when_the_client_is_given_it(
    feature_repo: FeatureRepo, online_client: OnlineClient
) -> None:
    """Feast's server answers STALE_ONLY's 20-day-old value as PRESENT whatever the view's 7-day TTL; the
    client applies the age limit it is given (15 days here: EARLY's newest value is 10 days old)."""
    repo, client = feature_repo, online_client
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
