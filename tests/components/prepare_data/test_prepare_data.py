"""prepare-data: a file passes through, an empty data.uri is the sample, and a feature service needs an entity
table, a repository and Feast. The join itself (rows point-in-time, the lineage record) is checked on the step's
output by tests/pipelines/test_feature_store_training.py, which runs it in a pipeline (one Feast join, not two)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from components.prepare_data.config import DataSettings
from components.prepare_data.data_source import prepare
from mlops.features.environment import FeastError
from mlops.settings import SettingsError, from_section
from tests.support.feast_table import BASE, EARLY, LATE


def entity_table(folder: Path) -> Path:
    path = folder / "labels.csv"
    pd.DataFrame(
        [
            (EARLY, BASE + timedelta(days=5), 1),
            (LATE, BASE + timedelta(days=11), 0),
            (EARLY, BASE + timedelta(days=11), 0),
        ],
        columns=["customerID", "label_time", "Churn"],
    ).to_csv(path, index=False)
    return path


def test_unknown_feature_settings_and_a_service_without_an_entity_table_are_refused_by_name(
    tmp_path: Path,
) -> None:
    with pytest.raises(SettingsError, match=r"data.features.servce"):
        from_section(DataSettings, {"features": {"servce": "churn"}})
    with pytest.raises(SettingsError, match=r"data.features.timestamp"):
        from_section(DataSettings, {"features": {"timestamp": ""}})
    plain = from_section(DataSettings, {}, uri="x.csv")
    assert plain.features.service == "" and plain.features.timestamp == "event_timestamp"
    alone = from_section(DataSettings, {"features": {"service": "churn"}})  # each setting valid on its own
    with pytest.raises(ValueError, match=r"data.features.service 'churn'.*data.uri is empty.*--data"):
        prepare(alone, tmp_path / "out")


def test_a_file_passes_through_and_no_file_is_the_sample(tmp_path: Path) -> None:
    table = entity_table(tmp_path)
    assert prepare(DataSettings(uri=str(table)), tmp_path / "out").source == "file"
    sample = prepare(DataSettings.model_validate({"sample": {"rows": 50}}), tmp_path / "sample")
    assert (sample.source, len(pd.read_parquet(sample.uri))) == ("sample", 50)
    with pytest.raises(FileNotFoundError, match="data.uri 'nope.csv' is not an existing file"):
        prepare(DataSettings(uri="nope.csv"), tmp_path / "out")


def test_a_feature_service_without_a_repository_or_without_feast_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = str(entity_table(tmp_path))
    with pytest.raises(ValueError, match="data.features.repo is empty"):
        prepare(DataSettings.model_validate({"uri": table, "features": {"service": "s"}}), tmp_path / "o")
    monkeypatch.setenv("MLOPS_FEAST_HOME", str(tmp_path / "nowhere"))
    settings = DataSettings.model_validate(
        {"uri": table, "features": {"service": "s", "repo": str(tmp_path)}}
    )
    with pytest.raises(FeastError, match="no Feast 0.67.0 environment at .*mlops features setup"):
        prepare(settings, tmp_path / "o")
