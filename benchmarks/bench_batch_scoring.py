"""Batch scoring of a Parquet prefix: ``mlops score`` vs the raw ONNX Runtime ceiling vs ``mlops serve``.

Setup (not timed): ``--rows`` rows × 20 features from the sample generator written as a
prefix of Parquet files of ``--file-rows`` rows; a small TabularNet trained, exported,
registered (signed) and made champion in a fresh workspace (``benchmarks/bench_serving.py``'s
helpers).

Timed, in a fresh child process each (so the peak RSS, ``VmHWM``, is that path's own):
- ``mlops score``: plan (alias resolved, version fetched and verified: this is where the
  registry client is first imported) + every chunk read, checked, encoded, scored, written as
  Parquet with its request-log copy + finish — end to end; also without the request-log copy,
  and over the first input file alone (peak RSS must not grow with the rows);
- the ceiling: ONNX Runtime on the same rows, file by file in the same ``--chunk-rows`` slices,
  pre-encoded in memory, one ``session.run`` per slice, no I/O — the registered model's bytes
  (its SHA-256 is checked against the version ``mlops score`` scored with) and the same session
  settings (``OnnxScorer.load``, ``--intra-op-threads``); only the loop is timed;
- ``mlops serve``: the same rows as 1,000-row KServe V2 binary-tensor requests (FP32, encoded
  client-side, as ``tritonclient`` sends), ``--clients`` concurrent clients (RSS: the server's).

Goals: score ≥ 0.7× the ceiling end to end; score's peak RSS flat in the number of
rows. ``score`` rows/s is reported end to end and for the scoring loop alone (``loop``: the
fixed cost of importing the registry client and verifying the model left out). Run it on a
quiet machine; it prints the load average before and after, and ``--write-results`` appends
the figures, the command and both load averages to ``benchmarks/RESULTS.md``.

    PYTHONPATH=$PWD python benchmarks/bench_batch_scoring.py --rows 10000000 --write-results
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

from benchmarks.results_log import append_entry

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


def run_score(
    workspace: str, data: str, out: str, chunk_rows: int, request_log: bool, intra_op_threads: int
) -> dict[str, Any]:
    from components.batch_score.batch_finish import finish_job
    from components.batch_score.batch_plan import plan_with_model
    from components.batch_score.batch_shard import score_shard
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
        intra_op_threads=intra_op_threads,
    )
    started, cpu = time.perf_counter(), time.process_time()
    plan, artifact = plan_with_model(settings, store, space.root / "serving-cache")  # as mlops score does
    planned = time.perf_counter()
    cache = space.root / "serving-cache"
    results = [score_shard(plan, s, store, cache, artifact=artifact) for s in range(len(plan.shards))]
    looped = time.perf_counter()
    summary = finish_job(plan, results, workspace_root=space.root)
    seconds = time.perf_counter() - started
    return {
        "rows": summary.rows_scored,
        "seconds": seconds,
        "setup_s": planned - started,
        "loop_s": looped - planned,
        "cpu_s": time.process_time() - cpu,
        "peak_rss_mb": peak_rss_mb(),
        "onnx_sha256": plan.onnx_sha256,
    }


def run_ceiling(onnx: str, files: list[str], chunk_rows: int, intra_op_threads: int) -> dict[str, Any]:
    import hashlib

    import pyarrow.parquet as pq

    from mlops.model.onnx_model import INPUT_NAME, OUTPUT_NAME, OnnxScorer

    scorer = OnnxScorer.load(Path(onnx), intra_op_threads=intra_op_threads)
    encoded = [scorer.spec.encode(pq.read_table(f).to_pandas()) for f in files]
    slices = [x[start : start + chunk_rows] for x in encoded for start in range(0, len(x), chunk_rows)]
    run = scorer.session.run
    started, cpu = time.perf_counter(), time.process_time()
    for block in slices:
        run([OUTPUT_NAME], {INPUT_NAME: block})
    seconds = time.perf_counter() - started
    return {
        "rows": sum(len(x) for x in encoded),
        "seconds": seconds,
        "cpu_s": time.process_time() - cpu,
        "peak_rss_mb": peak_rss_mb(),
        "onnx_sha256": hashlib.sha256(Path(onnx).read_bytes()).hexdigest(),
    }


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


def profile_score(workspace: str, data: str, out: str, args: argparse.Namespace) -> list[str]:
    """The request-logged ``mlops score`` path in a fresh interpreter under py-spy: its largest shares."""
    from benchmarks.pyspy_shares import record_command, table

    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from benchmarks.bench_batch_scoring import run_score; "
        "run_score(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), True, int(sys.argv[6]))"
    )
    path = REPO / "benchmarks" / ".out" / "batch_scoring.pyspy.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-c", code, str(REPO), workspace, data, out]
    if record_command([*command, str(args.chunk_rows), str(args.intra_op_threads)], path):
        raise SystemExit(f"the profiled mlops score run failed; its profile so far: {path}")
    lines = table(path, top=12)
    print("\n".join(lines))
    return lines


def in_child(function: Any, *args: Any) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        return dict(pool.apply(function, args))


LABELS = {
    "ceiling": "ONNX Runtime ceiling (same rows, model, session settings; no I/O)",
    "score": "`mlops score` (request-log copy on, the default)",
    "score_no_log": "`mlops score`, request log off",
    "score_one_file": "`mlops score`, first input file only (memory check)",
    "serve": "`mlops serve`, 1,000-row binary requests",
}


def load_average() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def report(figures: dict[str, Any]) -> list[str]:
    """The figures as Markdown table rows (also printed)."""
    ceiling = figures["ceiling"]["rows"] / figures["ceiling"]["seconds"]
    rows = [
        "| path | rows | rows/s end to end | × ceiling | scoring loop rows/s | × ceiling | wall s | CPU s | peak RSS MB |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, label in LABELS.items():
        if name not in figures:
            continue
        f = figures[name]
        rate = f["rows"] / f["seconds"]
        loop = f["rows"] / f["loop_s"] if "loop_s" in f else rate
        cpu = f"{f['cpu_s']:.1f}" if "cpu_s" in f else "–"
        rows.append(
            f"| {label} | {f['rows']:,} | {rate:,.0f} | {rate / ceiling:.2f}× | {loop:,.0f} | {loop / ceiling:.2f}× "
            f"| {f['seconds']:.1f} | {cpu} | {f['peak_rss_mb']:,.0f} |"
        )
    return rows


def write_results(path: Path, command: str, figures: dict[str, Any], loads: tuple[str, str]) -> None:
    """Append this run to RESULTS.md under the batch-scoring heading (created the first time)."""
    score = figures["score"]
    entry = [
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, load average "
        f"{loads[0]} before and {loads[1]} after (1/5/15 min); each path in a fresh child process:",
        "",
        f"    {command}",
        "",
        *report(figures),
        "",
        f"`mlops score` fixed cost (registry client import, alias resolved, model fetched and verified): "
        f"{score['setup_s']:.1f} s of its {score['seconds']:.1f} s.",
        *(
            ["", "Where `mlops score`'s time goes (a further run, under py-spy, not timed):", ""]
            if "profile" in figures
            else []
        ),
        *figures.get("profile", []),
    ]
    append_entry(path, "## Batch scoring (issue 24)", entry)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--file-rows", type=int, default=1_000_000, help="rows per input Parquet file")
    parser.add_argument(
        "--chunk-rows", type=int, default=100_000, help="score.chunk_rows, and the ceiling's batch"
    )
    parser.add_argument(
        "--intra-op-threads", type=int, default=1, help="score.intra_op_threads, and the ceiling's session's"
    )
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients of mlops serve")
    parser.add_argument("--skip-serve", action="store_true")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument(
        "--write-results", action="store_true", help="append the figures to benchmarks/RESULTS.md"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="after the timed paths, `mlops score` once more under py-spy (not timed): where its time goes",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from benchmarks.bench_serving import register_model, train_and_export

    command = "PYTHONPATH=$PWD python benchmarks/bench_batch_scoring.py " + " ".join(sys.argv[1:])
    start_load = load_average()
    print(f"load average at start: {start_load}; {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        root = Path(tmp)
        print(f"writing {args.rows} rows as Parquet ({args.file_rows} per file) ...")
        files = [str(f) for f in write_input(root / "in", args.rows, args.file_rows)]
        (root / "one").mkdir()
        os.link(files[0], root / "one" / Path(files[0]).name)
        onnx = train_and_export(root / "onnx", (64, 32), steps=50)
        tracking_uri = register_model(root / "workspace", onnx)
        print(f"registered in {tracking_uri}")
        figures: dict[str, Any] = {"rows": args.rows, "chunk_rows": args.chunk_rows}
        space, threads = str(root / "workspace"), args.intra_op_threads
        figures["score"] = in_child(
            run_score, space, str(root / "in"), str(root / "out"), args.chunk_rows, True, threads
        )
        figures["score_no_log"] = in_child(
            run_score, space, str(root / "in"), str(root / "out-no-log"), args.chunk_rows, False, threads
        )
        figures["score_one_file"] = in_child(
            run_score, space, str(root / "one"), str(root / "out-one"), args.chunk_rows, True, threads
        )
        figures["ceiling"] = in_child(run_ceiling, str(onnx), files, args.chunk_rows, threads)
        if not args.skip_serve:
            figures["serve"] = in_child(run_serve, space, str(onnx), files, args.clients)
        if args.profile:
            figures["profile"] = profile_score(space, str(root / "in"), str(root / "out-profiled"), args)
    if figures["ceiling"]["onnx_sha256"] != figures["score"]["onnx_sha256"]:
        raise SystemExit("the ceiling did not load the bytes mlops score scored with; the comparison is void")
    if figures["ceiling"]["rows"] != figures["score"]["rows"]:
        raise SystemExit(
            f"the ceiling scored {figures['ceiling']['rows']} rows, score {figures['score']['rows']}"
        )
    end_load = load_average()
    print("\n".join(report(figures)))
    print(f"load average at end: {end_load}")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))
    if args.write_results:
        write_results(REPO / "benchmarks" / "RESULTS.md", command, figures, (start_load, end_load))
        print("appended to benchmarks/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
