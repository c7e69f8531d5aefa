"""A training set from the feature store joins each label with the feature values known at its time.

The session's applied repository (conftest.py) is the feature store.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from mlops.features.environment import FeastEnvironment, FeastError
from mlops.features.repository import FeatureRepo
from mlops.features.training_set import build_training_set
from tests.support.feast_table import (
    BASE,
    EARLY,
    LATE,
    NOW,
    SETTINGS,
    STALE_ONLY,
    TTL,
    applied_repository,
)


def entities(tmp_path: Path, rows: list[tuple[str, object, int]]) -> Path:
    path = tmp_path / "labels.csv"
    pd.DataFrame(rows, columns=["customerID", "event_timestamp", "Churn"]).to_csv(path, index=False)
    return path


def test_a_value_dated_after_the_label_is_not_joined(
    feast_environment: FeastEnvironment,
    feature_repo: FeatureRepo,
    tmp_path: Path,
) -> None:
    """EARLY has tenure 2 at BASE and 12 at BASE+10d; a label at BASE+5d must see 2, one at BASE+11d 12."""
    labels = entities(
        tmp_path,
        [
            (EARLY, BASE + timedelta(days=5), 1),
            (LATE, BASE + timedelta(days=11), 0),
            (EARLY, BASE + timedelta(days=11), 0),
            (EARLY, BASE + timedelta(days=5), 0),  # the same entity and time again (two labels): both joined
        ],
    )
    built = build_training_set(
        feast_environment,
        feature_repo.path,
        SETTINGS,
        service=feature_repo.service,
        entities_uri=str(labels),
        out=tmp_path / "train.parquet",
    )
    frame = pd.read_parquet(tmp_path / "train.parquet")
    assert list(frame["customerID"]) == [EARLY, LATE, EARLY, EARLY]  # the entity table's order is kept
    assert list(frame["tenure"]) == [2, 13, 12, 2]
    assert list(frame["TotalCharges"]) == [100.0, 1000.0, 999.0, 100.0]
    assert list(frame["Churn"]) == [1, 0, 0, 0]
    record = json.loads(built.record_path.read_text())
    assert record["feature_service"] == feature_repo.service
    view = record["feature_views"][feature_repo.view]
    assert view["features"] == list(feature_repo.features)
    assert view["ttl_seconds"] == int(TTL.total_seconds())
    assert len(view["definition_sha256"]) == 64
    assert record["entity_table"]["sha256"] == hashlib.sha256(labels.read_bytes()).hexdigest()
    assert (
        record["training_set"]["sha256"]
        == hashlib.sha256((tmp_path / "train.parquet").read_bytes()).hexdigest()
    )


def test_a_label_past_the_ttl_is_refused_by_entity_and_view(
    feast_environment: FeastEnvironment,
    feature_repo: FeatureRepo,
    tmp_path: Path,
) -> None:
    late = BASE + TTL + timedelta(days=1)  # STALE_ONLY's one value (at BASE) is older than the TTL here
    labels = entities(tmp_path, [(EARLY, BASE + timedelta(days=1), 1), (STALE_ONLY, late, 0)])
    with pytest.raises(
        FeastError, match=rf"customerID='{STALE_ONLY}'.*no value of feature view '{feature_repo.view}'"
    ):
        build_training_set(
            feast_environment,
            feature_repo.path,
            SETTINGS,
            service=feature_repo.service,
            entities_uri=str(labels),
            out=tmp_path / "t.parquet",
        )
    assert not (tmp_path / "t.parquet").exists()
    kept = build_training_set(
        feast_environment,
        feature_repo.path,
        SETTINGS,
        service=feature_repo.service,
        entities_uri=str(labels),
        out=tmp_path / "t.parquet",
        allow_missing=True,
    )
    assert kept.frame["tenure"].isna().tolist() == [False, True]
    assert kept.record["rows_without_features"] == 1


def test_an_unknown_service_names_the_ones_there_are(
    feast_environment: FeastEnvironment,
    feature_repo: FeatureRepo,
    tmp_path: Path,
) -> None:
    labels = entities(tmp_path, [(EARLY, NOW, 1)])
    with pytest.raises(
        FeastError, match=rf"no feature service 'churn'.*{feature_repo.service}.*mlops features apply"
    ):
        build_training_set(
            feast_environment,
            feature_repo.path,
            SETTINGS,
            service="churn",
            entities_uri=str(labels),
            out=tmp_path / "t.parquet",
        )


def test_a_views_definition_hash_is_the_same_wherever_and_whenever_it_was_applied(
    feast_environment: FeastEnvironment, feature_repo: FeatureRepo, tmp_path: Path
) -> None:
    """The same table written and applied in another folder, later, hashes the same (Feast stores the file
    source's path absolute and stamps its apply time); a changed TTL does not."""
    again = applied_repository(feast_environment, tmp_path / "elsewhere", materialize=False)
    shorter = applied_repository(
        feast_environment, tmp_path / "shorter", materialize=False, ttl=timedelta(days=3)
    )
    labels = entities(tmp_path, [(EARLY, BASE + timedelta(days=1), 1)])

    def view_hash(repo: FeatureRepo) -> str:
        built = build_training_set(
            feast_environment,
            repo.path,
            SETTINGS,
            service=repo.service,
            entities_uri=str(labels),
            out=tmp_path / repo.path.parent.name / "train.parquet",
        )
        return str(built.record["feature_views"][repo.view]["definition_sha256"])

    assert view_hash(again) == view_hash(feature_repo)
    assert view_hash(shorter) != view_hash(feature_repo)
