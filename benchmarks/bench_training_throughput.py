"""Training throughput of the training core versus a bare PyTorch loop, in the same process.

Both train the same :class:`~training.model.TabularNet` on the same encoded
training rows with the same batch size, AdamW hyperparameters and fp32
arithmetic, on one process. The bare loop is the floor of what any trainer
costs: shuffle, index, forward, backward, step; no validation, no gradient
clipping, no checkpoints, no metric bookkeeping. It runs twice, with the stock
``AdamW`` a user would write and with ``AdamW(fused=True)``, the kernel the
core uses, so the core's own overhead is visible apart from its optimiser.

The core is timed between its per-epoch metric callbacks (first to last), so
the figure covers whole epochs: training, validation, gradient clipping, the
checkpoint after every epoch and logging. Each loop is measured in wall time
and in process CPU time (all threads, so the core's background checkpoint
writer counts). On a machine shared with other work, wall time swings with the
neighbours' load while CPU time per sample barely moves: read the CPU column
for the overhead, the wall column for what a quiet machine gives. Runs
alternate and the best of ``--repeats`` counts.

    python benchmarks/bench_training_throughput.py --rows 50000 --epochs 4 --threads 1
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch
from torch import nn

from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from training.config import TrainConfig
from training.data_splits import EncodedData, encode_splits, split_frame
from training.metrics_logger import NullLogger
from training.model import TabularNet
from training.trainer import train

TARGET_RATIO = 0.9


@dataclass(frozen=True)
class Throughput:
    wall: float
    """Training rows per wall-clock second."""
    cpu: float
    """Training rows per CPU second of this process (all threads)."""


@dataclass
class EpochClock(NullLogger):
    """Records the clocks each time the core reports an epoch's metrics."""

    marks: list[tuple[float, float]] = field(default_factory=list)

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        if "val_auc" in metrics:
            self.marks.append((time.perf_counter(), time.process_time()))


def bare_loop(data: EncodedData, config: TrainConfig, fused: bool) -> Throughput:
    torch.manual_seed(config.seed)
    model = TabularNet(data.spec, config.model)
    model.train()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay, fused=fused or None
    )
    loss_fn = nn.BCEWithLogitsLoss()
    x, y = torch.from_numpy(data.x_train), torch.from_numpy(data.y_train)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(config.epochs):
        order = torch.randperm(len(x))
        for begin in range(0, len(x), config.batch_size):
            idx = order[begin : begin + config.batch_size]
            loss = loss_fn(model(x[idx]), y[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    rows = len(x) * config.epochs
    return Throughput(rows / (time.perf_counter() - wall), rows / (time.process_time() - cpu))


def core_loop(frame: pd.DataFrame, config: TrainConfig, train_rows: int) -> tuple[Throughput, float, float]:
    """(epochs 2..N of the core, the samples/s the core reports, samples/s of the whole ``train()`` call)."""
    clock = EpochClock()
    with tempfile.TemporaryDirectory(prefix="bench-train-") as scratch:
        start = time.perf_counter()
        result = train(
            frame,
            SAMPLE_SCHEMA,
            config,
            Path(scratch) / "model",
            checkpoint_dir=Path(scratch) / "ckpt",
            logger=clock,
        )
        whole = train_rows * result.epochs_run / (time.perf_counter() - start)
    (wall0, cpu0), (wall1, cpu1) = clock.marks[0], clock.marks[-1]
    rows = train_rows * (len(clock.marks) - 1)
    return Throughput(rows / (wall1 - wall0), rows / (cpu1 - cpu0)), result.samples_per_second, whole


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Training core vs bare PyTorch loop: samples/s.")
    parser.add_argument("--rows", type=int, default=50_000, help="rows of sample data (before the split)")
    parser.add_argument(
        "--epochs", type=int, default=4, help="epochs per run (>= 2; the core is timed over 2..N)"
    )
    parser.add_argument("--batch-size", type=int, default=256, help="batch size of all loops")
    parser.add_argument(
        "--repeats", type=int, default=5, help="alternating runs of each loop; the best counts"
    )
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    args = parser.parse_args(argv)
    if args.epochs < 2:
        parser.error("--epochs must be at least 2: the core is timed between its first and last epoch")
    if args.threads:
        torch.set_num_threads(args.threads)

    frame = generate(SampleDataConfig(rows=args.rows, seed=0))
    config = TrainConfig(
        epochs=args.epochs, batch_size=args.batch_size, precision="fp32", device="cpu", patience=0, nproc=1
    )
    data = encode_splits(split_frame(frame, SAMPLE_SCHEMA, config), SAMPLE_SCHEMA)
    runs: dict[str, list[Throughput]] = {"stock": [], "fused": [], "core": []}
    reported, whole = [], []
    for _ in range(args.repeats):
        runs["stock"].append(bare_loop(data, config, fused=False))
        runs["fused"].append(bare_loop(data, config, fused=True))
        core, core_reported, core_whole = core_loop(frame, config, len(data.x_train))
        runs["core"].append(core)
        reported.append(core_reported)
        whole.append(core_whole)
    best = {name: Throughput(max(r.wall for r in rs), max(r.cpu for r in rs)) for name, rs in runs.items()}

    print(
        f"rows={args.rows} train_rows={len(data.x_train)} epochs={args.epochs} batch={args.batch_size} "
        f"threads={torch.get_num_threads()} torch={torch.__version__} repeats={args.repeats}"
    )
    labels = {"stock": "bare loop, stock AdamW", "fused": "bare loop, AdamW(fused)", "core": "training core"}
    for name, label in labels.items():
        walls = ", ".join(f"{r.wall:,.0f}" for r in runs[name])
        print(
            f"{label:24s}: wall {best[name].wall:9,.0f}/s  cpu {best[name].cpu:9,.0f}/s  (wall runs: {walls})"
        )
    print(f"core's own samples_per_second (whole loop, epoch 1 included): best {max(reported):,.0f}/s")
    print(f"whole train() call incl. split, encoding, model saving: best {max(whole):,.0f}/s")
    for name in ("stock", "fused"):
        for clock in ("wall", "cpu"):
            ratio = getattr(best["core"], clock) / getattr(best[name], clock)
            verdict = "meets" if ratio >= TARGET_RATIO else "misses"
            print(
                f"core / bare {name:5s} ({clock:4s}): {ratio:.2f}x  ({verdict} the >= {TARGET_RATIO}x target)"
            )

    print()
    print("| loop | samples/s (wall) | samples/s (CPU) | core vs this (wall / CPU) |")
    print("|---|---:|---:|---:|")
    descriptions = {
        "stock": "bare PyTorch loop, stock `AdamW`",
        "fused": "bare PyTorch loop, `AdamW(fused=True)` as in the core",
        "core": "training core (validation, clipping, checkpoint every epoch)",
    }
    for name, text in descriptions.items():
        b, c = best[name], best["core"]
        print(f"| {text} | {b.wall:,.0f} | {b.cpu:,.0f} | {c.wall / b.wall:.2f}x / {c.cpu / b.cpu:.2f}x |")
    print()
    print(
        f"_{args.rows:,} sample rows ({len(data.x_train):,} training rows), {args.epochs} epochs, "
        f"batch {args.batch_size}, fp32, 1 process, {torch.get_num_threads()} thread(s), "
        f"best of {args.repeats} alternating runs; CPU = samples per process CPU-second._"
    )


if __name__ == "__main__":
    main()
