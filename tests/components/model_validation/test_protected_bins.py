"""Numeric protected attributes are binned: quantile bins by default, the schema file's edges when declared."""

import numpy as np
import pandas as pd
import pytest

from components.model_validation.config import FairnessPolicy
from components.model_validation.fairness import evaluate_fairness
from components.model_validation.group_bins import (
    MISSING_GROUP,
    declared_names,
    group_rows,
    number,
    quantile_names,
)
from mlops.data.dataset import DatasetError, DatasetSchema
from mlops.data.schema_file import parse_schema_file

# A bank-marketing-like age column: 73 distinct ages 18..90, skewed young as such data are.
RNG = np.random.default_rng(5)
AGES = np.clip(np.round(18 + RNG.gamma(4.0, 5.0, size=4000)), 18, 90).astype(int)


def _frame(ages: np.ndarray) -> tuple[pd.DataFrame, np.ndarray]:
    y = (RNG.random(len(ages)) < 0.3).astype(int)
    scores = np.where(RNG.random(len(ages)) < 0.4, 0.75, 0.25)
    return pd.DataFrame({"age": ages, "y": y}), scores


def test_a_numeric_attribute_with_many_values_gets_quantile_bins_not_one_group_per_value() -> None:
    assert len(np.unique(AGES)) > 40
    frame, scores = _frame(AGES)
    (age,) = evaluate_fairness(frame, scores, "y", ["age"], FairnessPolicy())
    q = np.quantile(AGES, [0, 0.25, 0.5, 0.75, 1.0], method="inverted_cdf").astype(int)
    expected = [f"[{q[0]}, {q[1]})", f"[{q[1]}, {q[2]})", f"[{q[2]}, {q[3]})", f"[{q[3]}, {q[4]}]"]
    assert [g.group for g in age.groups] == expected  # in bin order, not text order
    ages = AGES
    for g, low, high in zip(age.groups, q[:-1], q[1:], strict=True):
        last = g is age.groups[-1]
        assert g.size == int(np.sum((ages >= low) & ((ages <= high) if last else (ages < high))))
    assert sum(g.size for g in age.groups) == len(AGES)
    assert age.grouping.startswith(
        f"numeric with {len(np.unique(AGES))} distinct values: grouped into 4 quantile"
    )
    assert any(note.startswith("groups: numeric with") and "protected_bins" in note for note in age.notes)


def test_quantile_bins_follow_the_setting() -> None:
    frame, scores = _frame(AGES)
    (age,) = evaluate_fairness(frame, scores, "y", ["age"], FairnessPolicy(quantile_bins=2))
    assert len(age.groups) == 2


def test_declared_edges_give_open_ended_bins_with_the_value_at_an_edge_in_the_upper_bin() -> None:
    frame = pd.DataFrame({"age": [18, 24, 25, 39, 40, 59, 60, 90, None]})
    grouping = group_rows(frame, "age", declared=[25, 40, 60])
    assert list(grouping.labels) == [
        "< 25", "< 25", "[25, 40)", "[25, 40)", "[40, 60)", "[40, 60)", ">= 60", ">= 60", MISSING_GROUP,
    ]  # fmt: skip
    assert grouping.order == ("< 25", "[25, 40)", "[40, 60)", ">= 60", MISSING_GROUP)
    assert grouping.description == "grouped by the schema file's protected_bins ['25', '40', '60']"


def test_the_schema_files_bins_reach_the_gate() -> None:
    frame, scores = _frame(AGES)
    (age,) = evaluate_fairness(
        frame, scores, "y", ["age"], FairnessPolicy(), protected_bins={"age": (30.0, 50.0)}
    )
    assert [g.group for g in age.groups] == ["< 30", "[30, 50)", ">= 50"]
    assert [g.size for g in age.groups] == [
        int(np.sum(AGES < 30)),
        int(np.sum((AGES >= 30) & (AGES < 50))),
        int(np.sum(AGES >= 50)),
    ]


@pytest.mark.parametrize(
    ("values", "groups"),
    [
        ([1, 2, 2, 1, 2], ["1", "2"]),  # codes: few distinct values stay grouped by value
        (["f", "m", "m", "f", "x"], ["f", "m", "x"]),
        ([True, False, True, True, False], ["False", "True"]),
    ],
)
def test_codes_and_categories_stay_grouped_by_value(values: list, groups: list[str]) -> None:
    assert group_rows(pd.DataFrame({"a": values}), "a").order == tuple(groups)


def test_max_numeric_values_is_the_edge_between_values_and_bins() -> None:
    ten = pd.DataFrame({"a": list(range(10)) * 3})
    assert len(group_rows(ten, "a", max_numeric_values=10).order) == 10  # at the limit: by value
    assert len(group_rows(ten, "a", max_numeric_values=9).order) == 4  # one over: quantile bins


