"""Rollout benchmark: what a 90/10 canary split and a shadow copy cost the server, against one model.

One ``mlops serve`` process (the real CLI, request log off) with a champion and a
challenger of the same architecture registered; the three modes are switched on that
same process through the rollout admin route, and measured in interleaved rounds
(one, split, shadow, one, split, shadow, ...) so drift in the shared machine's load hits
all three alike. Load: single-row V2 requests at concurrency 32 from a separate process
(wrk when installed). Reported per mode: median req/s, p99 and server CPU µs per request
over the rounds, and the ratios against "one model" in the same run.

    .venv/bin/python -m benchmarks.bench_rollout_serving [--duration 4] [--rounds 3]   # from the repo root

Aims: the split costs ≤ 10 % throughput; shadow costs ≤ 2× CPU per request.
Results: a markdown table on stdout and ``benchmarks/.out/rollout.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

import httpx

from benchmarks.bench_serving import (
    OUT,
    REPO,
    free_port,
    quiet_serve_command,
    started,
    train_and_export,
    tree_cpu_seconds,
    v2_json_body,
)
from benchmarks.serving_load import run_load, wrk_available

MODEL = "bench-rollout"
MODES = {
    "one model": {"challenger": None},
    "90/10 split": {"challenger": "2", "percent": 10},
    "shadow": {"challenger": "2", "shadow": True},
}
SPLIT_AIM, SHADOW_AIM = 0.90, 2.0


def register_pair(workspace_root: Path, champion: Path, challenger: Path) -> None:
    from components.register.version_registration import register_onnx_model
    from mlops.data.sample_data import SampleDataConfig, generate
    from mlops.tracking.store import TrackingStore
    from mlops.vocabulary import Lineage
    from mlops.workspace import Workspace

    workspace = Workspace(workspace_root).create()
    store = TrackingStore(workspace.tracking_uri, "bench", "bench", workspace.artifact_root)
    lineage = Lineage("bench", "", "", "", "0.1.0", "")
    example = generate(SampleDataConfig(rows=10, seed=1))
    first = register_onnx_model(champion.parent, example, MODEL, lineage, store)
    register_onnx_model(challenger.parent, example, MODEL, lineage, store)
    store.move_alias(MODEL, "champion", first.version, None, reason="benchmark set-up")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=4.0, help="seconds of load per round and mode")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"load generator: {'wrk' if wrk_available() else 'python fallback (apt-get install wrk)'}")
    workspace_root = OUT / "rollout-workspace"
    shutil.rmtree(workspace_root, ignore_errors=True)
    print("building and registering champion and challenger ...", flush=True)
    register_pair(
        workspace_root,
        train_and_export(OUT / "rollout-champion", (128, 64), steps=60),
        train_and_export(OUT / "rollout-challenger", (128, 64), steps=40),
    )
    from mlops.data.sample_data import SampleDataConfig, generate
    from mlops.model.onnx_model import OnnxScorer

    scorer = OnnxScorer.load(OUT / "rollout-champion" / "model.onnx")
    x = scorer.spec.encode(generate(SampleDataConfig(rows=1, seed=5, missing_rate=0.0)))
    body = v2_json_body(x)

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = quiet_serve_command(workspace_root, MODEL, port)
    samples: dict[str, list[tuple[float, float, float]]] = {mode: [] for mode in MODES}
    with started("rollout-server", command, f"{base}/v2/health/ready") as server:
        url = f"{base}/v2/models/{MODEL}/infer"
        run_load(url, body, 8, 1.0)  # warm-up
        for round_ in range(args.rounds):
            for mode, plan in MODES.items():
                httpx.put(f"{base}/v2/models/{MODEL}/rollout", json=plan, timeout=60).raise_for_status()
                run_load(url, body, 8, 0.5)
                time.sleep(0.3)  # shadow copies of the warm-up drain
                cpu_before = tree_cpu_seconds(server.pid)
                r = run_load(url, body, args.concurrency, args.duration)
                time.sleep(0.3)  # the last shadow copies are scored (and counted) too
                cpu_us = 1e6 * (tree_cpu_seconds(server.pid) - cpu_before) / max(r.requests, 1)
                if r.errors:
                    raise RuntimeError(f"{mode}: {r.errors} failed requests")
                samples[mode].append((r.rps, r.p99_ms, cpu_us))
                print(
                    f"  round {round_ + 1} {mode:12}: {r.rps:8.0f} req/s  p99 {r.p99_ms:6.2f} ms  "
                    f"server CPU {cpu_us:6.1f} us/req",
                    flush=True,
                )
        metrics = httpx.get(f"{base}/metrics", timeout=10).text
    shadow_rows = sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("mlops_serving_scored_requests_total") and 'role="shadow"' in line
    )
    summary = {
        mode: {
            key: statistics.median(s[i] for s in rows) for i, key in enumerate(("rps", "p99_ms", "cpu_us"))
        }
        for mode, rows in samples.items()
    }
    one, split, shadow = (summary[m] for m in MODES)
    ratios = {"split_throughput": split["rps"] / one["rps"], "shadow_cpu": shadow["cpu_us"] / one["cpu_us"]}
    print(
        f"\n| mode (c={args.concurrency}, median of {args.rounds} rounds × {args.duration:g} s) | req/s | p99 ms | "
        "server CPU µs/req | vs one model |"
    )
    print("| --- | ---: | ---: | ---: | --- |")
    for mode, row in summary.items():
        versus = {
            "one model": "baseline",
            "90/10 split": f"throughput ×{ratios['split_throughput']:.2f}",
            "shadow": f"CPU/request ×{ratios['shadow_cpu']:.2f}",
        }[mode]
        print(f"| {mode} | {row['rps']:.0f} | {row['p99_ms']:.2f} | {row['cpu_us']:.0f} | {versus} |")
    print(f"\nshadow rows scored by the challenger during the run: {shadow_rows:.0f}")
    verdicts = [
        f"split throughput ratio {ratios['split_throughput']:.2f} (aim ≥ {SPLIT_AIM})",
        f"shadow CPU ratio {ratios['shadow_cpu']:.2f} (aim ≤ {SHADOW_AIM})",
    ]
    print("; ".join(verdicts))
    (OUT / "rollout.json").write_text(
        json.dumps(
            {
                "summary": summary,
                "ratios": ratios,
                "samples": samples,
                "shadow_rows": shadow_rows,
                "args": vars(args),
            },
            indent=2,
        )
    )
    print(f"written {OUT / 'rollout.json'} ({REPO.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
