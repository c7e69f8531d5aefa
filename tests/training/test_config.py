"""TrainConfig validation and the resolution of ``auto`` device/precision."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from mlops.settings import SettingsError, from_section, section_values
from training import config as config_module
from training.config import BF16_MIN_MACS_PER_STEP, ModelConfig, TrainConfig, resolve_runtime
from training.model import TabularNet, matmul_macs_per_row, rank_step_macs

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks behaviour on a machine without CUDA")


def test_defaults_are_valid_and_frozen() -> None:
    config = TrainConfig()
    assert config.batch_size == 256 and config.nproc == 1
    with pytest.raises(ValidationError, match="frozen"):
        config.epochs = 3


def test_unknown_field_is_rejected() -> None:
    with pytest.raises(ValidationError, match="learning_rat"):
        TrainConfig(learning_rat=0.1)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epochs": 0}, "epochs"),
        ({"batch_size": 0}, "batch_size"),
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"weight_decay": -1.0}, "weight_decay"),
        ({"patience": -1}, "patience"),
        ({"nproc": 0}, "nproc"),
        ({"precision": "fp8"}, "precision"),
        ({"device": "tpu"}, "device"),
        ({"val_fraction": 0.0}, "val_fraction"),
        ({"test_fraction": 0.6}, "test_fraction"),
    ],
)
def test_out_of_range_values_name_the_field(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TrainConfig(**kwargs)  # type: ignore[arg-type]


def test_global_batch_must_split_evenly_across_processes() -> None:
    with pytest.raises(ValidationError, match=r"batch_size 250 is not divisible by nproc 3.*e\.g\. 252"):
        TrainConfig(batch_size=250, nproc=3)
    assert TrainConfig(batch_size=252, nproc=3).batch_size == 252


def test_fractions_must_leave_training_rows() -> None:
    with pytest.raises(ValidationError, match="under 20% of rows for training"):
        TrainConfig(val_fraction=0.45, test_fraction=0.45)


def test_fp16_on_cpu_is_rejected_at_construction() -> None:
    with pytest.raises(ValidationError, match="fp16' needs CUDA.*use precision 'bf16' or 'fp32'"):
        TrainConfig(precision="fp16", device="cpu")


@no_cuda
def test_fp16_with_auto_device_fails_when_no_cuda() -> None:
    with pytest.raises(ValueError, match="fp16' needs CUDA but this run resolved to the CPU"):
        resolve_runtime(TrainConfig(precision="fp16"), macs_per_step=0)


@no_cuda
def test_cuda_device_without_cuda_is_an_error() -> None:
    with pytest.raises(ValueError, match="device 'cuda' was requested but torch sees no CUDA device"):
        resolve_runtime(TrainConfig(device="cuda"), macs_per_step=0)


@no_cuda
@pytest.mark.parametrize("native", [True, False])
def test_auto_takes_bf16_on_a_cpu_only_where_native_and_from_the_measured_step_size(
    monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    monkeypatch.setattr(config_module, "cpu_has_native_bf16", lambda: native)
    at, below = BF16_MIN_MACS_PER_STEP, BF16_MIN_MACS_PER_STEP - 1
    runtime = resolve_runtime(TrainConfig(), macs_per_step=at)
    assert runtime.device_type == "cpu" and runtime.backend == "gloo"
    assert runtime.precision == ("bf16" if native else "fp32")
    assert resolve_runtime(TrainConfig(), macs_per_step=below).precision == "fp32"
    assert resolve_runtime(TrainConfig(), macs_per_step=0).precision == "fp32"  # size not known yet
    for chosen in ("fp32", "bf16"):  # a precision asked for is kept, whatever the size
        assert resolve_runtime(TrainConfig(precision=chosen), macs_per_step=below).precision == chosen
        assert resolve_runtime(TrainConfig(precision=chosen), macs_per_step=at).precision == chosen


def test_the_default_network_is_below_the_bf16_threshold_and_a_wide_one_above() -> None:
    """On the sample data (14 numeric and 6 categorical inputs) the default 128-64 network at batch 256 does
    3.4M multiply-accumulates per step, where bf16 autocast measured 0.85x fp32; 512-512 does 72M (1.35x)."""
    from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
    from training.data_splits import encode_splits, split_frame

    config = TrainConfig()
    spec = encode_splits(
        split_frame(generate(SampleDataConfig(rows=500)), SAMPLE_SCHEMA, config), SAMPLE_SCHEMA
    ).spec
    assert rank_step_macs(spec, config) < BF16_MIN_MACS_PER_STEP
    wide = config.model_copy(update={"model": ModelConfig(hidden_units=(512, 512))})
    assert rank_step_macs(spec, wide) >= BF16_MIN_MACS_PER_STEP
    two_ranks = wide.model_copy(update={"nproc": 2})  # each rank takes half the batch
    assert rank_step_macs(spec, two_ranks) * 2 == rank_step_macs(spec, wide)
    for model_config in (config.model, wide.model, ModelConfig(hidden_units=(7,), embedding_dim=3)):
        built = TabularNet(spec, model_config)  # the count is the network's own linear layers
        linear = sum(
            m.in_features * m.out_features for m in built.modules() if isinstance(m, torch.nn.Linear)
        )
        assert matmul_macs_per_row(spec, model_config) == linear


def test_flat_params_are_scalars_for_trackers_by_address() -> None:
    flat = TrainConfig(model=ModelConfig(hidden_units=(32, 16), dropout=0.2)).flat_params()
    assert flat["train.model.hidden_units"] == "32,16"
    assert flat["train.model.dropout"] == 0.2
    assert flat["train.learning_rate"] == 0.001
    assert all(key.startswith("train.") for key in flat)
    assert all(isinstance(v, str | int | float) for v in flat.values())


def test_the_train_section_round_trips_as_a_task_receives_it() -> None:
    """What fixed_train_config / the best trial hand train-model: the section dict (ints as floats
    from a KFP struct, a value typed into the form as text)."""
    config = TrainConfig(epochs=3, model=ModelConfig(hidden_units=(32, 16)))
    values = section_values(config)
    assert values["model"] == {"hidden_units": [32, 16], "dropout": 0.1, "embedding_dim": 4}
    assert from_section(TrainConfig, values) == config
    assert from_section(TrainConfig, {"epochs": 3.0, "model": {"hidden_units": "[32, 16]"}}) == config
    with pytest.raises(SettingsError, match=r"train.model.dropout: Input should be less than 1"):
        from_section(TrainConfig, {"model": {"dropout": 1.5}})
