"""``mlops score --explain``: each row's reasons in a JSON column, computed as the server computes them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cli.main import main
from components.batch_score.config import REASONS_COLUMN
from mlops.model.onnx_model import OnnxScorer
from mlops.model.row_attribution import attribute
from serving.runtime import ExplainReference
from tests.support.monitoring import MODEL, Monitored, monitored_model, traffic

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Monitored:
    return monitored_model(tmp_path_factory.mktemp("score-explain"))


def score(model: Monitored, data: Path, out: Path, *extra: str) -> int:
    return main(
        [
            "--workspace",
            str(model.workspace.root),
            "score",
            "--model",
            f"{MODEL}@champion",
            "--data",
            str(data),
            "--out",
            str(out),
            "--no-progress",
            *extra,
        ]
    )


def reference_of(model: Monitored, spec: object) -> ExplainReference:
    from serving.model_source import RegisteredModelSource

    registry = RegisteredModelSource(
        model.workspace.tracking_uri, MODEL, model.workspace.root / "explain-test-cache"
    )
    path = registry.fetch(model.version).reference_path
    assert path is not None
    return ExplainReference.read(path, spec, "test")  # type: ignore[arg-type]


def test_explain_adds_the_reasons_the_server_would_give_and_a_rerun_gives_the_same(
    model: Monitored, tmp_path: Path
) -> None:
    frame = traffic(40, seed=41)
    frame.to_parquet(tmp_path / "in.parquet")
    args = ("--explain", "--set", "score.chunk_rows=25", "--set", "score.explain_top_k=2")
    assert score(model, tmp_path / "in.parquet", tmp_path / "out", *args) == 0
    out = pd.read_parquet(tmp_path / "out").sort_values("row")
    reasons = [json.loads(text) for text in out[REASONS_COLUMN]]
    assert len(reasons) == 40 and all(len(r) == 2 for r in reasons)

    scorer = OnnxScorer.load(model.onnx_dir / "model.onnx")
    x = scorer.spec.encode(frame)
    reference = reference_of(model, scorer.spec)
    expected = attribute(scorer.predict_encoded, x, reference.x, scorer.spec.names)
    for i, row in enumerate(reasons):
        assert [(r["feature"], r["contribution"]) for r in row] == pytest.approx(expected.ranked(i)[:2])
        assert row[0]["text"].startswith(f"{row[0]['feature']} = ")  # no reasons: declared: the default text

    logged = pd.read_parquet(tmp_path / "out" / "_request_log")
    assert logged["explained"].all()

    assert score(model, tmp_path / "in.parquet", tmp_path / "again", *args) == 0
    again = pd.read_parquet(tmp_path / "again").sort_values("row")
    assert again[REASONS_COLUMN].tolist() == out[REASONS_COLUMN].tolist()


def test_without_explain_there_is_no_reasons_column(model: Monitored, tmp_path: Path) -> None:
    traffic(10, seed=42).to_parquet(tmp_path / "in.parquet")
    assert score(model, tmp_path / "in.parquet", tmp_path / "out") == 0
    assert REASONS_COLUMN not in pd.read_parquet(tmp_path / "out").columns
    assert "explained" not in pd.read_parquet(tmp_path / "out" / "_request_log").columns
