"""Behavioural tests on a sane model and on one deliberately trained to learn the wrong things."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from components.model_validation.behavioural import run_directional, run_invariance, run_suite
from components.model_validation.config import (
    SAMPLE_DIRECTIONAL_TESTS,
    SAMPLE_INVARIANCE_TESTS,
    BehaviouralSuite,
    DirectionalTest,
    InvarianceTest,
    ValidationConfig,
)
from components.model_validation.scoring import load_scorer
from components.model_validation.validation_gate import validate
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from tests.support.model_factory import fit_model


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, pd.DataFrame]:
    frame = generate(SampleDataConfig(rows=5000, seed=31))
    return frame.iloc[:4000], frame.iloc[4000:]


@pytest.fixture(scope="module")
def sane(data: tuple[pd.DataFrame, pd.DataFrame], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fit_model(data[0], SAMPLE_SCHEMA, tmp_path_factory.mktemp("sane"))


@pytest.fixture(scope="module")
def broken(data: tuple[pd.DataFrame, pd.DataFrame], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Trained on labels that depend on the region and FALL with delinquencies: what the tests must catch."""
    train = data[0].copy()
    delinquencies = train["num_delinquencies"].fillna(0).to_numpy()
    logit = -0.5 + 3.0 * (train["region"] == "north").to_numpy() - 1.5 * delinquencies
    rng = np.random.default_rng(0)
    train["default"] = (rng.random(len(train)) < 1 / (1 + np.exp(-logit))).astype(int)
    return fit_model(train, SAMPLE_SCHEMA, tmp_path_factory.mktemp("broken"), steps=400)


SAMPLE_TESTS = BehaviouralSuite(invariance=SAMPLE_INVARIANCE_TESTS, directional=SAMPLE_DIRECTIONAL_TESTS)


def test_sane_model_passes_the_sample_suite(sane: Path, data: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    results = run_suite(load_scorer(sane), data[1], SAMPLE_TESTS, seed=0)
    assert [r.name for r in results] == [
        "invariance:region:permute",
        "invariance:years_at_address:shift +5",
        "directional:num_delinquencies:+2:non_decreasing",
        "directional:debt_to_income:+0.2:non_decreasing",
        "directional:interest_rate:+0.05:non_decreasing",
        "directional:credit_score:+50:non_increasing",
    ]
    failed = {r.name: [v.message for v in r.violations] for r in results if not r.passed}
    assert failed == {}
    by_name = {r.name: r for r in results}
    assert by_name["directional:num_delinquencies:+2:non_decreasing"].mean_change > 0.02
    assert by_name["directional:credit_score:+50:non_increasing"].mean_change < -0.02


def test_broken_model_fails_invariance_and_direction(
    broken: Path, data: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    scorer, test = load_scorer(broken), data[1]
    region = run_invariance(scorer, test, InvarianceTest(feature="region"), seed=0)
    assert not region.passed
    assert {v.metric for v in region.violations} == {"mean_abs_change", "max_abs_change"}
    mean_violation = next(v for v in region.violations if v.metric == "mean_abs_change")
    assert mean_violation.message.startswith(
        f"invariance:region:permute: mean_abs_change {region.mean_abs_change:.4f} > max 0.0300"
    )

    delinquencies = run_directional(
        scorer, test, DirectionalTest(feature="num_delinquencies", delta=2, expectation="non_decreasing")
    )
    assert delinquencies.mean_change < 0
    (violation,) = delinquencies.violations
    assert violation.metric == "pass_fraction" and violation.value < 0.5 and violation.threshold == 0.95
    assert "rows moved the wrong way by more than 0.01" in violation.detail

    result = validate(scorer, test, "default", ["sex"], ValidationConfig(behavioural=SAMPLE_TESTS))
    assert result.decisions["behavioural"].decision == "reject"
    assert result.decision.decision == "reject"
    assert "directional:num_delinquencies:+2:non_decreasing: pass_fraction" in result.decision.reason


def test_rows_missing_the_feature_are_left_out(sane: Path, data: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    test = data[1]
    present = int(test["num_delinquencies"].notna().sum())
    assert present < len(test)  # the sample data has gaps in this column
    result = run_directional(
        load_scorer(sane),
        test,
        DirectionalTest(feature="num_delinquencies", delta=1, expectation="non_decreasing"),
    )
    assert result.n_rows == present
    permuted = run_invariance(load_scorer(sane), test, InvarianceTest(feature="num_delinquencies"), seed=0)
    assert permuted.n_rows == len(test)


def test_tests_on_features_the_model_cannot_take_are_clear_errors(
    sane: Path, data: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    scorer, test = load_scorer(sane), data[1]
    with pytest.raises(ValueError, match=r"has no feature 'zip_code'; its features are \['age'"):
        run_invariance(scorer, test, InvarianceTest(feature="zip_code"), seed=0)
    with pytest.raises(ValueError, match=r"'region', which is categorical; use an invariance test"):
        run_directional(
            scorer, test, DirectionalTest(feature="region", delta=1, expectation="non_decreasing")
        )
    with pytest.raises(ValueError, match=r"'region', which is categorical"):
        run_invariance(scorer, test, InvarianceTest(feature="region", perturbation="shift", shift=1), seed=0)
    # The whole gate refuses a mis-declared suite before scoring anything.
    bad = ValidationConfig(behavioural=BehaviouralSuite(invariance=(InvarianceTest(feature="zip_code"),)))
    with pytest.raises(ValueError, match="zip_code"):
        validate(scorer, test, "default", ["sex"], bad)


def test_test_declarations_are_validated() -> None:
    with pytest.raises(ValidationError, match="delta 0"):
        DirectionalTest(feature="income", delta=0, expectation="non_increasing")
    with pytest.raises(ValidationError, match="shift is 0"):
        InvarianceTest(feature="income", perturbation="shift")
    with pytest.raises(ValidationError, match="expectation"):
        DirectionalTest(feature="income", delta=1, expectation="up")  # type: ignore[arg-type]
    # What a KFP List[dict] parameter delivers (ints as floats) parses into the same tests.
    parsed = DirectionalTest.model_validate(
        {"feature": "income", "delta": 1.0, "expectation": "non_increasing"}
    )
    assert parsed.name == "directional:income:+1:non_increasing"
