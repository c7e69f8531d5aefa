"""Attributions on a really trained model: informative features rank first, rankings are stable."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from sklearn.metrics import roc_auc_score

from components.model_validation.config import ExplainabilityPolicy
from components.model_validation.explainability import ExplainabilityResult, _auc_rows, explain
from components.model_validation.scoring import ModelUnderCheck, load_scorer
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from tests.support.model_factory import fit_model

# Features the generator's label formula uses, and features it never looks at.
INFORMATIVE = ("credit_score", "debt_to_income", "num_delinquencies", "interest_rate")
NOISE = (
    "region",
    "years_at_address",
    "num_dependents",
    "savings_balance",
    "education",
    "marital_status",
    "num_open_accounts",
    "loan_term_months",
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    frame = generate(SampleDataConfig(rows=5500, seed=21))
    return fit_model(frame.iloc[:4000], SAMPLE_SCHEMA, tmp_path_factory.mktemp("model")), frame.iloc[4000:]


@pytest.fixture(scope="module")
def explained(trained: tuple[Path, pd.DataFrame]) -> ExplainabilityResult:
    model, test = trained
    return explain(load_scorer(model), test, "default", ExplainabilityPolicy(), seed=0)


def test_informative_features_rank_above_pure_noise(explained: ExplainabilityResult) -> None:
    rank = {a.feature: a.rank for a in explained.attributions}
    assert sorted(rank.values()) == list(range(1, len(SAMPLE_SCHEMA.features) + 1))
    worst_informative = max(rank[f] for f in INFORMATIVE)
    best_noise = min(rank[f] for f in NOISE)
    assert worst_informative < best_noise, rank
    top = explained.attributions[0]
    assert top.feature in INFORMATIVE and top.auc_drop > 0.01
    importance = {a.feature: a.importance for a in explained.attributions}
    assert importance["credit_score"] > 3 * importance["years_at_address"]


def test_ranking_is_stable_across_disjoint_halves(explained: ExplainabilityResult) -> None:
    stability = explained.stability
    assert stability.rows_per_half == 750
    assert stability.spearman > 0.8 and stability.kendall > 0.6
    assert stability.top_k_overlap >= 0.6
    assert explained.violations == ()


def test_per_example_contributions_explain_the_row(
    trained: tuple[Path, pd.DataFrame],
    explained: ExplainabilityResult,
) -> None:
    model, test = trained
    assert len(explained.examples) == 5
    example = explained.examples[0]
    row = test.loc[[int(example.row)]]
    assert example.probability == pytest.approx(float(load_scorer(model).predict(row)[0]), abs=1e-6)
    assert len(example.contributions) == len(SAMPLE_SCHEMA.features)
    sizes = [abs(c.contribution) for c in example.contributions]
    assert sizes == sorted(sizes, reverse=True)
    credit = next(c for c in example.contributions if c.feature == "credit_score")
    assert credit.value == str(row["credit_score"].iloc[0])
    # Across the explained rows, an informative feature moves the score more than a noise one.
    mean_abs = {
        f: np.mean(
            [abs(next(c.contribution for c in e.contributions if c.feature == f)) for e in explained.examples]
        )
        for f in ("credit_score", "years_at_address")
    }
    assert mean_abs["credit_score"] > mean_abs["years_at_address"]


def test_unstable_or_undefined_rankings_are_violations(trained: tuple[Path, pd.DataFrame]) -> None:
    model, test = trained
    scorer = load_scorer(model)
    strict = explain(
        scorer, test, "default", ExplainabilityPolicy(min_rank_agreement=1.0, n_examples=0), seed=0
    )
    (violation,) = strict.violations
    assert violation.metric == "rank_agreement_spearman" and violation.threshold == 1.0
    assert violation.message.startswith(
        f"attributions: rank_agreement_spearman {strict.stability.spearman:.4f} < min"
    )

    # A model that ignores its inputs has no ranking at all: that must not pass as "stable".
    constant = ModelUnderCheck(scorer.spec, lambda x: np.full(len(x), 0.3, dtype=np.float32))
    flat = explain(constant, test, "default", ExplainabilityPolicy(n_examples=1), seed=0)
    assert np.isnan(flat.stability.spearman)
    assert "ranking undefined" in flat.violations[0].detail
    assert all(a.importance == 0 for a in flat.attributions)
    disabled = explain(constant, test, "default", ExplainabilityPolicy(min_rank_agreement=-1), seed=0)
    assert disabled.violations == ()


def test_fast_auc_matches_sklearn() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    scores = np.round(rng.random((3, 300)), 2)  # rounding makes ties, which must share ranks
    expected = [roc_auc_score(y, s) for s in scores]
    assert _auc_rows(y, scores) == pytest.approx(expected, abs=1e-12)
    assert np.isnan(_auc_rows(np.zeros(300, int), scores)).all()


def test_onnx_model_gets_the_same_explanations(trained: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    from training.model import load_model
    from training.onnx_export import export_onnx

    model, test = trained
    export_onnx(load_model(model), tmp_path / "onnx" / "model.onnx")
    onnx_scorer = load_scorer(tmp_path / "onnx")
    torch_scorer = load_scorer(model)
    assert onnx_scorer.predict(test) == pytest.approx(torch_scorer.predict(test), abs=1e-4)
    policy = ExplainabilityPolicy(n_examples=0, permutation_repeats=1)
    onnx_rank = [a.feature for a in explain(onnx_scorer, test, "default", policy, seed=0).attributions[:4]]
    torch_rank = [a.feature for a in explain(torch_scorer, test, "default", policy, seed=0).attributions[:4]]
    assert onnx_rank == torch_rank


def test_not_a_model_and_bad_policy_are_clear_errors(
    trained: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(
        FileNotFoundError, match=r"is not a model: expected a directory with model.pt.*notes.txt"
    ):
        load_scorer(tmp_path)
    with pytest.raises(ValidationError, match="min_rank_agreement"):
        ExplainabilityPolicy(min_rank_agreement=1.5)
    with pytest.raises(ValueError, match="at least 20 rows, got 5"):
        explain(load_scorer(trained[0]), trained[1].head(5), "default", ExplainabilityPolicy(), seed=0)
