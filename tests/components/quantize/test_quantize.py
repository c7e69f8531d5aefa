"""INT8 quantisation: the parity gate, registration with lineage, `mlops quantize`."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest

from cli.commands import quantize as quantize_cmd
from components.quantize.quantizer import QuantizationRejected, QuantizeConfig, compare, quantize_with_gate
from mlops.model.onnx_model import OnnxScorer
from mlops.origin_facts import file_sha256
from mlops.workspace import Workspace
from serving.model_source import RegisteredModelSource
from serving.runtime import load_model
from tests.support.serving import DemoStore, demo_store, register

pytestmark = pytest.mark.slow
LABEL = "default"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> DemoStore:
    return demo_store(tmp_path_factory.getbasetemp() / "serving-store")


def self_labelled(store: DemoStore) -> pd.DataFrame:
    """Holdout rows labelled by the FP32 model itself: FP32 AUC is exactly 1, so any INT8 ranking error is a drop."""
    scorer = OnnxScorer.load(store.onnx_a / "model.onnx")
    p = scorer.predict_proba(store.holdout)
    return store.holdout.assign(**{LABEL: (p > np.median(p)).astype(int)})


def run_cli(store: DemoStore, *argv: str) -> int:
    parser = argparse.ArgumentParser()
    quantize_cmd.add_parser(parser.add_subparsers())
    args = parser.parse_args(["quantize", *argv])
    return int(args.handler(args, store.workspace))


def test_int8_model_passes_the_gate_and_keeps_the_feature_spec(store: DemoStore, tmp_path: Path) -> None:
    out = tmp_path / "int8.onnx"
    result = quantize_with_gate(
        store.onnx_a / "model.onnx", out, store.holdout, LABEL, QuantizeConfig(max_auc_drop=0.02)
    )
    assert result.passed and result.n_rows == len(store.holdout)
    assert abs(result.auc_drop) <= 0.02 and 0 < result.max_abs_diff < 0.1
    int8, fp32 = OnnxScorer.load(out), OnnxScorer.load(store.onnx_a / "model.onnx")
    assert int8.spec == fp32.spec
    ops = {node.op_type for node in onnx.load(str(out)).graph.node}
    assert ops & {"MatMulInteger", "DynamicQuantizeLinear", "DynamicQuantizeMatMul"}, ops


def test_gate_refuses_an_int8_model_that_loses_auc(store: DemoStore, tmp_path: Path) -> None:
    out = tmp_path / "int8.onnx"
    with pytest.raises(QuantizationRejected, match=r"drop 0\.0\d+ exceeds the bound 0\.00000") as caught:
        quantize_with_gate(
            store.onnx_a / "model.onnx", out, self_labelled(store), LABEL, QuantizeConfig(max_auc_drop=0)
        )
    assert caught.value.result.auc_fp32 == 1.0 and caught.value.result.auc_drop > 0
    assert not out.exists(), "a refused model must not be left behind"


def test_compare_needs_both_classes() -> None:
    with pytest.raises(ValueError, match="both classes"):
        compare(np.ones(4), np.zeros(4), np.zeros(4), 0.01)
    with pytest.raises(ValueError, match="max_auc_drop"):
        QuantizeConfig(max_auc_drop=-0.1)


def test_mlops_quantize_registers_int8_with_lineage_and_it_serves(store: DemoStore, tmp_path: Path) -> None:
    name = "int8-model"
    register(store, name, store.onnx_a)
    data = tmp_path / "holdout.parquet"
    store.holdout.to_parquet(data)
    assert run_cli(store, "--model-name", name, "--data", str(data), "--max-auc-drop", "0.02") == 0

    client = store.tracking._client
    source, int8 = client.get_model_version(name, "1").tags, client.get_model_version(name, "2").tags
    assert int8["mlops.quantized_from"] == "1" and int8["mlops.precision"] == "int8"
    assert float(int8["mlops.int8.auc_drop"]) <= 0.02
    for key in ("mlops.dataset_digest", "mlops.train_run_id", "mlops.kfp_run_id"):
        assert int8[key] == source[key]
    assert int8["mlops.onnx_sha256"] != source["mlops.onnx_sha256"]

    # The server's own path: fetch + digest check + load; the version reports its precision.
    artifact = RegisteredModelSource(store.workspace.tracking_uri, name, tmp_path / "cache").fetch("2")
    assert file_sha256(artifact.path) == int8["mlops.onnx_sha256"]
    served = load_model(artifact)
    assert served.precision == "int8"
    x = served.spec.encode(store.holdout.head(50))
    fp32 = OnnxScorer.load(store.onnx_a / "model.onnx").predict_encoded(x)
    np.testing.assert_allclose(served.predict(x), fp32, atol=0.1)

    with pytest.raises(ValueError, match="already int8"):
        run_cli(store, "--model-name", name, "--source", "2", "--data", str(data))


def test_mlops_quantize_out_writes_a_file_and_registers_nothing(store: DemoStore, tmp_path: Path) -> None:
    name = "int8-file-model"
    register(store, name, store.onnx_a)
    out = tmp_path / "out" / "model.onnx"
    assert run_cli(store, "--model-name", name, "--out", str(out), "--max-auc-drop", "0.05") == 0
    assert OnnxScorer.load(out).spec.n_features == 20
    versions = store.tracking.search_versions(f"name='{name}'")
    assert [str(v.version) for v in versions] == ["1"]


def test_quantize_cli_reports_a_missing_model_or_store(store: DemoStore, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not resolve"):
        run_cli(store, "--model-name", "no-such-model")
    parser = argparse.ArgumentParser()
    quantize_cmd.add_parser(parser.add_subparsers())
    args = parser.parse_args(["quantize"])
    with pytest.raises(ValueError, match="has no MLflow store"):
        args.handler(args, Workspace(tmp_path / "empty"))
    assert not (tmp_path / "empty").exists(), "a failed command must not create a store"
