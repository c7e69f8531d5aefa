"""What serving by entity id costs: a request carrying ids against the same request carrying the values.

One run, on one machine, alternating request by request so both see the same load:

- a churn-like feature table (``--customers`` ids, four features) is written into a Feast repository by
  ``mlops features init``'s code, applied and materialized into the repository's online store (SQLite, the
  local provider's);
- Feast's own ``feast serve`` answers lookups over it (``FeatureServer``, as ``mlops serve --features`` starts);
- a model server in a child process (the platform's app over a small TabularNet on those four features, with
  ``features`` configured) answers V1 ``:predict`` with the values inline (the **baseline**) and with only
  ``{"customerID": id}`` rows (**by entity**: one batched ``/get-online-features`` per request);
- the lookup alone (``OnlineClient.lookup`` from this process) for the same ids.

Figures are per request (p50/p99 over ``--requests``), for each ``--rows`` per request. Run it on a quiet machine:

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.feature_lookup [--rows 1 16] [--requests 500] \\
        [--customers 1000] [--write-results]

``--requests 5 --customers 50`` is a smoke run. ``--write-results`` appends the table, the command and the
load average before and after to ``benchmarks/RESULTS.md``; ``--online-store postgresql://…`` measures a
PostgreSQL online store instead of SQLite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from benchmarks.results_log import append_entry

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / ".out"
MODEL = "bench-entity"
ENTITY = "customerID"
FEATURES = ("tenure", "MonthlyCharges", "TotalCharges", "Contract")
HEADING = "## Serving by entity id: the online lookup's cost per request"


def customer(number: int) -> str:
    return f"{number:04d}-BENCH"


def table(customers: int) -> Any:
    """One row per customer dated yesterday (so every value is fresh), plus a label for training."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    tenure = rng.integers(0, 72, customers)
    monthly = rng.uniform(18, 120, customers).round(2)
    return pd.DataFrame(
        {
            ENTITY: [customer(i) for i in range(customers)],
            "event_timestamp": datetime.now(UTC) - timedelta(days=1),
            "tenure": tenure,
            "MonthlyCharges": monthly,
            "TotalCharges": (tenure * monthly).round(2),
            "Contract": rng.choice(["Month-to-month", "One year", "Two year"], customers),
            "Churn": rng.integers(0, 2, customers),
        }
    )


def feature_repository(root: Path, frame: Any, online_store: str = "sqlite") -> Any:
    from mlops.features import environment, feast_cli
    from mlops.features.config import FeastSettings
    from mlops.features.repository import init_repository

    settings = FeastSettings()
    env = environment.install(settings)
    repo = init_repository(
        frame.drop(columns=["Churn"]),
        table_name="churn.csv",
        out=root / "features",
        entity=ENTITY,
        timestamp="event_timestamp",
        ttl=timedelta(days=7),
        online_store=online_store,
    )
    feast_cli.apply(env, repo.path, settings)
    feast_cli.materialize(env, repo.path, settings, start=datetime.now(UTC) - timedelta(days=3))
    return env, repo, settings


def train(path: Path, frame: Any) -> Path:
    import torch

    from mlops.data.dataset import DatasetSchema
    from mlops.data.features import FeatureSpec
    from training.config import ModelConfig
    from training.model import TabularNet
    from training.onnx_export import export_onnx

    schema = DatasetSchema(
        label="Churn",
        numeric_features=FEATURES[:3],
        categorical_features=FEATURES[3:],
        ignored_columns=(ENTITY, "event_timestamp"),
    )
    spec = FeatureSpec.fit(frame, schema)
    torch.manual_seed(0)
    model = TabularNet(spec, ModelConfig(hidden_units=(64, 32), dropout=0.0)).eval()
    export_onnx(model, path)
    return path


def child_serve(onnx: str, port: int, address: str, service: str) -> None:
    """The model server of the run (a child process, so client and server do not share a GIL)."""
    import uvicorn

    from mlops.origin_facts import file_sha256
    from serving.app import create_app
    from serving.config import ServerConfig
    from serving.model_source import ModelArtifact
    from serving.runtime import load_model

    model = load_model(ModelArtifact(MODEL, "1", Path(onnx), file_sha256(Path(onnx)), {}))
    config = ServerConfig(
        model_name=MODEL,
        tracking_uri="sqlite:///unused.db",
        port=port,
        reload_interval_s=0,
        features=service,
        feature_server=address,
        feature_entity=ENTITY,
    )
    uvicorn.run(create_app(config, model), host="127.0.0.1", port=port, log_level="warning", access_log=False)


