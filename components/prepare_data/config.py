"""The pipeline's input data: a file, the built-in sample and the knobs that shape it, or an entity table
joined point-in-time with a feature service of the feature store."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from mlops.data.sample_data import SampleDataConfig
from mlops.settings import LOCAL_FILE, SETTINGS_CONFIG

FEATURE_SERVICE_SETTING = "data.features.service"


def no_entity_table(service: str) -> str:
    """What a feature service without an entity table is told (prepare-data, and ``mlops run`` before it starts).

    Not a validator of the section: each setting stays valid on its own, as a form changes one at a time."""
    return (
        f"{FEATURE_SERVICE_SETTING} {service!r} joins features onto an entity table, and data.uri is empty: "
        "pass the entity table (entity ids, event times, labels) with --data"
    )


class FeatureSource(BaseModel):
    """Where the training set comes from when it is built from the feature store (``mlops features``)."""

    model_config = SETTINGS_CONFIG

    service: str = ""
    """Feature service of the feature repository to join data.uri (the entity table: ids, event times, labels) with, point-in-time. Empty: data.uri is the training table itself."""
    repo: str = ""
    """The Feast feature repository (a folder with feature_store.yaml). Empty: the workspace's features/ folder, made absolute when a local run starts."""
    timestamp: str = Field(default="event_timestamp", min_length=1)
    """The entity table's column of each row's event time; feature values dated after it are never joined."""
    allow_missing: bool = False
    """Keep entity rows that find no feature values within a view's TTL (null features) instead of refusing the run."""


class DataSettings(BaseModel):
    """Which data a run reads."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "data"

    uri: str = Field(default="", json_schema_extra=LOCAL_FILE)
    """CSV or Parquet file (local path or s3:// URI); with data.features.service, the entity table. Empty: generate the built-in sample dataset."""
    sample: SampleDataConfig = Field(default_factory=SampleDataConfig)
    """The sample dataset, used when data.uri is empty."""
    features: FeatureSource = Field(default_factory=FeatureSource)
    """The feature store, used when data.features.service is set."""
