"""``mlops score --features SERVICE --entities FILE``: entity ids joined point-in-time with the feature store,
then scored as a file of values would be — the same scores as the flat table with the same rows."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from cli.main import main
from mlops.data.sample_data import SAMPLE_SCHEMA
from mlops.features import feast_cli
from mlops.features.environment import FeastEnvironment
from mlops.features.repository import FeatureRepo, init_repository
from tests.support.feast_table import BASE, SETTINGS
from tests.support.monitoring import MODEL, Monitored, monitored_model, traffic

ROWS = 60


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Monitored:
    return monitored_model(tmp_path_factory.mktemp("score-by-entity"))


@pytest.fixture(scope="module")
def customers(
    model: Monitored, feast_environment: FeastEnvironment
) -> tuple[FeatureRepo, list[str], pd.DataFrame]:
    """The sample rows as a feature table of ids C0000… dated BASE (ttl 30 days), applied in the workspace."""
    rows = traffic(ROWS, seed=41).drop(columns=[SAMPLE_SCHEMA.label])
    ids = [f"C{number:04d}" for number in range(ROWS)]
    repo = init_repository(
        rows.assign(customer_id=ids, event_timestamp=BASE),
        table_name="customers.csv",
        out=model.workspace.root / "features",
        entity="customer_id",
        timestamp="event_timestamp",
        ttl=timedelta(days=30),
        force=True,
    )
    feast_cli.apply(feast_environment, repo.path, SETTINGS)
    return repo, ids, rows


def score(model: Monitored, out: Path, *source: str) -> int:
    workspace = ["--workspace", str(model.workspace.root)]
    return main(
        [*workspace, "score", "--model", f"{MODEL}@champion", "--out", str(out), "--no-progress", *source]
    )


def test_entity_ids_score_as_their_feature_values_do(
    model: Monitored,
    customers: tuple[FeatureRepo, list[str], pd.DataFrame],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo, ids, rows = customers
    entities = tmp_path / "entities.csv"
    pd.DataFrame({"customer_id": ids[::-1], "scored_at": BASE + timedelta(days=1)}).to_csv(
        entities, index=False
    )

    by_entity = ["--features", repo.service, "--entities", str(entities), "--timestamp", "scored_at"]
    assert score(model, tmp_path / "by-entity", *by_entity) == 0
    printed = capsys.readouterr().out
    assert f"joined {ROWS} entity row(s) point-in-time with feature service '{repo.service}'" in printed
    assert f"{ROWS} read, {ROWS} scored, 0 bad" in printed
    rows.to_parquet(tmp_path / "flat.parquet")
    assert score(model, tmp_path / "flat", "--data", str(tmp_path / "flat.parquet")) == 0

    scored = pd.read_parquet(tmp_path / "by-entity").set_index("customer_id")
    flat = pd.read_parquet(tmp_path / "flat")
    assert list(scored.index) == ids[::-1]  # the entity table's order, its ids as the output's id column
    assert "scored_at" in scored.columns
    assert scored.loc[ids, "score"].tolist() == flat.sort_values("row")["score"].tolist()


def test_an_entity_past_the_ttl_or_a_missing_table_is_refused_by_name(
    model: Monitored,
    customers: tuple[FeatureRepo, list[str], pd.DataFrame],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo, ids, _ = customers
    entities = tmp_path / "entities.csv"
    times = [BASE + timedelta(days=1), BASE + timedelta(days=31)]  # the second is past the 30-day TTL
    pd.DataFrame({"customer_id": ids[:2], "scored_at": times}).to_csv(entities, index=False)
    by_entity = ["--features", repo.service, "--entities", str(entities), "--timestamp", "scored_at"]
    assert score(model, tmp_path / "out", *by_entity) == 2
    refused = capsys.readouterr().err
    assert (
        f"customer_id='{ids[1]}', at {pd.Timestamp(times[1])}: no value of feature view 'customers'"
        in refused
    )
    assert "or leave these ids out of --entities" in refused and "--allow-missing" not in refused
    assert not (tmp_path / "out").exists()  # nothing scored, nothing written
    assert score(model, tmp_path / "out", "--features", repo.service) == 2
    assert "--features needs --entities FILE" in capsys.readouterr().err
    assert score(model, tmp_path / "out") == 2
    assert (
        "give either --data FILE (feature values) or --features SERVICE --entities FILE"
        in capsys.readouterr().err
    )