def percentiles(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(s * 1e3 for s in seconds)
    return {
        "p50_ms": statistics.median(ordered),
        "p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        "samples": len(ordered),
    }


def alternate(calls: dict[str, Callable[[int], Any]], repeats: int) -> dict[str, list[float]]:
    """Each call once per round, ``repeats`` rounds (after one warm-up round), timed."""
    for call in calls.values():
        call(0)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for round_ in range(repeats):
        for name, call in calls.items():
            started = time.perf_counter()
            call(round_)
            times[name].append(time.perf_counter() - started)
    return times


def measure(args: argparse.Namespace, root: Path) -> list[dict[str, Any]]:
    from benchmarks.bench_serving import free_port
    from mlops.features.online import FeatureServer, OnlineClient

    frame = table(args.customers)
    env, repo, settings = feature_repository(root, frame, args.online_store)
    onnx = train(root / "model.onnx", frame)
    values = frame.set_index(ENTITY)[list(FEATURES)]
    results = []
    with FeatureServer(env, repo.path, settings, root / "feast-serve.log") as feature_server:
        port = free_port()
        child = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.feature_lookup", "--child-serve", str(onnx), str(port)]
            + [feature_server.address, repo.service],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        url = f"http://127.0.0.1:{port}"
        client, online = httpx.Client(timeout=30), OnlineClient(feature_server.address, settings)
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if client.get(f"{url}/v2/health/ready").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if child.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the model server did not start")
                time.sleep(0.2)
            for rows in args.rows:

                def ids(round_: int, rows: int = rows) -> list[str]:
                    start = (round_ * rows) % max(1, args.customers - rows)
                    return [customer(i) for i in range(start, start + rows)]

                def post(body: dict[str, Any]) -> None:
                    response = client.post(f"{url}/v1/models/{MODEL}:predict", json=body)
                    response.raise_for_status()

                def by_value(round_: int) -> None:
                    post({"instances": values.loc[ids(round_)].reset_index(drop=True).to_dict("records")})

                def by_entity(round_: int) -> None:
                    post({"instances": [{ENTITY: i} for i in ids(round_)]})

                def lookup(round_: int) -> None:
                    online.lookup(repo.service, ENTITY, ids(round_))

                times = alternate(
                    {"by value": by_value, "by entity": by_entity, "lookup alone": lookup}, args.requests
                )
                results.append({"rows": rows, **{name: percentiles(t) for name, t in times.items()}})
            metrics = client.get(f"{url}/metrics").text
        finally:
            client.close()
            online.close()
            child.terminate()
            child.wait(timeout=30)
    lookups = [
        line for line in metrics.splitlines() if line.startswith("mlops_serving_feature_lookup_seconds_")
    ]
    print("\n".join(lookups[-2:]))
    return results


def report(results: list[dict[str, Any]]) -> list[str]:
    rows = [
        "| rows/request | by value p50 / p99 ms | by entity p50 / p99 ms | lookup's cost (p50 difference) ms "
        "| lookup alone p50 / p99 ms |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in results:
        value, entity, alone = r["by value"], r["by entity"], r["lookup alone"]
        rows.append(
            f"| {r['rows']} | {value['p50_ms']:.2f} / {value['p99_ms']:.2f} | {entity['p50_ms']:.2f} / "
            f"{entity['p99_ms']:.2f} | {entity['p50_ms'] - value['p50_ms']:.2f} | {alone['p50_ms']:.2f} / "
            f"{alone['p99_ms']:.2f} |"
        )
    return rows


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def store_name(online_store: str) -> str:
    """The online store as the results say it (a PostgreSQL URL without its host: it names a test server)."""
    if online_store.strip().lower() == "sqlite":
        return "SQLite (Feast's local provider)"
    return "PostgreSQL (local server, `--online-store postgresql://…`)"


def write_results(path: Path, command: str, lines: list[str], loads: tuple[str, str], args: Any) -> None:
    """Append this run under :data:`HEADING` (created the first time)."""
    entry = [
        "",
        f"Command ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs; load average "
        f"before {loads[0]}, after {loads[1]}): `{command}`. Online store: {store_name(args.online_store)}, "
        f"{args.customers} customers; `feast serve` and the model server each in a process of their own; one "
        "client, one request at a time, the three kinds alternating.",
        "",
        *lines,
    ]
    append_entry(path, HEADING, entry)


def main() -> int:
    if sys.argv[1:2] == ["--child-serve"]:
        onnx, port, address, service = sys.argv[2:6]
        child_serve(onnx, int(port), address, service)
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 16], help="entity ids per request")
    parser.add_argument("--requests", type=int, default=500, help="requests of each kind per row count")
    parser.add_argument("--customers", type=int, default=1000, help="ids in the online store")
    parser.add_argument(
        "--online-store",
        default="sqlite",
        help="sqlite, or postgresql://USER@HOST:PORT/DB?sslmode=disable (as mlops features init --online-store)",
    )
    parser.add_argument(
        "--write-results", action="store_true", help="append the table to benchmarks/RESULTS.md"
    )
    args = parser.parse_args()
    command = "PYTHONPATH=$PWD .venv/bin/python -m benchmarks.feature_lookup " + " ".join(sys.argv[1:])
    before = load_average()
    with tempfile.TemporaryDirectory(prefix="bench-entity-") as tmp:
        results = measure(args, Path(tmp))
    after = load_average()
    lines = report(results)
    print("\n".join(lines))
    print(f"load average before {before}, after {after}")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "feature_lookup.json").write_text(
        json.dumps({"results": results, "loads": [before, after]}, indent=2)
    )
    if args.write_results:
        write_results(REPO / "benchmarks" / "RESULTS.md", command, lines, (before, after), args)
        print("appended to benchmarks/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
