"""What a training run does, validated before any data is touched.

``precision`` and ``device`` accept ``"auto"`` so that the same pipeline
parameters work on a laptop, a CPU node and a GPU node; :func:`resolve_runtime`
turns them into concrete choices once, at the start of a run, and fails with a
message that says which value to change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from mlops.settings import SETTINGS_CONFIG


class ModelConfig(BaseModel):
    """Architecture of :class:`TabularNet`."""

    model_config = SETTINGS_CONFIG

    hidden_units: tuple[int, ...] = Field(default=(128, 64))
    """Width of each hidden layer."""
    dropout: float = Field(default=0.1, ge=0.0, lt=1.0)
    """Dropout after each hidden layer."""
    embedding_dim: int = Field(default=4, ge=1, le=64)
    """Embedding width per categorical feature."""

    @field_validator("hidden_units")
    @classmethod
    def _positive_widths(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value or any(w < 1 for w in value):
            raise ValueError(f"hidden_units must be one or more positive widths, got {value}")
        return value


Precision = Literal["auto", "fp32", "bf16", "fp16"]
Device = Literal["auto", "cpu", "cuda"]


class TrainConfig(BaseModel):
    """Hyperparameters and execution settings of one training run."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "train"

    epochs: int = Field(default=20, ge=1, le=10_000)
    """Maximum number of epochs."""
    batch_size: int = Field(default=256, ge=1)
    """GLOBAL batch size: summed over all processes, so nproc does not change the optimisation."""
    learning_rate: float = Field(default=1e-3, gt=0, le=10)
    """AdamW learning rate."""
    weight_decay: float = Field(default=1e-4, ge=0)
    """AdamW (decoupled) weight decay."""
    model: ModelConfig = Field(default_factory=ModelConfig)
    """Architecture of the network."""
    patience: int = Field(default=4, ge=0)
    """Early stopping: stop after this many epochs without a strictly higher validation ROC AUC and restore the best epoch's weights. 0 disables early stopping."""
    grad_clip_norm: float = Field(default=1.0, ge=0)
    """Clip the global gradient L2 norm to this value; 0 disables clipping."""
    seed: int = Field(default=0, ge=0)
    """Seed of weight initialisation, shuffling and dropout. The split is not drawn: each row's stable hash decides it (schema.split_key)."""
    nproc: int = Field(default=1, ge=1, le=256)
    """Data-parallel processes (DDP: gloo on CPU, nccl on CUDA); 1 = in-process."""
    precision: Precision = Field(default="auto")
    """auto: fp16 autocast + GradScaler on CUDA; on a CPU with native bf16, bf16 autocast once a training step does at least 16M multiply-accumulates per rank (smaller ones run faster in fp32), else fp32. fp16 needs CUDA."""
    device: Device = Field(default="auto")
    """auto: CUDA when available, else CPU."""
    val_fraction: float = Field(default=0.15, gt=0, le=0.5)
    """Share of rows in the validation split (early stopping)."""
    test_fraction: float = Field(default=0.15, gt=0, le=0.5)
    """Share of rows held out as the test split for evaluation."""

    @model_validator(mode="after")
    def _consistent(self) -> TrainConfig:
        if self.batch_size % self.nproc:
            fixed = (self.batch_size // self.nproc + 1) * self.nproc
            raise ValueError(
                f"batch_size {self.batch_size} is not divisible by nproc {self.nproc}; batch_size is the global "
                f"batch, split evenly across processes: pick a multiple of {self.nproc} (e.g. {fixed})"
            )
        if self.val_fraction + self.test_fraction > 0.8:
            raise ValueError(
                f"val_fraction {self.val_fraction} + test_fraction {self.test_fraction} leaves under 20% of "
                "rows for training; lower one of them"
            )
        if self.precision == "fp16" and self.device == "cpu":
            raise ValueError(
                "precision 'fp16' needs CUDA (fp16 autocast with GradScaler); on CPU use precision 'bf16' or 'fp32'"
            )
        return self

    def flat_params(self) -> dict[str, Any]:
        """``address: scalar`` for experiment trackers (``train.model.hidden_units`` as ``"128,64"``): the
        names ``--set`` and the KFP form use."""
        from mlops.settings import tracker_params

        return tracker_params(self)


@dataclass(frozen=True)
class Runtime:
    """Concrete execution choices for a run, after resolving ``auto``."""

    device_type: str
    """``"cpu"`` or ``"cuda"``."""
    precision: str
    """``"fp32"``, ``"bf16"`` or ``"fp16"``."""
    backend: str
    """``torch.distributed`` backend for ``nproc > 1``: ``"gloo"`` on CPU, ``"nccl"`` on CUDA."""


def cpu_has_native_bf16() -> bool:
    """True where bf16 matmuls run in hardware (AVX512-BF16 or AMX); emulated bf16 is slower than fp32."""
    import torch

    for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        check = getattr(torch.cpu, probe, None)  # private probes: treat absence as "no"
        if check is not None and check():
            return True
    return False


BF16_MIN_MACS_PER_STEP = 16_000_000
"""``precision: auto`` on a CPU with native bf16 takes bf16 from this many multiply-accumulates per training step
and rank (the rank's batch × :func:`training.model.matmul_macs_per_row`). Measured on a 2-core AVX512-BF16 CPU
(``benchmarks/RESULTS.md``, "bf16 autocast on a CPU"): the default network (128-64) at batch 256, 3.4M per step,
trained 0.85× as fast in bf16 as in fp32; 10.9M and 13.4M 0.97× and 1.03×; 29M 1.17×; 72M 1.35×. Below this,
autocast's per-operation casts cost more than the faster matrix products save."""


def resolve_runtime(config: TrainConfig, *, macs_per_step: int) -> Runtime:
    """Resolve ``auto`` device and precision against the machine this runs on, for a training step of
    ``macs_per_step`` multiply-accumulates per rank (0 when not known yet: ``auto`` then stays fp32 on a CPU)."""
    import torch

    cuda = torch.cuda.is_available()
    if config.device == "cuda" and not cuda:
        raise ValueError(
            "device 'cuda' was requested but torch sees no CUDA device; use device 'cpu' or 'auto'"
        )
    device_type = "cuda" if config.device == "cuda" or (config.device == "auto" and cuda) else "cpu"
    if device_type == "cuda" and config.nproc > torch.cuda.device_count():
        raise ValueError(
            f"nproc {config.nproc} exceeds the {torch.cuda.device_count()} visible CUDA device(s); "
            "use one process per GPU or device 'cpu'"
        )
    precision = config.precision
    if precision == "auto" and device_type == "cuda":
        precision = "fp16"
    elif precision == "auto":
        large = macs_per_step >= BF16_MIN_MACS_PER_STEP
        precision = "bf16" if large and cpu_has_native_bf16() else "fp32"
    if precision == "fp16" and device_type == "cpu":
        raise ValueError(
            "precision 'fp16' needs CUDA but this run resolved to the CPU; use precision 'bf16' or 'fp32' "
            "(or 'auto')"
        )
    return Runtime(
        device_type=device_type, precision=precision, backend="nccl" if device_type == "cuda" else "gloo"
    )
