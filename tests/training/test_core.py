"""The training core on sample data: split, learning, determinism, early stopping, precision."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from mlops.data.dataset import DatasetError
from mlops.data.features import FeatureSpec
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from training.config import ModelConfig, Runtime, TrainConfig
from training.data_splits import split_frame
from training.model import load_model
from training.steps import evaluate
from training.trainer import TrainResult, train

SMALL = ModelConfig(hidden_units=(32, 16), dropout=0.1)
FP32 = Runtime(device_type="cpu", precision="fp32", backend="gloo")


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return generate(SampleDataConfig(rows=4000, seed=0))


def _config(**overrides: object) -> TrainConfig:
    base: dict[str, object] = {
        "epochs": 4,
        "batch_size": 128,
        "learning_rate": 5e-3,
        "model": SMALL,
        "precision": "fp32",
        "patience": 0,
    }
    return TrainConfig(**{**base, **overrides})  # type: ignore[arg-type]


def _curves(result: TrainResult) -> list[tuple[float, float, float]]:
    return [(h.train_loss, h.val_loss, h.val_auc) for h in result.history]


def test_split_is_deterministic_disjoint_and_proportional(frame: pd.DataFrame) -> None:
    config = _config()
    first, second = split_frame(frame, SAMPLE_SCHEMA, config), split_frame(frame, SAMPLE_SCHEMA, config)
    for a, b in zip(
        (first.train, first.val, first.test), (second.train, second.val, second.test), strict=True
    ):
        assert a.index.equals(b.index)
    parts = [set(first.train.index), set(first.val.index), set(first.test.index)]
    assert set().union(*parts) == set(frame.index) and sum(map(len, parts)) == len(frame)
    # A hash, not a draw: the shares are binomial around the fractions (sd ~0.6 % of 4000 rows).
    assert len(first.test) == pytest.approx(0.15 * len(frame), rel=0.15)
    rate = frame["default"].mean()
    for part in (first.train, first.val, first.test):
        assert part["default"].mean() == pytest.approx(rate, abs=0.04)


def test_a_rows_split_does_not_change_with_the_seed_the_row_order_or_new_rows(frame: pd.DataFrame) -> None:
    first = split_frame(frame, SAMPLE_SCHEMA, _config())
    reseeded = split_frame(frame, SAMPLE_SCHEMA, _config(seed=7))
    assert reseeded.test.index.equals(first.test.index)
    assert reseeded.train.index.equals(first.train.index)
    shuffled = split_frame(frame.sample(frac=1.0, random_state=3), SAMPLE_SCHEMA, _config())
    assert set(shuffled.test.index) == set(first.test.index)
    more = generate(SampleDataConfig(rows=2000, seed=99))
    more.index = more.index + len(frame)
    grown = split_frame(pd.concat([frame, more]), SAMPLE_SCHEMA, _config())
    assert set(first.test.index) <= set(grown.test.index)  # every old test row is still in test
    assert set(first.train.index) <= set(grown.train.index)
    assert len(set(grown.test.index) - set(first.test.index)) > 0  # and new rows join it


def test_a_declared_split_key_decides_the_split_and_identical_rows_stay_together(frame: pd.DataFrame) -> None:
    keyed = frame.assign(customer_id=[f"C{i:05d}" for i in range(len(frame))])
    schema = SAMPLE_SCHEMA.model_validate({**SAMPLE_SCHEMA.model_dump(), "split_key": "customer_id"})
    before = split_frame(keyed, schema, _config())
    edited = keyed.copy()
    edited["income"] = edited["income"] * 2  # content changes; the key does not
    after = split_frame(edited, schema, _config())
    assert after.test.index.equals(before.test.index)
    by_content = split_frame(edited, SAMPLE_SCHEMA, _config())
    assert not by_content.test.index.equals(split_frame(frame, SAMPLE_SCHEMA, _config()).test.index)
    doubled = pd.concat([frame.head(1000), frame.head(1000)], ignore_index=True)
    halves = split_frame(doubled, SAMPLE_SCHEMA, _config())
    test_rows = set(halves.test.index)
    assert {i % 1000 for i in test_rows} == {i - 1000 for i in test_rows if i >= 1000}  # duplicates together


def test_feature_statistics_come_from_training_rows_only(frame: pd.DataFrame, tmp_path: Path) -> None:
    config = _config(epochs=1)
    # A split key keeps each row where it was while the held-out rows' content is changed.
    keyed_schema = SAMPLE_SCHEMA.model_validate({**SAMPLE_SCHEMA.model_dump(), "split_key": "row_id"})
    keyed = frame.assign(row_id=range(len(frame)))
    splits = split_frame(keyed, keyed_schema, config)
    tainted = keyed.copy()
    held_out = splits.val.index.union(splits.test.index)
    tainted.loc[held_out, "region"] = "held_out_region"
    tainted.loc[held_out, "income"] = 1e12
    assert split_frame(tainted, keyed_schema, config).train.index.equals(splits.train.index)

    result = train(tainted, keyed_schema, config, tmp_path / "model")

    spec = FeatureSpec.load(tmp_path / "model" / "feature_spec.json")
    assert "held_out_region" not in spec.vocabularies[spec.categorical.index("region")]
    assert spec == FeatureSpec.fit(splits.train, SAMPLE_SCHEMA)
    assert spec.means[spec.numeric.index("income")] < 1e7
    assert result.test_frame.index.equals(splits.test.index)
    assert list(result.test_frame.columns) == list(keyed.columns)  # label and protected attribute kept


def test_training_learns_and_is_deterministic(frame: pd.DataFrame, tmp_path: Path) -> None:
    config = _config()
    first = train(frame, SAMPLE_SCHEMA, config, tmp_path / "a")
    second = train(frame, SAMPLE_SCHEMA, config, tmp_path / "b")

    assert first.best_val_auc > 0.7
    assert first.history[-1].train_loss < first.history[0].train_loss
    assert _curves(first) == _curves(second)
    for (name, a), b in zip(
        first.model.state_dict().items(), second.model.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b), name
    assert [h.epoch for h in first.history] == [1, 2, 3, 4]
    assert first.samples_per_second > 0 and not first.stopped_early
    assert first.system_info["precision"] == "fp32" and first.system_info["nproc"] == "1"

    loaded = load_model(first.model_dir)
    x = torch.from_numpy(loaded.spec.encode(first.test_frame))
    with torch.no_grad():
        assert torch.allclose(loaded(x), first.model(x))


def test_a_different_seed_gives_a_different_model(frame: pd.DataFrame, tmp_path: Path) -> None:
    first = train(frame, SAMPLE_SCHEMA, _config(epochs=1), tmp_path / "a")
    other = train(frame, SAMPLE_SCHEMA, _config(epochs=1, seed=3), tmp_path / "b")
    assert _curves(first) != _curves(other)


def test_early_stopping_restores_the_best_epoch(tmp_path: Path) -> None:
    # A wide net on few rows with a high learning rate overfits: validation AUC peaks early.
    small = generate(SampleDataConfig(rows=800, seed=5))
    config = _config(
        epochs=12,
        batch_size=32,
        learning_rate=0.01,
        weight_decay=0.0,
        grad_clip_norm=0.0,
        model=ModelConfig(hidden_units=(128, 128), dropout=0.0),
        patience=3,
    )
    result = train(small, SAMPLE_SCHEMA, config, tmp_path / "model")

    assert result.stopped_early
    assert result.epochs_run == result.best_epoch + 3 < 12
    assert result.best_val_auc == max(h.val_auc for h in result.history) > result.final_val_auc
    val = split_frame(small, SAMPLE_SCHEMA, config).val
    x = torch.from_numpy(result.model.spec.encode(val))
    y = torch.tensor(val["default"].to_numpy(dtype="float32"))
    _, auc = evaluate(load_model(result.model_dir), x, y, FP32)
    assert auc == pytest.approx(result.best_val_auc, abs=1e-9)


def test_no_improvement_stops_after_patience(frame: pd.DataFrame, tmp_path: Path) -> None:
    # A learning rate far below float32 resolution leaves the weights, and so the AUC, unchanged.
    result = train(frame, SAMPLE_SCHEMA, _config(epochs=10, learning_rate=1e-12, patience=2), tmp_path / "m")
    assert result.stopped_early and result.best_epoch == 1 and result.epochs_run == 3


def test_bf16_autocast_trains_on_cpu(frame: pd.DataFrame, tmp_path: Path) -> None:
    result = train(frame, SAMPLE_SCHEMA, _config(epochs=2, precision="bf16", device="cpu"), tmp_path / "m")
    assert result.system_info["precision"] == "bf16"
    assert result.best_val_auc > 0.65
    assert all(
        t.dtype == torch.float32 for t in result.model.state_dict().values()
    )  # master weights stay fp32
    fp32 = train(frame, SAMPLE_SCHEMA, _config(epochs=2), tmp_path / "fp32")
    assert _curves(result) != _curves(fp32)  # autocast really changed the arithmetic


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error")
def test_fp16_on_cpu_fails_before_training(frame: pd.DataFrame, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fp16' needs CUDA"):
        train(frame, SAMPLE_SCHEMA, _config(precision="fp16"), tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_bad_data_is_reported_with_the_fix(frame: pd.DataFrame, tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"lacks column\(s\) \['default'\]"):
        train(frame.drop(columns=["default"]), SAMPLE_SCHEMA, _config(), tmp_path / "m")
    with pytest.raises(DatasetError, match="15%/15% validation/test split needs at least"):
        train(frame.head(20), SAMPLE_SCHEMA, _config(), tmp_path / "m")
    beyond_float32 = frame.copy()
    beyond_float32.loc[beyond_float32.index[:7], "income"] = 1e300
    with pytest.raises(DatasetError, match=r"infinite feature values .*'income' \(\d+ rows\).*clip or drop"):
        train(beyond_float32, SAMPLE_SCHEMA, _config(), tmp_path / "m")
    assert not (tmp_path / "m").exists()  # refused before anything was written


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_fp16_with_grad_scaler_on_cuda(frame: pd.DataFrame, tmp_path: Path) -> None:
    result = train(frame, SAMPLE_SCHEMA, _config(epochs=3, precision="auto", device="auto"), tmp_path / "m")
    assert result.system_info["device"] == "cuda" and result.system_info["precision"] == "fp16"
    assert result.system_info["cuda_name"]
    assert result.best_val_auc > 0.7
