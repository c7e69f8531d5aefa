"""The sample generator: the same settings always yield the same rows, and its categories share strings."""

from __future__ import annotations

import hashlib

import pytest

from mlops.data.sample_data import CATEGORIES, SampleDataConfig, generate


@pytest.mark.parametrize(
    ("settings", "digest"),
    [
        ({"rows": 3000}, "8b6472755577be556934b12f11fd8ef6bcab7b192008abd9fb65d702d6c01588"),
        (
            {"rows": 3000, "drift": 1.0, "bias": 2.0, "seed": 3, "minority_fraction": 0.1},
            "2fdd95db2c73598f55566a43c1fffee4594e8a911feccc7a43d0d15707ecccf1",
        ),
    ],
)
def test_the_rows_are_pinned(settings: dict[str, float], digest: str) -> None:
    # Digests of the generator before its categories were drawn as shared strings: the same draws, the
    # same bytes (a changed sample would silently move every benchmark and example built on it).
    frame = generate(SampleDataConfig(**settings))  # type: ignore[arg-type]
    assert hashlib.sha256(frame.to_csv(index=False).encode()).hexdigest() == digest


def test_categories_hold_only_their_values_and_missing() -> None:
    frame = generate(SampleDataConfig(rows=5000, missing_rate=0.1))
    for column, values in CATEGORIES.items():
        present = set(frame[column].dropna())
        assert present == set(values), column
        assert 0.05 < frame[column].isna().mean() < 0.15, column
