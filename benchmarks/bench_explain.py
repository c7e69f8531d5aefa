"""What a reason costs: p50/p99 per explained row against plain scoring of the same rows, in one run.

Two measurements on the same registered model (the platform's default TabularNet on the sample data,
registered with 64 reference rows):

- **in process**: ONNX Runtime scoring ``k`` rows (``LoadedModel.predict``) against the attribution of the
  same ``k`` rows (``mlops.model.row_attribution.attribute``: one call of ``1 + features * references``
  scores per row), alternating, so both see the same machine;
- **over HTTP**: ``mlops serve`` in a subprocess; one client sends V1 ``:predict`` and ``:explain`` of the
  same ``k`` rows, alternating, one request at a time (latency, not throughput).

Figures are per row (a request's latency divided by its rows). Run it on a quiet machine:

    .venv/bin/python -m benchmarks.bench_explain [--rows 1 16] [--requests 300] [--references 64]

Results: a table on stdout and ``benchmarks/.out/explain.json``. ``--requests 5`` is a smoke run (~30 s).
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from benchmarks.bench_serving import OUT, free_port, quiet_serve_command, started, train_and_export

MODEL = "bench-explain"


def register(workspace_root: Path, onnx_path: Path, references: int) -> None:
    from components.register.version_registration import register_onnx_model
    from mlops.data.sample_data import SampleDataConfig, generate
    from mlops.tracking.store import TrackingStore
    from mlops.vocabulary import Lineage
    from mlops.workspace import Workspace

    workspace = Workspace(workspace_root).create()
    store = TrackingStore(workspace.tracking_uri, "bench", "bench", workspace.artifact_root)
    example = generate(SampleDataConfig(rows=max(500, references), seed=1))
    registered = register_onnx_model(
        onnx_path.parent,
        example,
        MODEL,
        Lineage("bench", "", "", "", "0.1.0", ""),
        store,
        reference_rows=references,
    )
    store.move_alias(MODEL, "champion", registered.version, None, reason="benchmark set-up")


def percentiles(seconds: list[float], rows: int) -> dict[str, float]:
    per_row = sorted(s / rows * 1e6 for s in seconds)
    return {
        "p50_us_per_row": statistics.median(per_row),
        "p99_us_per_row": per_row[min(len(per_row) - 1, int(0.99 * len(per_row)))],
        "samples": len(per_row),
    }


def alternate(
    first: Callable[[], Any], second: Callable[[], Any], repeats: int
) -> tuple[list[float], list[float]]:
    """Time ``first`` and ``second`` one after the other, ``repeats`` times each (after one warm-up call)."""
    first(), second()
    a, b = [], []
    for _ in range(repeats):
        started_at = time.perf_counter()
        first()
        a.append(time.perf_counter() - started_at)
        started_at = time.perf_counter()
        second()
        b.append(time.perf_counter() - started_at)
    return a, b


def in_process(workspace_root: Path, rows: list[int], repeats: int, references: int) -> list[dict[str, Any]]:
    from mlops.data.sample_data import SampleDataConfig, generate
    from mlops.model.row_attribution import attribute
    from mlops.tracking.store import TrackingStore
    from mlops.workspace import Workspace
    from serving.model_source import RegisteredModelSource
    from serving.runtime import load_model

    workspace = Workspace(workspace_root)
    store = TrackingStore(workspace.tracking_uri, "bench", "bench", workspace.artifact_root)
    with tempfile.TemporaryDirectory() as cache:
        registry = RegisteredModelSource(store, MODEL, Path(cache))
        model = load_model(registry.fetch(registry.version_for("champion")))
    assert model.reference is not None
    reference = model.reference.x[:references]
    frame = generate(SampleDataConfig(rows=max(rows), seed=7))
    out = []
    for k in rows:
        x = model.spec.encode(frame.iloc[:k])
        plain, explained = alternate(
            functools.partial(model.predict, x),
            functools.partial(attribute, model.predict, x, reference, model.spec.names),
            repeats,
        )
        out.append(
            {
                "where": "in process",
                "rows": k,
                "plain": percentiles(plain, k),
                "explain": percentiles(explained, k),
            }
        )
    return out


def over_http(workspace_root: Path, rows: list[int], repeats: int, references: int) -> list[dict[str, Any]]:
    from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate

    port = free_port()
    command = quiet_serve_command(
        workspace_root,
        MODEL,
        port,
        "--explain-max-rows",
        str(max(rows)),
        "--explain-reference-rows",
        str(references),
    )
    url = f"http://127.0.0.1:{port}"
    frame = generate(SampleDataConfig(rows=max(rows), seed=7))[list(SAMPLE_SCHEMA.features)]
    out = []
    with (
        started("bench-explain-server", command, f"{url}/v2/health/ready"),
        httpx.Client(timeout=60) as client,
    ):
        for k in rows:
            records = frame.iloc[:k].to_dict("records")
            body = {"instances": [{c: (None if v != v else v) for c, v in r.items()} for r in records]}

            def post(route: str, body: dict[str, Any] = body) -> None:
                response = client.post(f"{url}/v1/models/{MODEL}:{route}", json=body)
                response.raise_for_status()

            plain, explained = alternate(lambda: post("predict"), lambda: post("explain"), repeats)
            out.append(
                {
                    "where": "HTTP (V1)",
                    "rows": k,
                    "plain": percentiles(plain, k),
                    "explain": percentiles(explained, k),
                }
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 16], help="rows per request")
    parser.add_argument("--requests", type=int, default=300, help="requests of each kind per row count")
    parser.add_argument(
        "--references", type=int, default=64, help="reference rows the reasons are measured against"
    )
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-explain-") as tmp:
        root = Path(tmp)
        onnx_path = train_and_export(root / "onnx", (64, 32), steps=50)
        register(root / "workspace", onnx_path, args.references)
        results = in_process(root / "workspace", args.rows, args.requests, args.references)
        results += over_http(root / "workspace", args.rows, args.requests, args.references)
    print(
        "| where | rows/request | plain p50 / p99 µs per row | explain p50 / p99 µs per row | explain / plain (p50) |"
    )
    print("|---|---|---|---|---|")
    for r in results:
        plain, explain = r["plain"], r["explain"]
        print(
            f"| {r['where']} | {r['rows']} | {plain['p50_us_per_row']:,.0f} / {plain['p99_us_per_row']:,.0f} | "
            f"{explain['p50_us_per_row']:,.0f} / {explain['p99_us_per_row']:,.0f} | "
            f"{explain['p50_us_per_row'] / plain['p50_us_per_row']:,.1f}× |"
        )
    (OUT / "explain.json").write_text(
        json.dumps({"references": args.references, "results": results}, indent=2)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
