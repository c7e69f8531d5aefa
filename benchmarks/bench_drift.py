"""Drift check of a large request-log window: the profile-streaming monitor vs Evidently's Report.

Setup (not timed): a 20-feature reference (the sample generator, 20k rows) profiled as at
registration, and a window of ``--rows`` logged rows (data.sample.drift 0.5) written as request-log
Parquet files by the server's own writer, in files of 100k rows.

Timed, in a fresh child process each (so peak RSS is the check's own):
- ours: read every file of the window, bin it into the profile, score every feature,
  prediction drift and the CBPE estimate (``mlops.monitoring``): all rows, no sampling;
- Evidently 0.7 ``Report([DataDriftPreset()])`` on raw reference rows vs the first ``n`` window
  rows, for each ``n`` in ``--evidently-rows`` (stopping after the first that passes ``--evidently-budget-s``).

Accuracy: our normalised Wasserstein per numeric feature vs scipy's on the raw 1M values, and
our Jensen-Shannon vs Evidently's own function on the raw values.

A month from daily summaries (``--month-rows``, 0 skips it): ``--month-days`` days of
``--month-rows`` rows in all (each day the same ``month-rows / month-days`` generated rows at
drift 0.5, logged in files of 100k rows), checked over the whole month three ways, each in a
fresh child: from the raw rows (``logs.summarise``); a first ``mlops monitor``-style check that
reads the raw rows and stores each day's summary (``day_summaries.summarise_window``); and the
same check again, every day now from its stored summary. The last two must give the raw check's
decision and scores (compared; a mismatch fails the benchmark).

    python benchmarks/bench_drift.py --rows 1000000
    python benchmarks/bench_drift.py --rows 100000 --evidently-rows 100000 --month-rows 30000000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

FILE_ROWS = 100_000
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM). Not ru_maxrss: Linux carries that across exec, so a spawned
    child would report its parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def fake_scores(frame: Any) -> np.ndarray:
    """A fixed logistic score of a few features (the benchmark times drift maths, not a model)."""
    z = -0.01 * (frame["credit_score"].fillna(680) - 680) + 2 * (frame["debt_to_income"].fillna(0.3) - 0.3)
    return (1 / (1 + np.exp(-z.to_numpy()))).astype(np.float32)


def setup(directory: Path, rows: int) -> dict[str, Any]:
    from mlops.data.features import FeatureSpec
    from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
    from mlops.model.reference_profile import build_profile
    from serving.request_log import RequestLogger
    from serving.request_log_blocks import Block

    reference = generate(SampleDataConfig(rows=20_000, seed=1))
    spec = FeatureSpec.fit(reference, SAMPLE_SCHEMA)
    profile = build_profile(reference, spec, fake_scores(reference), reference["default"].to_numpy())
    (directory / "profile.json").write_text(profile.to_json())
    reference.to_parquet(directory / "reference.parquet")
    window = generate(SampleDataConfig(rows=rows, seed=2, drift=0.5))
    window.to_parquet(directory / "window.parquet")
    logger = RequestLogger(str(directory / "logs"), "m", 1.0, 60, 10**9)
    at_us = int((T0 + timedelta(hours=1)).timestamp() * 1e6)
    for start in range(0, rows, FILE_ROWS):
        part = window.iloc[start : start + FILE_ROWS]
        block = Block("1", spec, len(part))
        block.add(spec.encode(part), fake_scores(part), at_us, "r")
        logger.write([block])
    return {"features": list(spec.names), "numeric": list(spec.numeric)}


def check_ours(directory: str) -> dict[str, Any]:
    begun = time.perf_counter()
    import pyarrow.compute  # noqa: F401  - imports timed apart, as for Evidently
    import pyarrow.parquet  # noqa: F401
    import scipy.spatial  # noqa: F401

    from mlops.model.reference_profile import ReferenceProfile
    from mlops.monitoring.drift_settings import DriftSettings
    from mlops.monitoring.judge import judge
    from mlops.monitoring.logs import summarise
    from mlops.monitoring.request_window import Calibrator, empty_summary

    started, cpu = time.perf_counter(), cpu_s()
    profile = ReferenceProfile.from_json((Path(directory) / "profile.json").read_text())
    summary = empty_summary(profile, T0, T0 + timedelta(days=1), "1")
    summarise(str(Path(directory) / "logs"), "m", summary, profile, Calibrator(profile.calibration))
    result = judge("m", profile, summary, DriftSettings())
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "cpu_s": cpu_s() - cpu,
        "import_s": started - begun,
        "rows": summary.rows,
        "scores": {f.name: f.score for f in result.features},
        "drifted": result.drifted_features,
        "peak_rss_mb": peak_rss_mb(),
    }


def setup_month(directory: Path, rows: int, days: int) -> None:
    from mlops.data.features import FeatureSpec
    from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
    from serving.request_log import RequestLogger
    from serving.request_log_blocks import Block

    reference = generate(SampleDataConfig(rows=20_000, seed=1))
    spec = FeatureSpec.fit(reference, SAMPLE_SCHEMA)
    day_rows = max(rows // days, 1)
    frame = generate(SampleDataConfig(rows=day_rows, seed=3, drift=0.5))
    encoded, scores = spec.encode(frame), fake_scores(frame)
    logger = RequestLogger(str(directory / "month"), "m", 1.0, 60, 10**9)
    for day in range(days):
        at_us = int((T0 + timedelta(days=day, hours=1)).timestamp() * 1e6)
        for start in range(0, day_rows, FILE_ROWS):
            block = Block("1", spec, min(FILE_ROWS, day_rows - start))
            block.add(encoded[start : start + FILE_ROWS], scores[start : start + FILE_ROWS], at_us, "r")
            logger.write([block])


def check_month(directory: str, days: int, mode: str) -> dict[str, Any]:
    """One check of the whole month: ``raw`` rows only, or through the daily summaries (``summaries``)."""
    import pyarrow.parquet  # noqa: F401
    import scipy.spatial  # noqa: F401

    from mlops.model.reference_profile import ReferenceProfile
    from mlops.monitoring.day_summaries import summarise_window
    from mlops.monitoring.drift_settings import DriftSettings
    from mlops.monitoring.judge import judge
    from mlops.monitoring.logs import summarise
    from mlops.monitoring.request_window import Calibrator, empty_summary

    started, cpu = time.perf_counter(), cpu_s()
    profile = ReferenceProfile.from_json((Path(directory) / "profile.json").read_text())
    end = T0 + timedelta(days=days)
    summary = empty_summary(profile, T0, end, "1")
    root = str(Path(directory) / "month")
    if mode == "raw":
        summarise(root, "m", summary, profile, Calibrator(profile.calibration))
    else:
        summarise_window(
            root, "m", summary, profile, Calibrator(profile.calibration), end + timedelta(days=1)
        )
    result = judge("m", profile, summary, DriftSettings())
    return {
        "seconds": time.perf_counter() - started,
        "cpu_s": cpu_s() - cpu,
        "rows": summary.rows,
        "rows_from_summaries": summary.summarised_rows,
        "days_from_summaries": len(summary.summarised_days),
        "scores": {f.name: f.score for f in result.features},
        "prediction_score": result.prediction_score,
        "estimated": result.estimated,
        "decision": result.decision,
        "drifted": result.drifted_features,
        "peak_rss_mb": peak_rss_mb(),
    }


def month(directory: Path, rows: int, days: int) -> dict[str, Any]:
    t = time.perf_counter()
    setup_month(directory, rows, days)
    print(f"month setup: {rows} rows over {days} days in {time.perf_counter() - t:.0f} s")
    runs = {
        "raw": in_child(check_month, str(directory), days, "raw"),
        "first_check_stores_days": in_child(check_month, str(directory), days, "summaries"),
        "from_summaries": in_child(check_month, str(directory), days, "summaries"),
    }
    raw = runs["raw"]
    for name, run in runs.items():
        print(
            f"month {name}: {run['rows']} rows ({run['rows_from_summaries']} from {run['days_from_summaries']} "
            f"stored days) in {run['seconds']:.2f} s wall, {run['cpu_s']:.2f} s CPU, peak RSS "
            f"{run['peak_rss_mb']:.0f} MB; decision {run['decision']}"
        )
        same = (
            run["rows"] == raw["rows"]
            and run["decision"] == raw["decision"]
            and run["drifted"] == raw["drifted"]
            and all(np.isclose(run["scores"][k], v, rtol=1e-9, atol=1e-12) for k, v in raw["scores"].items())
            and np.isclose(run["prediction_score"], raw["prediction_score"], rtol=1e-9)
            and all(np.isclose(run["estimated"][k], v, rtol=1e-9) for k, v in raw["estimated"].items())
        )
        if not same:
            raise SystemExit(f"month {name} differs from the raw check: {run} vs {raw}")
    if runs["from_summaries"]["days_from_summaries"] != days:
        raise SystemExit(
            f"the second check used {runs['from_summaries']['days_from_summaries']} of {days} days"
        )
    print("month: decisions and scores equal to the raw check's (rtol 1e-9)")
    return runs


def check_evidently(directory: str, rows: int) -> dict[str, Any]:
    import pandas as pd

    started = time.perf_counter()
    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    imported = time.perf_counter()
    reference = pd.read_parquet(Path(directory) / "reference.parquet").drop(columns=["default", "sex"])
    current = pd.read_parquet(Path(directory) / "window.parquet").drop(columns=["default", "sex"]).head(rows)
    numeric = [c for c in reference.columns if reference[c].dtype.kind == "f"]
    categorical = [c for c in reference.columns if c not in numeric]
    definition = DataDefinition(numerical_columns=numeric, categorical_columns=categorical)
    loaded, cpu = time.perf_counter(), cpu_s()
    snapshot = Report([DataDriftPreset()]).run(
        current_data=Dataset.from_pandas(current, data_definition=definition),
        reference_data=Dataset.from_pandas(reference, data_definition=definition),
    )
    snapshot.dict()
    done = time.perf_counter()
    return {
        "rows": rows,
        "seconds": done - loaded,
        "cpu_s": cpu_s() - cpu,
        "import_s": imported - started,
        "peak_rss_mb": peak_rss_mb(),
    }


def in_child(function: Any, *args: Any, timeout: float = 1800) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        return dict(pool.apply_async(function, args).get(timeout=timeout))


def accuracy(
    directory: Path, ours: dict[str, float], numeric: list[str], categorical: list[str]
) -> dict[str, Any]:
    import pandas as pd
    from evidently.legacy.calculations.stattests.jensenshannon import _jensenshannon
    from evidently.legacy.core import ColumnType
    from scipy import stats

    reference = pd.read_parquet(directory / "reference.parquet")
    window = pd.read_parquet(directory / "window.parquet")
    errors = {}
    for name in numeric:
        a, b = reference[name].dropna().to_numpy(), window[name].dropna().to_numpy()
        if a.std() == 0 or len(np.unique(a)) <= 5:
            continue
        exact = stats.wasserstein_distance(a, b) / max(a.std(), 0.001)
        errors[name] = (ours[name], exact)
    js = {}
    for name in categorical:
        exact, _ = _jensenshannon(
            reference[name].dropna(), window[name].dropna(), ColumnType.Categorical, 0.1
        )
        js[name] = (ours[name], float(exact))
    return {"wasserstein": errors, "jensenshannon": js}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--evidently-rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--evidently-budget-s", type=float, default=600)
    parser.add_argument("--month-rows", type=int, default=0, help="rows of the month window (0: skip it)")
    parser.add_argument("--month-days", type=int, default=30)
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{v:.1f}' for v in __import__('os').getloadavg())}")

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        t = time.perf_counter()
        names = setup(directory, args.rows)
        print(
            f"setup: {args.rows} rows x {len(names['features'])} features in {time.perf_counter() - t:.0f} s"
        )
        ours = in_child(check_ours, str(directory))
        print(
            f"ours: {ours['rows']} rows in {ours['seconds']:.2f} s wall, {ours['cpu_s']:.2f} s CPU "
            f"(+{ours['import_s']:.1f} s import), peak RSS {ours['peak_rss_mb']:.0f} MB"
        )
        evidently = []
        for rows in args.evidently_rows:
            try:
                run = in_child(
                    check_evidently, str(directory), min(rows, args.rows), timeout=args.evidently_budget_s
                )
            except multiprocessing.TimeoutError:
                print(f"evidently: {rows} rows did not finish within {args.evidently_budget_s:.0f} s")
                evidently.append({"rows": rows, "seconds": None})
                break
            evidently.append(run)
            print(
                f"evidently: {run['rows']} rows in {run['seconds']:.2f} s (+{run['import_s']:.1f} s import), "
                f"peak RSS {run['peak_rss_mb']:.0f} MB"
            )
        numeric = names["numeric"]
        errors = accuracy(
            directory, ours["scores"], numeric, [n for n in names["features"] if n not in numeric]
        )
    worst_w = max(abs(a - b) for a, b in errors["wasserstein"].values())
    worst_js = max(abs(a - b) for a, b in errors["jensenshannon"].values())
    print(
        f"max |ours - scipy| Wasserstein (normalised): {worst_w:.2e}; max |ours - Evidently| JS: {worst_js:.2e}"
    )
    print(f"drifted: {ours['drifted']}")
    months = {}
    if args.month_rows:
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            setup(directory, 1000)  # the profile (the window it writes is not read)
            months = month(directory, args.month_rows, args.month_days)
    print(f"load average at end: {' '.join(f'{v:.1f}' for v in __import__('os').getloadavg())}")
    if args.out:
        figures = {"ours": ours, "evidently": evidently, "errors": errors, "month": months}
        args.out.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
