"""The addresses a retraining reads back from the champion's training run name real settings: a renamed
field would otherwise make every retraining fall back to the sample without a word."""

from __future__ import annotations

from components.data_validation.config import DataValidationSettings
from components.prepare_data.config import DataSettings
from mlops.settings import iter_settings
from mlops.vocabulary import DATA_URI_SETTING, SCHEMA_URI_SETTING, SOURCE_SETTINGS


def test_each_source_setting_is_the_address_of_a_real_setting() -> None:
    addresses = {setting.address for _, setting in iter_settings(DataSettings, DataValidationSettings)}
    assert set(SOURCE_SETTINGS) <= addresses, set(SOURCE_SETTINGS) - addresses
    assert (DATA_URI_SETTING, SCHEMA_URI_SETTING) == ("data.uri", "validation.schema_uri")
