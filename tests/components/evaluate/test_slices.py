"""Per-slice evaluation: rows land in the right slice at every bin edge, metrics match sklearn, small slices are named."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from sklearn.metrics import accuracy_score, average_precision_score, f1_score, log_loss, roc_auc_score

from components.evaluate.binary_metrics import expected_calibration_error
from components.evaluate.slices import MISSING, OUTSIDE, point_metrics, slice_report
from mlops.data.dataset import DatasetSchema
from mlops.data.sample_data import SAMPLE_SCHEMA
from mlops.data.slice_spec import SliceSpec
from mlops.settings import section_values


def _frame() -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame(
        {"age": rng.integers(18, 80, n).astype(float), "region": rng.choice(["north", "south"], n)}
    )
    y = rng.integers(0, 2, n)
    p = np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1)
    return frame, y, p


def test_bin_edges_are_pinned() -> None:
    frame = pd.DataFrame({"age": [17.9, 18.0, 29.999, 30.0, 49.0, 50.0, 90.0, 90.01, np.nan]})
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1, 0])
    p = np.linspace(0.1, 0.9, len(y))
    report = slice_report(frame, y, p, [SliceSpec(columns=("age",), bins={"age": (18, 30, 50, 90)})])
    sizes = {s["slice"]: s["size"] for s in report["slices"]}
    # [a, b) for every bin but the last, which also holds its upper edge; beyond the edges and NaN have their own.
    assert sizes == {
        "age=[18, 30)": 2,
        "age=[30, 50)": 2,
        "age=[50, 90]": 2,
        f"age={OUTSIDE}": 2,
        f"age={MISSING}": 1,
    }
    assert sum(sizes.values()) == len(frame)  # no row silently dropped


def test_metrics_match_sklearn_and_carry_intervals() -> None:
    frame, y, p = _frame()
    assert point_metrics(y, p)["roc_auc"] == pytest.approx(roc_auc_score(y, p))
    report = slice_report(frame, y, p, [SliceSpec(columns=("region",))])
    north = next(s for s in report["slices"] if s["slice"] == "region=north")
    rows = (frame["region"] == "north").to_numpy()
    m = north["metrics"]
    assert north["size"] == int(rows.sum()) and north["positives"] == int(y[rows].sum())
    assert m["roc_auc"]["value"] == pytest.approx(roc_auc_score(y[rows], p[rows]))
    assert m["accuracy"]["value"] == pytest.approx(accuracy_score(y[rows], p[rows] >= 0.5))
    assert m["f1"]["value"] == pytest.approx(f1_score(y[rows], p[rows] >= 0.5))
    assert m["log_loss"]["value"] == pytest.approx(log_loss(y[rows], p[rows], labels=[0, 1]))
    assert m["pr_auc"]["value"] == pytest.approx(average_precision_score(y[rows], p[rows]))
    assert m["ece"]["value"] == pytest.approx(expected_calibration_error(y[rows], p[rows]))
    assert set(m) == {"roc_auc", "pr_auc", "accuracy", "f1", "log_loss", "ece", "positive_rate"}
    for stat in m.values():
        assert stat["lower"] <= stat["value"] <= stat["upper"]
    assert m["roc_auc"]["upper"] - m["roc_auc"]["lower"] > 0.01  # a real interval, not a point


def test_combinations_and_smallest_slices_are_named() -> None:
    frame, y, p = _frame()
    frame.loc[:4, "region"] = "east"  # a tiny slice of 5 rows
    spec = SliceSpec(columns=("region", "age"), bins={"age": (18, 40, 80)})
    report = slice_report(frame, y, p, [spec])
    names = {s["slice"] for s in report["slices"]}
    assert "region=north & age=[18, 40)" in names and "region=south & age=[40, 80]" in names
    assert report["smallest"][0]["slice"].startswith("region=east") and report["smallest"][0]["size"] <= 5


def test_one_class_slice_has_undefined_auc_with_a_note() -> None:
    frame = pd.DataFrame({"region": ["a"] * 10 + ["b"] * 10})
    y = np.array([1] * 10 + [0, 1] * 5)
    p = np.linspace(0, 1, 20)
    report = slice_report(frame, y, p, [SliceSpec(columns=("region",))])
    a = next(s for s in report["slices"] if s["slice"] == "region=a")
    assert a["metrics"]["roc_auc"]["value"] is None and "roc_auc undefined" in a["note"]


def test_a_slice_column_missing_from_the_data_is_named() -> None:
    frame, y, p = _frame()
    with pytest.raises(ValueError, match=r"slice column\(s\) \['income'\] are not in the test data"):
        slice_report(frame, y, p, [SliceSpec(columns=("income",), bins={"income": (0, 1)})])


def test_the_schema_checks_slice_declarations() -> None:
    base = section_values(SAMPLE_SCHEMA)
    ok = DatasetSchema.model_validate({**base, "slices": [{"columns": ["region", "sex"]}]})
    assert ok.slices[0].name == "region x sex"
    bad = {
        "numeric without bins": ({"columns": ["age"]}, "'age' is numeric: give its bin edges"),
        "unknown column": ({"columns": ["zip"]}, "'zip' is not a declared feature or protected attribute"),
        "categorical with bins": (
            {"columns": ["region"], "bins": {"region": [0, 1]}},
            "'region' is categorical",
        ),
        "edges not increasing": ({"columns": ["age"], "bins": {"age": [30, 30]}}, "strictly increasing"),
        "one edge": ({"columns": ["age"], "bins": {"age": [30]}}, "at least two"),
        "bins of another column": (
            {"columns": ["region"], "bins": {"age": [1, 2]}},
            "not one of its columns",
        ),
    }
    for case, (spec, message) in bad.items():
        with pytest.raises(ValidationError, match=message):
            DatasetSchema.model_validate({**base, "slices": [spec]})
        assert case
