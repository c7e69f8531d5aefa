"""Batch scoring of a Parquet prefix: ``mlops score`` vs the raw ONNX Runtime ceiling vs ``mlops serve``.

Setup (not timed): ``--rows`` rows × 20 features from the sample generator written as a
prefix of Parquet files of ``--file-rows`` rows; a small TabularNet trained, exported,
registered (signed) and made champion in a fresh workspace (``benchmarks/bench_serving.py``'s
helpers).

Timed, in a fresh child process each (so the peak RSS is that path's own):
- ``mlops score``: plan + every chunk read, checked, encoded, scored, written as Parquet
  (with the request-log copy unless ``--no-request-log``) + finish — end to end;
- the ceiling: ONNX Runtime on the same rows, pre-encoded in memory, one ``session.run`` per
  ``--chunk-rows`` rows, no I/O (only the loop is timed; its RSS includes the encoded matrix);
- ``mlops serve``: the same rows as 1,000-row KServe V2 binary-tensor requests (FP32, encoded
  client-side, as ``tritonclient`` sends), ``--clients`` concurrent clients (RSS: the server's).

Goals (issue 24): score ≥ 0.7× the ceiling; score's peak RSS flat in the number of rows.
Run it on a quiet machine (it prints the load average); results go to ``benchmarks/RESULTS.md``
by hand, with the machine.

    python benchmarks/bench_batch_scoring.py --rows 10000000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
MODEL = "bench-model"  # benchmarks.bench_serving.MODEL, which register_model registers
SERVE_BATCH = 1000


def peak_rss_mb(pid: str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def write_input(directory: Path, rows: int, file_rows: int) -> list[Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mlops.data.sample_data import SampleDataConfig, generate

    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for index, start in enumerate(range(0, rows, file_rows)):
        frame = generate(SampleDataConfig(rows=min(file_rows, rows - start), seed=100 + index))
        path = directory / f"part-{index:04d}.parquet"
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
        files.append(path)
    return files


def run_score(workspace: str, data: str, out: str, chunk_rows: int, request_log: bool) -> dict[str, Any]:
    from components.batch_score.batch_scorer import finish_job, plan_job, score_shard
    from components.batch_score.config import ScoreSettings
    from mlops.tracking.store import TrackingStore
    from mlops.workspace import Workspace

    space = Workspace(Path(workspace))
    store = TrackingStore.from_uri(space.tracking_uri, experiment="bench")
    settings = ScoreSettings(
        model=f"{MODEL}@champion",
        data_uri=data,
        output_uri=out,
        chunk_rows=chunk_rows,
        request_log=request_log,
    )
    started = time.perf_counter()
    plan = plan_job(settings, store, space.root / "serving-cache")
    results = [score_shard(plan, s, store, space.root / "serving-cache") for s in range(len(plan.shards))]
    summary = finish_job(plan, results, workspace_root=space.root)
    seconds = time.perf_counter() - started
    return {"rows": summary.rows_scored, "seconds": seconds, "peak_rss_mb": peak_rss_mb()}


def run_ceiling(onnx: str, files: list[str], chunk_rows: int) -> dict[str, Any]:
    import pandas as pd

    from mlops.model.onnx_model import INPUT_NAME, OUTPUT_NAME, OnnxScorer

    scorer = OnnxScorer.load(Path(onnx))
    x = np.concatenate([scorer.spec.encode(pd.read_parquet(f)) for f in files])
    started = time.perf_counter()
    for start in range(0, len(x), chunk_rows):
        scorer.session.run([OUTPUT_NAME], {INPUT_NAME: x[start : start + chunk_rows]})
    seconds = time.perf_counter() - started
    return {"rows": len(x), "seconds": seconds, "peak_rss_mb": peak_rss_mb()}


def run_serve(workspace: str, onnx: str, files: list[str], clients: int) -> dict[str, Any]:
    import httpx
    import pandas as pd

    from benchmarks.bench_serving import OUT, free_port, serve_command, started

    OUT.mkdir(parents=True, exist_ok=True)
    from mlops.model.onnx_model import OnnxScorer

    spec = OnnxScorer.load(Path(onnx)).spec
    x = np.concatenate([spec.encode(pd.read_parquet(f)) for f in files])
    port = free_port()
    command = [*serve_command(Path(workspace), MODEL), "--port", str(port), "--request-log-sample-rate", "1"]
    with started("batch serve", command, f"http://127.0.0.1:{port}/v2/health/ready") as server:
        url = f"http://127.0.0.1:{port}/v2/models/{MODEL}/infer"
        batches = list(range(0, len(x), SERVE_BATCH))

        def client(mine: list[int]) -> None:
            with httpx.Client(timeout=60) as http:
                for start in mine:
                    block = np.ascontiguousarray(x[start : start + SERVE_BATCH], dtype="<f4")
                    header = json.dumps(
                        {
                            "inputs": [
                                {
                                    "name": "features",
                                    "shape": list(block.shape),
                                    "datatype": "FP32",
                                    "parameters": {"binary_data_size": block.nbytes},
                                }
                            ],
                            "outputs": [{"name": "probability", "parameters": {"binary_data": True}}],
                        }
                    ).encode()
                    answer = http.post(
                        url,
                        content=header + block.tobytes(),
                        headers={"Inference-Header-Content-Length": str(len(header))},
                    )
                    answer.raise_for_status()

        threads = [threading.Thread(target=client, args=(batches[i::clients],)) for i in range(clients)]
        begun = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - begun
        rss = peak_rss_mb(str(server.pid))
    return {"rows": len(x), "seconds": seconds, "peak_rss_mb": rss}


def in_child(function: Any, *args: Any) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        return dict(pool.apply(function, args))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--file-rows", type=int, default=1_000_000, help="rows per input Parquet file")
    parser.add_argument(
        "--chunk-rows", type=int, default=100_000, help="score.chunk_rows, and the ceiling's batch"
    )
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients of mlops serve")
    parser.add_argument("--no-request-log", action="store_true", help="score without the request-log copy")
    parser.add_argument("--skip-serve", action="store_true")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from benchmarks.bench_serving import register_model, train_and_export

    print(f"load average at start: {' '.join(f'{v:.1f}' for v in os.getloadavg())}; {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        root = Path(tmp)
        print(f"writing {args.rows} rows as Parquet ({args.file_rows} per file) ...")
        files = [str(f) for f in write_input(root / "in", args.rows, args.file_rows)]
        onnx = train_and_export(root / "onnx", (64, 32), steps=50)
        tracking_uri = register_model(root / "workspace", onnx)
        print(f"registered in {tracking_uri}")
        figures: dict[str, Any] = {"rows": args.rows, "chunk_rows": args.chunk_rows}
        figures["score"] = in_child(
            run_score,
            str(root / "workspace"),
            str(root / "in"),
            str(root / "out"),
            args.chunk_rows,
            not args.no_request_log,
        )
        figures["ceiling"] = in_child(run_ceiling, str(onnx), files, args.chunk_rows)
        if not args.skip_serve:
            figures["serve"] = in_child(run_serve, str(root / "workspace"), str(onnx), files, args.clients)
    ceiling = figures["ceiling"]["rows"] / figures["ceiling"]["seconds"]
    for name in ("ceiling", "score", "serve"):
        if name in figures:
            f = figures[name]
            rate = f["rows"] / f["seconds"]
            print(
                f"{name:<8} {rate:>12,.0f} rows/s  {rate / ceiling:5.2f}× ceiling  "
                f"{f['seconds']:7.1f} s  peak RSS {f['peak_rss_mb']:,.0f} MB"
            )
    print(f"load average at end: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
