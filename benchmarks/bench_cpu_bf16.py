"""bf16 autocast against fp32 on this CPU, for networks of several sizes: where ``precision: auto`` should switch.

The training core's own epoch (:func:`training.steps.train_epoch`: AdamW fused, gradient clipping, the flat
gradient buffer) on :class:`~training.model.TabularNet` over the sample data's encoded rows, once in fp32 and
once under bf16 autocast, alternating, best of ``--repeats``; each network's multiply-accumulates per step
(:func:`training.model.rank_step_macs`) beside the ratio, and what ``auto`` resolves to for it
(:func:`training.config.resolve_runtime`), so the table shows whether the threshold picks the faster one.
Only meaningful on a CPU with native bf16 (AVX512-BF16 or AMX); elsewhere it says so and stops.

    ../shared/recipes/quiet.sh .venv/bin/python -m benchmarks.bench_cpu_bf16
"""

from __future__ import annotations

import argparse
import os
import time
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from training.data_splits import EncodedData

NETWORKS = [((128, 64), 256), ((128, 64), 1024), ((256, 128), 256), ((384, 256), 256), ((512, 512), 256)]
"""(hidden_units, batch): the default network, then wider ones and a larger batch."""


def samples_per_second(data: EncodedData, hidden: tuple[int, ...], batch: int, precision: str) -> float:
    from training.config import ModelConfig, Runtime, TrainConfig
    from training.gradients import FlatGradients
    from training.model import TabularNet
    from training.steps import epoch_indices, make_optimizer, train_epoch

    config = TrainConfig(batch_size=batch, model=ModelConfig(hidden_units=hidden), device="cpu")
    torch.manual_seed(0)
    model = TabularNet(data.spec, config.model)
    grads, optimizer = FlatGradients(model.parameters()), make_optimizer(model, config)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    runtime = Runtime(device_type="cpu", precision=precision, backend="gloo")
    x, y = torch.from_numpy(data.x_train), torch.from_numpy(data.y_train)
    indices = epoch_indices(len(x), 1, 0, 0, 1)
    train_epoch(
        model, model, grads, optimizer, scaler, indices[: batch * 20], x, y, batch, config, runtime
    )  # warm
    started = time.perf_counter()
    train_epoch(model, model, grads, optimizer, scaler, indices, x, y, batch, config, runtime)
    return len(indices) / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> None:
    from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
    from training.config import ModelConfig, TrainConfig, cpu_has_native_bf16, resolve_runtime
    from training.data_splits import encode_splits, split_frame
    from training.model import rank_step_macs

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000, help="sample rows (70%% train) per timed epoch")
    parser.add_argument(
        "--repeats", type=int, default=3, help="alternating runs of each precision; the best counts"
    )
    args = parser.parse_args(argv)
    if not cpu_has_native_bf16():
        print("this CPU has no native bf16 (AVX512-BF16 or AMX): auto stays fp32 here, nothing to compare")
        return
    # One encoding for every network: the split and the features depend on neither the network nor the batch.
    data = encode_splits(
        split_frame(generate(SampleDataConfig(rows=args.rows)), SAMPLE_SCHEMA, TrainConfig()), SAMPLE_SCHEMA
    )
    load_before = os.getloadavg()
    lines = [
        "| network | batch | multiply-accumulates per step | fp32 samples/s | bf16 samples/s | bf16 / fp32 | auto picks |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for hidden, batch in NETWORKS:
        best = {"fp32": 0.0, "bf16": 0.0}
        for _ in range(args.repeats):
            for precision in best:
                best[precision] = max(best[precision], samples_per_second(data, hidden, batch, precision))
        config = TrainConfig(batch_size=batch, model=ModelConfig(hidden_units=hidden), device="cpu")
        macs = rank_step_macs(data.spec, config)
        picked = resolve_runtime(config, macs_per_step=macs).precision
        ratio = best["bf16"] / best["fp32"]
        faster = "bf16" if ratio > 1 else "fp32"
        note = (
            " (within 5 %: either)"
            if abs(ratio - 1) < 0.05
            else ("" if picked == faster else " (the slower one)")
        )
        lines.append(
            f"| {'-'.join(map(str, hidden))} | {batch} | {macs / 1e6:.1f}M | {best['fp32']:,.0f} | {best['bf16']:,.0f} "
            f"| {ratio:.2f}× | {picked}{note} |"
        )
        print(lines[-1], flush=True)
    load_after = os.getloadavg()
    print(f"\n{torch.get_num_threads()} torch threads; load average before {load_before}, after {load_after}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
