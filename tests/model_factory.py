"""A trained TabularNet in about a second, for tests that need a model but not the training loop."""

from __future__ import annotations

import pandas as pd
import torch

from components.common.dataset import DatasetSchema
from components.common.sample_data import SAMPLE_SCHEMA
from training.features import FeatureSpec
from training.model import ModelConfig, TabularNet


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
