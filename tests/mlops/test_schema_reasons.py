"""The schema file's ``reasons:``: texts per feature, validated against the features it declares."""

from __future__ import annotations

import pytest

from mlops.data.dataset import DatasetError
from mlops.data.schema_file import parse_schema_file

BASE = "label: default\nnumeric_features: [income, age]\ncategorical_features: [region]\n"


def test_reasons_are_read_per_feature() -> None:
    parsed = parse_schema_file(BASE + "reasons:\n  income: Income too low\n  region: Region\n", "s.yaml")
    assert parsed.reasons == {"income": "Income too low", "region": "Region"}
    assert parse_schema_file(BASE, "s.yaml").reasons == {}


def test_a_reason_for_a_column_that_is_not_a_feature_is_named() -> None:
    with pytest.raises(DatasetError, match=r"reasons names \['default'\], which are not features"):
        parse_schema_file(BASE + "reasons:\n  default: The label\n", "s.yaml")


def test_an_empty_reason_text_is_refused() -> None:
    with pytest.raises(DatasetError, match=r"reasons gives \['age'\] an empty text"):
        parse_schema_file(BASE + "reasons:\n  age: '  '\n", "s.yaml")
