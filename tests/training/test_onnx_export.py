"""ONNX export, ONNX Runtime scoring and the parity gate, on a really trained model."""

import os
import sys
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
from onnx import numpy_helper

from components.export_onnx.verified_export import ParityError, run_export, verify_export
from mlops.data.dataset import DatasetError
from mlops.data.features import FeatureSpec
from mlops.data.sample_data import SampleDataConfig, generate
from mlops.model.onnx_model import CONFIG_KEY, INPUT_NAME, OUTPUT_NAME, SPEC_KEY, OnnxModelError, OnnxScorer
from tests.support.model_factory import fit_tabular_net
from training.config import ModelConfig
from training.model import TabularNet, load_model, save_model
from training.onnx_export import check_parity, export_onnx, torch_probabilities

TOLERANCE = 1e-4


def _train(frame: pd.DataFrame, steps: int = 200) -> TabularNet:
    return fit_tabular_net(frame, steps=steps, hidden_units=(32, 16), learning_rate=1e-2)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return generate(SampleDataConfig(rows=1500, seed=11))


@pytest.fixture(scope="module")
def model_dir(frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_model(tmp_path_factory.mktemp("model"), _train(frame))


@pytest.fixture(scope="module")
def onnx_path(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_onnx(load_model(model_dir), tmp_path_factory.mktemp("onnx") / "model.onnx")


@pytest.fixture(scope="module")
def test_parquet(frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "test.parquet"
    frame.to_parquet(path, index=False)
    return path


def test_export_is_one_self_contained_file_with_dynamic_batch_and_metadata(
    onnx_path: Path, model_dir: Path
) -> None:
    assert sorted(p.name for p in onnx_path.parent.iterdir()) == ["model.onnx"]
    proto = onnx.load(str(onnx_path), load_external_data=False)
    assert not any(numpy_helper.to_array(t).size == 0 for t in proto.graph.initializer)

    (graph_input,) = proto.graph.input
    (graph_output,) = proto.graph.output
    assert graph_input.name == INPUT_NAME and graph_output.name == OUTPUT_NAME
    assert graph_input.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert graph_output.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    in_dims = graph_input.type.tensor_type.shape.dim
    out_dims = graph_output.type.tensor_type.shape.dim
    assert in_dims[0].dim_param and not in_dims[0].HasField("dim_value")  # symbolic batch
    assert in_dims[1].dim_value == 20
    assert len(out_dims) == 1 and out_dims[0].dim_param == in_dims[0].dim_param

    model = load_model(model_dir)
    metadata = {p.key: p.value for p in proto.metadata_props}
    assert FeatureSpec.model_validate_json(metadata[SPEC_KEY]) == model.spec
    assert ModelConfig.model_validate_json(metadata[CONFIG_KEY]) == model.config


@pytest.mark.parametrize("rows", [1, 7, 1000])
def test_onnx_matches_torch_at_any_batch_size(
    onnx_path: Path, model_dir: Path, frame: pd.DataFrame, rows: int
) -> None:
    model = load_model(model_dir)
    scorer = OnnxScorer.load(onnx_path)
    batch = frame.iloc[100 : 100 + rows]

    probability = scorer.predict_proba(batch)

    assert probability.shape == (rows,) and probability.dtype == np.float32
    assert np.all((probability >= 0) & (probability <= 1))
    expected = torch_probabilities(model, model.spec.encode(batch))
    np.testing.assert_allclose(probability, expected, atol=TOLERANCE, rtol=0)
    report = check_parity(model, scorer, batch, atol=TOLERANCE, rtol=0)
    assert report.ok and report.n_rows == rows and report.max_abs_diff < TOLERANCE


def test_scorer_handles_missing_and_unseen_values_like_torch(onnx_path: Path, model_dir: Path) -> None:
    raw = generate(SampleDataConfig(rows=6, seed=2)).astype({"income": float})
    raw.loc[0, "income"] = np.nan
    raw.loc[1, "employment_type"] = None
    raw.loc[2, "region"] = "atlantis"  # never seen in training: code 0 like a missing value
    model = load_model(model_dir)

    probability = OnnxScorer.load(onnx_path).predict_proba(raw)

    assert np.isfinite(probability).all()
    np.testing.assert_allclose(
        probability, torch_probabilities(model, model.spec.encode(raw)), atol=TOLERANCE
    )


def test_export_uses_eval_mode_and_restores_the_callers_mode(
    model_dir: Path, frame: pd.DataFrame, tmp_path: Path
) -> None:
    model = load_model(model_dir).train()

    path = export_onnx(model, tmp_path / "nested" / "model.onnx")

    assert model.training, "export must not leave the caller's model switched to eval"
    # Dropout is active in train mode; identical results on repeated runs prove the export has it off.
    scorer = OnnxScorer.load(path)
    first, second = scorer.predict_proba(frame.head(50)), scorer.predict_proba(frame.head(50))
    np.testing.assert_array_equal(first, second)
    assert check_parity(model, scorer, frame.head(50), atol=TOLERANCE, rtol=0).ok


def test_scorer_errors_name_the_problem(onnx_path: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        OnnxScorer.load(tmp_path / "absent.onnx")

    stripped = onnx.load(str(onnx_path))
    del stripped.metadata_props[:]
    onnx.save(stripped, str(tmp_path / "stripped.onnx"))
    with pytest.raises(OnnxModelError, match="no metadata.*mlops.feature_spec.*re-export"):
        OnnxScorer.load(tmp_path / "stripped.onnx")

    (tmp_path / "garbage.onnx").write_bytes(b"not a protobuf")
    with pytest.raises(OnnxModelError, match="cannot load"):
        OnnxScorer.load(tmp_path / "garbage.onnx")

    scorer = OnnxScorer.load(onnx_path)
    with pytest.raises(ValueError, match=r"shape \[rows, 20\], got \[3, 19\]"):
        scorer.predict_encoded(np.zeros((3, 19), dtype=np.float32))
    with pytest.raises(ValueError, match="lacks feature column"):
        scorer.predict_proba(pd.DataFrame({"age": [30.0]}))
    with pytest.raises(ValueError, match="intra_op_threads"):
        OnnxScorer.load(onnx_path, intra_op_threads=0)


def test_parity_refuses_an_onnx_file_of_another_model(onnx_path: Path, frame: pd.DataFrame) -> None:
    other = _train(generate(SampleDataConfig(rows=300, seed=99)), steps=1)
    with pytest.raises(OnnxModelError, match="different feature spec"):
        check_parity(other, OnnxScorer.load(onnx_path), frame.head(5), atol=TOLERANCE, rtol=0)


def test_export_rejects_a_path_that_is_not_onnx(model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"must end in \.onnx"):
        export_onnx(load_model(model_dir), tmp_path / "model.bin")


def test_run_export_writes_model_and_reports_parity(
    model_dir: Path, test_parquet: Path, tmp_path: Path
) -> None:
    out = tmp_path / "onnx_model"

    report = run_export(model_dir, test_parquet, out, tolerance=TOLERANCE)

    assert report.ok and report.n_rows == 512  # capped: 1500 rows are available
    assert 0 <= report.max_abs_diff < TOLERANCE
    assert sorted(p.name for p in out.iterdir()) == ["model.onnx"]
    assert OnnxScorer.load(out / "model.onnx").spec == load_model(model_dir).spec


def test_tampered_weights_fail_parity_with_a_readable_message(
    onnx_path: Path, model_dir: Path, frame: pd.DataFrame, tmp_path: Path
) -> None:
    proto = onnx.load(str(onnx_path))
    weights = max(proto.graph.initializer, key=lambda t: int(np.prod(t.dims)))
    perturbed = numpy_helper.to_array(weights) + np.float32(0.5)
    weights.CopyFrom(numpy_helper.from_array(perturbed, weights.name))
    tampered = tmp_path / "model.onnx"
    onnx.save(proto, str(tampered))

    with pytest.raises(
        ParityError, match=r"max abs diff \S+ exceeds tolerance 0\.0001 at row \d+ \(torch 0\.\d+"
    ):
        verify_export(load_model(model_dir), tampered, frame.head(64), TOLERANCE)


def test_run_export_removes_its_files_when_parity_fails(
    model_dir: Path, test_parquet: Path, tmp_path: Path
) -> None:
    # ORT fuses and reorders float32 arithmetic, so over 512 rows some probability differs from
    # torch in the last bits; a tolerance far below float32 resolution must therefore fail.
    out = tmp_path / "onnx_model"
    with pytest.raises(ParityError, match="exceeds tolerance 1e-15"):
        run_export(model_dir, test_parquet, out, tolerance=1e-15)
    assert not (out / "model.onnx").exists()


def test_run_export_rejects_bad_inputs(model_dir: Path, test_parquet: Path, tmp_path: Path) -> None:
    for bad in (0.0, -1e-4, 1.0, float("nan")):
        with pytest.raises(ValueError, match="pass a value in \\(0, 1\\)"):
            run_export(model_dir, test_parquet, tmp_path / "out", tolerance=bad)
    with pytest.raises(FileNotFoundError, match="is not a saved model"):
        run_export(tmp_path, test_parquet, tmp_path / "out", tolerance=TOLERANCE)
    empty = tmp_path / "empty.parquet"
    generate(SampleDataConfig(rows=5)).head(0).to_parquet(empty)
    with pytest.raises(DatasetError, match="no rows"):
        run_export(model_dir, empty, tmp_path / "out", tolerance=TOLERANCE)
    with pytest.raises(DatasetError, match="does not exist"):
        run_export(model_dir, tmp_path / "absent.parquet", tmp_path / "out", tolerance=TOLERANCE)


def test_component_runs_under_the_kfp_local_runner(
    model_dir: Path, test_parquet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kfp import dsl, local

    from components.export_onnx.component import export_onnx_model

    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path / "root"))

    @dsl.pipeline(name="export-onnx-test")
    def pipeline(export: dict) -> float:  # the ``export`` section, handed to the task whole
        model = dsl.importer(artifact_uri=str(model_dir), artifact_class=dsl.Model)
        data = dsl.importer(artifact_uri=str(test_parquet), artifact_class=dsl.Dataset)
        task = export_onnx_model(model=model.output, test_data=data.output, export=export)
        return task.outputs["max_abs_diff"]

    run = pipeline(export={"tolerance": TOLERANCE})

    assert 0 <= run.output < TOLERANCE
    exported = list((tmp_path / "root").rglob("onnx_model/model.onnx"))
    assert len(exported) == 1
    assert OnnxScorer.load(exported[0]).predict_proba(generate(SampleDataConfig(rows=3))).shape == (3,)


def test_export_records_no_source_path_so_the_digest_is_the_same_wherever_the_code_is_installed(
    onnx_path: Path, model_dir: Path, tmp_path: Path
) -> None:
    """The exporter writes each node's Python stack trace with absolute source paths: a model exported in the
    platform image (sources in site-packages) and from a clone had the same weights and different digests."""
    import hashlib
    import shutil
    import subprocess

    raw = onnx_path.read_bytes()
    repo = Path(__file__).resolve().parents[2]
    assert str(repo).encode() not in raw and b"stack_trace" not in raw
    # The same weights exported by the same code copied to another directory: byte-identical.
    elsewhere = tmp_path / "installed-elsewhere"
    for package in ("training", "mlops"):
        shutil.copytree(repo / package, elsewhere / package, ignore=shutil.ignore_patterns("__pycache__"))
    script = (
        "import sys; import training.onnx_export as e; from training.model import load_model; "
        "assert e.__file__.startswith(sys.argv[3]), e.__file__; e.export_onnx(load_model(sys.argv[1]), sys.argv[2])"
    )
    other = tmp_path / "other.onnx"
    subprocess.run(
        [sys.executable, "-c", script, str(model_dir), str(other), str(elsewhere)],
        cwd=elsewhere,
        env={**os.environ, "PYTHONPATH": str(elsewhere)},
        check=True,
    )
    assert hashlib.sha256(other.read_bytes()).hexdigest() == hashlib.sha256(raw).hexdigest()
