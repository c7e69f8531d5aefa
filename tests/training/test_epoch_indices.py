"""The epoch's row order is DistributedSampler's, index for index, for every rank and padding case."""

from __future__ import annotations

import pytest
import torch

from training.steps import epoch_indices


@pytest.mark.parametrize("rows", [1, 2, 5, 7, 64, 1001])
@pytest.mark.parametrize("world_size", [1, 2, 3, 8])
def test_every_ranks_order_is_the_samplers(rows: int, world_size: int) -> None:
    dataset = torch.utils.data.TensorDataset(torch.zeros(rows, 1))
    for rank in range(world_size):
        for seed, epoch in ((0, 1), (7, 2), (1234, 5)):
            sampler: torch.utils.data.DistributedSampler[int] = torch.utils.data.DistributedSampler(
                dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed
            )
            sampler.set_epoch(epoch)
            ours = epoch_indices(rows, world_size, rank, seed, epoch)
            assert ours.dtype == torch.long
            assert ours.tolist() == list(iter(sampler)), (rows, world_size, rank, seed, epoch)


def test_the_ranks_cover_every_row_and_epochs_differ() -> None:
    shards = [epoch_indices(10, 3, rank, 0, 1) for rank in range(3)]
    assert all(len(s) == 4 for s in shards)  # 10 rows padded to 12
    assert set(torch.cat(shards).tolist()) == set(range(10))
    assert epoch_indices(100, 1, 0, 0, 1).tolist() != epoch_indices(100, 1, 0, 0, 2).tolist()
