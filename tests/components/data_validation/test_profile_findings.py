"""`mlops data init` on a bank-marketing-like table: each trap is flagged, and the proposed suite passes.

The table (tests/support/bank_marketing.py) is `;`-separated with `unknown` markers, a numeric
protected attribute, a leaking call duration, a mostly-numeric column with bad cells, a date
column, a repeated column name, a near-constant and a high-cardinality column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from components.data_validation.column_findings import (
    is_date_column,
    leak_finding,
    repeated_names,
    single_feature_auc,
)
from components.data_validation.config import ProfileSettings
from components.data_validation.data_profile import Profile, column_roles, profile
from components.data_validation.suite_validation import validate
from mlops.data.dataset import parse_table
from tests.support.bank_marketing import (
    BAD_BALANCE,
    DATE,
    HIGH_CARDINALITY,
    LABEL,
    LEAK,
    NEAR_CONSTANT,
    REPEATED,
    bank_csv,
)


def _bank(data: bytes, **kwargs: object) -> tuple[pd.DataFrame, Profile]:
    frame = parse_table(data, "bank.csv")
    found = profile(
        frame, LABEL, name="bank", protected=("age",), favourable="positive",
        repeated=repeated_names(data), **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip
    return frame, found


@pytest.fixture(scope="module")
def bank() -> tuple[bytes, pd.DataFrame, Profile]:
    data = bank_csv()
    frame, found = _bank(data)
    return data, frame, found


def _warning(found: Profile, column: str) -> str:
    (text,) = [w for w in found.warnings if w.startswith(f"{column}:")]
    return text


def test_data_init_flags_every_trap_of_the_bank_table(bank: tuple[bytes, pd.DataFrame, Profile]) -> None:
    _, _, found = bank
    schema = found.schema
    assert schema.missing_values == ("unknown",)
    assert schema.ignored_columns == (DATE, f"{REPEATED}.1")
    assert "balance" in schema.numeric_features  # 15 'abc' of 3000 did not make it a category
    assert schema.protected_attributes == ("age",)
    assert "15 of 3000 cells (0.50%) are not numbers: 'abc' ×15" in _warning(found, "balance")
    leak = _warning(found, LEAK)
    assert (
        "single-feature ROC AUC 0.99" in leak and "--ignore" not in leak
    )  # one line for all, from data init
    assert found.leaks == [LEAK]
    assert "'no' in 99.33% of rows" in _warning(found, NEAR_CONSTANT)
    assert "80 distinct values" in _warning(found, HIGH_CARDINALITY)
    assert {w.split(":")[0] for w in found.warnings} == {"balance", LEAK, NEAR_CONSTANT, HIGH_CARDINALITY}
    notes = "\n".join(found.notes)
    assert f"{REPEATED}.1: ignored, a repeat of column name '{REPEATED}'" in notes
    assert f"{DATE}: ignored, dates/timestamps (e.g. '2024-" in notes
    assert "read as missing: 'unknown'" in notes


def test_the_bank_suite_uses_mostly_and_a_range_for_the_numeric_protected_attribute(
    bank: tuple[bytes, pd.DataFrame, Profile],
) -> None:
    _, frame, found = bank
    by = {(s.type, s.column): s for s in found.suite.expectations}
    balance = by[("expect_column_values_to_not_be_null", "balance")]
    assert balance.kwargs["mostly"] == 0.97 and balance.meta == {"text_as_missing": True}
    assert "'abc' ×15" in (balance.notes or "")
    # The 78 ages seen are not pinned as the only allowed values: a type and a range instead.
    assert ("expect_column_values_to_be_in_set", "age") not in by
    age_range = by[("expect_column_values_to_be_between", "age")].kwargs
    assert age_range["min_value"] <= 18 and age_range["max_value"] >= 95
    result = validate(frame, found.schema.dataset_schema, found.suite)
    assert result.success, [c.describe() for c in result.failed]
    unseen_age = frame.assign(age=frame["age"].where(frame.index > 0, 50))
    unseen_age.loc[0, "age"] = 57 if 57 not in set(frame["age"]) else 97 - 1
    assert validate(unseen_age, found.schema.dataset_schema, found.suite).success


def test_single_feature_auc_agrees_with_scikit_learn() -> None:
    rng = np.random.default_rng(1)
    labels = pd.Series(rng.integers(0, 2, 500))
    scores = pd.Series(labels * 1.0 + rng.normal(0, 1.5, 500)).round(1)  # ties on purpose
    expected = roc_auc_score(labels, scores)
    assert single_feature_auc(scores, labels) == pytest.approx(max(expected, 1 - expected), abs=1e-12)
    assert single_feature_auc(-scores, labels) == pytest.approx(max(expected, 1 - expected), abs=1e-12)


def test_a_categorical_with_many_rare_values_is_not_a_leak_by_overfitting() -> None:
    rng = np.random.default_rng(2)
    labels = pd.Series(rng.integers(0, 2, 2000))
    unique_per_pair = pd.Series([f"v{i // 2}" for i in range(2000)])  # in-sample encoding would score ~0.9
    assert single_feature_auc(unique_per_pair, labels) < 0.6


def test_the_leak_threshold_at_just_inside_and_just_outside() -> None:
    labels = pd.Series([0, 0, 0, 0, 1, 1, 1, 1])
    feature = pd.Series([1, 2, 3, 6, 4, 5, 7, 8])  # 14 of 16 pairs ordered: AUC 0.875
    auc = single_feature_auc(feature, labels)
    assert auc == pytest.approx(roc_auc_score(labels, feature)) and auc == 0.875
    assert leak_finding("x", auc, threshold=0.875) is None  # at the threshold: not above it
    assert leak_finding("x", auc, threshold=0.8749) is not None  # just under the figure: flagged
    assert leak_finding("x", auc, threshold=0.8751) is None
    frame = pd.DataFrame(
        {"x": feature.tolist() * 50, "z": [0, 1, 0, 1, 1, 0, 1, 0] * 50, "y": labels.tolist() * 50}
    )
    flagged = profile(frame, "y", name="t", settings=ProfileSettings(leak_auc=0.87)).warnings
    assert [w.split(":")[0] for w in flagged] == ["x"] and "ROC AUC 0.8750 > 0.87" in flagged[0]
    assert profile(frame, "y", name="t", settings=ProfileSettings(leak_auc=0.875)).warnings == []


@pytest.mark.parametrize(("bad", "numeric"), [(4, True), (5, True), (6, False)])
def test_mostly_numeric_at_just_inside_and_just_outside_the_share(bad: int, numeric: bool) -> None:
    values: list[object] = [str(v % 10) for v in range(100 - bad)] + ["abc"] * bad
    frame = pd.DataFrame({"v": values})  # 100 cells, the setting's 0.95 share: 95 numbers is numeric
    roles = column_roles(frame, "y", (), ProfileSettings(numeric_share=0.95))
    assert (roles.numeric == ["v"]) is numeric
    assert (roles.categorical == ["v"]) is not numeric
    if numeric:
        assert (
            roles.bad["v"].describe() == f"{bad} of 100 cells ({bad / 100:.2%}) are not numbers: 'abc' ×{bad}"
        )


@pytest.mark.parametrize(("bad", "passes"), [(29, True), (30, True), (31, False)])
def test_the_mostly_fraction_of_a_mostly_numeric_column_at_run_time(bad: int, passes: bool) -> None:
    _, found = _bank(bank_csv(rows=1000, bad_cells=5))
    (spec,) = [
        s for s in found.suite.expectations if s.column == "balance" and s.type.endswith("not_be_null")
    ]
    assert spec.kwargs["mostly"] == 0.97  # 0.5 % observed: 1 - 2 × 0.005 - 0.02
    frame = parse_table(bank_csv(rows=1000, bad_cells=bad), "new.csv")
    result = validate(frame, found.schema.dataset_schema, found.suite)
    assert result.success is passes
    if not passes:
        (failed,) = result.failed
        assert failed.column == "balance"
        assert "3.10% null (31 of 1000 rows)" in failed.observed_text
        assert (
            f"of which 31 of 1000 cells (3.10%) are not numbers: '{BAD_BALANCE}' ×31" in failed.observed_text
        )


def test_dates_are_recognised_and_numbers_are_not_dates() -> None:
    assert is_date_column(pd.Series(["2024-01-31", "2023-12-01 10:11:12", None]), 0.95)
    assert is_date_column(pd.Series(pd.to_datetime(["2024-01-31", "2024-02-01"])), 0.95)
    assert is_date_column(pd.Series(["31/01/2024", "01/02/2024"]), 0.95)
    assert not is_date_column(pd.Series([20240131, 20240201]), 0.95)
    assert not is_date_column(pd.Series(["1.5", "2.5"]), 0.95)
    assert not is_date_column(pd.Series(["2024-01-31"] * 94 + ["soon"] * 6), 0.95)
    assert is_date_column(pd.Series(["2024-01-31"] * 95 + ["soon"] * 5), 0.95)


def test_repeated_names_come_from_the_raw_header() -> None:
    assert repeated_names(b"a;b;a;c;a\n1;2;3;4;5\n") == {"a.1": "a", "a.2": "a"}
    assert repeated_names(b'"x","y"\r\n1,2\r\n') == {}
    assert repeated_names(b"\xef\xbb\xbfid,id\n1,2\n") == {"id.1": "id"}


def test_ignore_drops_columns_and_refuses_the_label_and_unknown_names() -> None:
    data = bank_csv(rows=600)
    _, found = _bank(data, ignore=(LEAK, "branch"))
    assert found.schema.ignored_columns == (DATE, "branch", f"{REPEATED}.1", LEAK)
    assert LEAK not in found.schema.features and not any(w.startswith(f"{LEAK}:") for w in found.warnings)
    assert not any(s.column == LEAK for s in found.suite.expectations)
    with pytest.raises(ValueError, match=r"column\(s\) \['durration'\] not in the data"):
        _bank(data, ignore=("durration",))
    with pytest.raises(ValueError, match=r"--ignore \['y'\]: the label and protected attributes cannot"):
        _bank(data, ignore=("y",))


def test_a_leak_warning_names_the_column_its_figure_and_the_threshold_only_above_it() -> None:
    """The fix (one --ignore line for every leak, quoted for the shell) is data init's last line."""
    finding = leak_finding("worst perimeter", 0.9755, 0.9)
    assert finding is not None and finding.startswith(
        "worst perimeter: may leak the label, single-feature ROC AUC 0.9755 > 0.9"
    )
    assert "--ignore" not in finding
    assert leak_finding("duration", 0.9, 0.9) is None  # at the threshold: not above it
    assert leak_finding("duration", 0.9000001, 0.9) is not None
