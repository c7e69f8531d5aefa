"""A trained TabularNet in about a second, for tests that need a model but not the training loop."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch

from mlops.data.dataset import DatasetSchema
from mlops.data.features import FeatureSpec
from mlops.data.sample_data import SAMPLE_SCHEMA
from training.config import ModelConfig
from training.model import TabularNet


def fit_tabular_net(
    frame: pd.DataFrame,
    *,
    steps: int = 200,
    seed: int = 0,
    hidden_units: tuple[int, ...] = (16,),
    learning_rate: float = 3e-3,
    schema: DatasetSchema = SAMPLE_SCHEMA,
) -> TabularNet:
    """Full-batch Adam steps on ``frame``: non-trivial weights, deterministic for a seed; eval mode."""
    torch.manual_seed(seed)
    spec = FeatureSpec.fit(frame, schema)
    model = TabularNet(spec, ModelConfig(hidden_units=hidden_units, dropout=0.1))
    x = torch.from_numpy(spec.encode(frame))
    y = torch.tensor(frame[schema.label].to_numpy(), dtype=torch.float32)
    optimiser = torch.optim.Adam(model.parameters(), lr=learning_rate)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for _ in range(steps):
        optimiser.zero_grad()
        loss_fn(model(x), y).backward()
        optimiser.step()
    return model.eval()


def fit_model(
    frame: pd.DataFrame, schema: DatasetSchema, directory: Path, steps: int = 250, seed: int = 0
) -> Path:
    """Train a small TabularNet with a plain loop and save it as the train step would."""
    import torch

    from mlops.data.features import FeatureSpec
    from training.config import ModelConfig
    from training.model import TabularNet, save_model

    torch.manual_seed(seed)
    spec = FeatureSpec.fit(frame, schema)
    x = torch.from_numpy(spec.encode(frame))
    y = torch.tensor(frame[schema.label].to_numpy(), dtype=torch.float32)
    model = TabularNet(spec, ModelConfig(hidden_units=(32, 16), dropout=0.1, embedding_dim=2))
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        batch = torch.randint(0, len(x), (256,), generator=generator)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x[batch]), y[batch])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return save_model(directory, model.eval())