def test_numbers_stored_as_text_are_binned_too() -> None:
    frame = pd.DataFrame({"age": [str(a) for a in AGES[:200]]})
    assert len(group_rows(frame, "age").order) == 4


def test_declared_bins_on_a_text_column_are_a_clear_error() -> None:
    frame = pd.DataFrame({"sex": ["female", "male"]})
    with pytest.raises(
        ValueError,
        match=r"protected_bins declares edges \[1.0\] for 'sex', but its values are not all numbers \(e.g. \['female', 'male'\]\); remove 'sex' from protected_bins",
    ):
        group_rows(frame, "sex", declared=[1.0])


def test_bin_names() -> None:
    assert declared_names([25, 40.5]) == ["< 25", "[25, 40.5)", ">= 40.5"]
    assert quantile_names([18, 29, 90]) == ["[18, 29)", "[29, 90]"]
    assert (number(29.0), number(0.125), number(1e20)) == ("29", "0.125", "1e+20")


# --- the schema file's protected_bins ---


def test_the_schema_file_declares_bins_for_a_protected_attribute() -> None:
    text = """
label: y
numeric_features: [income]
protected_attributes: [age, sex]
protected_bins:
  age: [25, 40, 60]
"""
    schema = parse_schema_file(text, "schema.yaml")
    assert schema.protected_bins == {"age": (25.0, 40.0, 60.0)}
    assert schema.dataset_schema.protected_bins == {"age": (25.0, 40.0, 60.0)}  # travels with the data


@pytest.mark.parametrize(
    ("bins", "message"),
    [
        ({"income": [1, 2]}, "protected_bins names 'income', which is not a protected attribute ['age']"),
        ({"age": [40, 25]}, "protected_bins for 'age' must be finite, strictly increasing edges"),
        ({"age": [25, 25]}, "strictly increasing"),
        ({"age": []}, "got []"),
        ({"age": [float("inf")]}, "strictly increasing"),
    ],
)
def test_bad_bins_name_the_column_and_the_fix(bins: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        DatasetSchema(
            label="y", numeric_features=("income",), protected_attributes=("age",), protected_bins=bins
        )


def test_bad_bins_in_a_schema_file_name_the_field() -> None:
    text = (
        "label: y\nnumeric_features: [income]\nprotected_attributes: [age]\nprotected_bins: {age: [60, 40]}\n"
    )
    with pytest.raises(DatasetError, match="schema file s.yaml is invalid: .*protected_bins for 'age'"):
        parse_schema_file(text, "s.yaml")


# --- through the gate to the report ---


def test_the_gate_and_its_report_show_bins_small_groups_and_intervals_holding_their_estimates() -> None:
    from components.model_validation.config import ExplainabilityPolicy, ValidationConfig
    from components.model_validation.gate_report import render_html, to_json
    from components.model_validation.validation_gate import validate
    from tests.support.gate_inputs import numeric_spec, stub_scorer

    rng = np.random.default_rng(8)
    x = rng.normal(size=len(AGES))
    frame = pd.DataFrame({"x": x, "age": AGES, "y": (rng.random(len(AGES)) < 0.3).astype(int)})
    scorer = stub_scorer(numeric_spec("x"), lambda m: 1 / (1 + np.exp(-m[:, 0])))
    config = ValidationConfig(
        explainability=ExplainabilityPolicy(n_examples=0, permutation_repeats=1, min_rank_agreement=-1)
    )
    result = validate(scorer, frame, "y", ["age"], config, "negative", {"age": (25.0, 40.0, 80.0)})
    (age,) = result.fairness
    assert [g.group for g in age.groups] == ["< 25", "[25, 40)", "[40, 80)", ">= 80"]
    old = next(g for g in age.groups if g.group == ">= 80")
    assert old.positives < 30 and "true_positive_rate" in old.undecided
    note = f"group '>= 80' has {old.size} rows < min_group_size 30, {old.positives} positives < min_group_positives 30"
    assert any(n.startswith(note) for n in age.notes)
    assert f"age: {note}" in result.decisions["fairness"].reason
    for metric, (low, high) in age.intervals.items():
        assert low <= getattr(age, metric) <= high, metric

    page = render_html(result, "m", "1")
    assert (
        "Groups: grouped by the schema file&#39;s protected_bins [&#39;25&#39;, &#39;40&#39;, &#39;80&#39;]"
        in page
    )
    assert "&gt;= 80" in page and "too small for selection/favourable rate, TPR" in page
    body = to_json(result, "m", "1")
    (reported,) = body["fairness"]
    assert reported["grouping"].startswith("grouped by the schema file")
    assert set(reported["intervals"]) == set(age.intervals)
