"""The Feast venv and a small churn-like feature table (string ids as in the public Telco churn data:
``7590-VHVEG``; mostly numeric, one text feature), shared by the feature store tests.

The venv is built by infra/testing/install_feast.sh once per machine (cached); a test that needs it fails,
naming the script, where it cannot be built: never skipped.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from mlops.data.dataset import load_table
from mlops.features import environment, feast_cli
from mlops.features.config import INSTALL_SCRIPT, FeastSettings
from mlops.features.environment import FeastEnvironment, FeastError
from mlops.features.repository import FeatureRepo, init_repository

NOW = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
BASE = NOW - timedelta(days=20)
"""The feature table's first day; values are dated from here to NOW - 10 days (all materialized)."""
TTL = timedelta(days=7)
EARLY, LATE, STALE_ONLY = "7590-VHVEG", "5575-GNVDE", "3668-QPYBK"
"""A customer with a value at BASE and a newer one at BASE+10d; a second such customer; one whose only value
is at BASE (so any time past BASE + TTL finds nothing)."""
SETTINGS = FeastSettings()


def build_feast_environment() -> FeastEnvironment:
    """The Feast venv (built on first use, then found in the per-machine cache), or the test fails naming
    the script."""
    try:
        return environment.install(FeastSettings())
    except FeastError as exc:
        pytest.fail(f"the Feast venv could not be built by {INSTALL_SCRIPT}: {exc}")


def churn_features() -> pd.DataFrame:
    rows = []
    for number, customer in enumerate((EARLY, LATE, STALE_ONLY)):
        rows.append((customer, BASE, 2 + number, 29.85 + number, 100.0 + number, "Month-to-month"))
        if customer != STALE_ONLY:
            rows.append(
                (customer, BASE + timedelta(days=10), 12 + number, 56.95 + number, 999.0 + number, "One year")
            )
    for number in range(20):  # more customers, so the table looks like a table
        rows.append(
            (
                f"{1000 + number}-FILLR",
                BASE + timedelta(days=number % 10),
                number,
                20.0 + number,
                5.0 * number,
                "Two year",
            )
        )
    return pd.DataFrame(
        rows,
        columns=["customerID", "event_timestamp", "tenure", "MonthlyCharges", "TotalCharges", "Contract"],
    )


def write_features(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "telco-churn.csv"
    churn_features().to_csv(path, index=False)
    return path


def applied_repository(
    env: FeastEnvironment,
    folder: Path,
    *,
    materialize: bool = True,
    online_store: str = "sqlite",
    ttl: timedelta = TTL,
) -> FeatureRepo:
    """A repository written from the churn-like table by ``mlops features init``'s code (its online store
    ``online_store``), applied, and (unless told not to) materialized from BASE - 1 day to NOW."""
    table, _ = load_table(str(write_features(folder / "input")))
    repo = init_repository(
        table,
        table_name="telco-churn.csv",
        out=folder / "repo",
        entity="customerID",
        timestamp="event_timestamp",
        ttl=ttl,
        online_store=online_store,
    )
    feast_cli.apply(env, repo.path, SETTINGS)
    if materialize:
        feast_cli.materialize(env, repo.path, SETTINGS, start=BASE - timedelta(days=1), end=NOW)
    return repo
