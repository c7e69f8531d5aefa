"""Each feature's AUC alone: a leak stands out, an ID column does not, direction does not matter."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from components.evaluate.single_feature import single_feature_aucs
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    data = generate(SampleDataConfig(rows=4000, seed=31))
    rng = np.random.default_rng(0)
    label = data[SAMPLE_SCHEMA.label].to_numpy()
    # Recorded after the outcome: the label with 1 % of it flipped, as text categories.
    flipped = np.where(rng.random(len(data)) < 0.01, 1 - label, label)
    data["outcome_code"] = np.where(flipped == 1, "CLOSED-DEFAULT", "OPEN")
    data["days_to_event"] = -flipped * 100 + rng.normal(0, 1, len(data))  # numeric, inverted direction
    data["row_id"] = [f"R{i}" for i in range(len(data))]  # unique: a category per row
    return data


def test_a_leaking_column_scores_near_one_and_ranks_first(frame: pd.DataFrame) -> None:
    labels = frame[SAMPLE_SCHEMA.label].to_numpy()
    found = single_feature_aucs(
        frame,
        labels,
        (*SAMPLE_SCHEMA.numeric_features, "days_to_event"),
        (*SAMPLE_SCHEMA.categorical_features, "outcome_code", "row_id"),
    )
    by_name = {f.feature: f.auc for f in found}
    assert [f.feature for f in found[:2]] == sorted(
        ["outcome_code", "days_to_event"], key=lambda n: -by_name[n]
    )
    assert by_name["outcome_code"] == pytest.approx(0.99, abs=0.006)
    # Inverted direction counts as its mirror image, equal to sklearn's 1 - AUC.
    raw = roc_auc_score(labels, frame["days_to_event"])
    assert raw < 0.5 and by_name["days_to_event"] == pytest.approx(1 - raw)
    # A unique ID learnt on one half cannot score the other: chance, not 1.
    assert by_name["row_id"] == pytest.approx(0.5, abs=0.01)
    real = max(by_name[c] for c in SAMPLE_SCHEMA.features)
    assert 0.5 < real < 0.9


def test_a_constant_or_all_missing_feature_scores_chance() -> None:
    labels = np.array([0, 1] * 50)
    frame = pd.DataFrame({"flat": [3.0] * 100, "empty": [np.nan] * 100, "cat": ["a"] * 100})
    found = single_feature_aucs(frame, labels, ("flat", "empty", "absent"), ("cat",))
    assert {f.feature: f.auc for f in found} == {"flat": 0.5, "empty": 0.5, "cat": 0.5}
