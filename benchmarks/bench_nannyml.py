"""The label-free performance estimate against NannyML 0.13's CBPE: error vs the realised AUC, bands, speed.

Setup (not timed): a logistic-regression model fitted on the sample generator's rows (the
estimate's maths, not the model, is under test); a labelled reference of ``--reference-rows``
rows scored by it. Ours is fitted as at registration (:func:`mlops.model.reference_profile.build_profile`:
the isotonic calibration map and the score histogram), and beside it (``ours_histogram_map``) the
10-bin histogram map that profiles held before; NannyML's ``CBPE`` is fitted on the
same reference (its own isotonic calibration).

Windows: ``--windows`` windows of ``--rows`` rows each, cycling through the generator's drift
settings (``data.sample.drift`` 0, 0.5, 1, 2: undrifted and drifted) with a fresh seed each. Per
window, the realised ROC AUC and accuracy on its labels, our estimate with its band
(:mod:`mlops.monitoring.performance_bands`) and NannyML's estimate with its band (one chunk
holding the whole window). Reported: mean and 90th-percentile absolute error vs the realised AUC
and accuracy, each band's coverage of the realised figure, and the time per window to estimate
(ours: binning the scores into the window summary, the estimate and its bootstrap band; NannyML:
``estimate`` on the window; fitting is timed apart).

NannyML pins libraries that clash with the platform's, so it runs in its own environment, a child
process of this script reading the same rows from Parquet:

    python3.11 -m venv ~/.cache/mlops/nannyml-venv
    ~/.cache/mlops/nannyml-venv/bin/pip install nannyml==0.13.1
    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_nannyml.py --windows 200 --rows 5000

``--nannyml-child DIR`` is the child's entry point (only pandas and nannyml are imported there).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

DRIFTS = (0.0, 0.5, 1.0, 2.0)
DEFAULT_VENV = Path("~/.cache/mlops/nannyml-venv").expanduser()


def nannyml_child(directory: Path) -> None:
    """Runs in NannyML's environment: fit CBPE on the reference, estimate each window, write JSON."""
    import nannyml as nml
    import pandas as pd

    reference = pd.read_parquet(directory / "reference.parquet")
    windows = pd.read_parquet(directory / "windows.parquet")
    rows_per_window = len(windows) // windows["window"].nunique()  # every window has the same size
    started = time.perf_counter()
    estimator = nml.CBPE(
        y_pred_proba="y_pred_proba",
        y_pred="y_pred",
        y_true="y_true",
        problem_type="classification_binary",
        metrics=["roc_auc", "accuracy"],
        chunk_size=rows_per_window,
    )
    estimator.fit(reference)
    fit_s = time.perf_counter() - started
    out = []
    for window, rows in windows.groupby("window"):
        frame = rows.drop(columns=["window", "y_true"]).reset_index(drop=True)
        started = time.perf_counter()
        result = estimator.estimate(frame).filter(period="analysis").to_df()
        seconds = time.perf_counter() - started
        figures: dict[str, Any] = {"window": int(str(window)), "seconds": seconds}
        for metric in ("roc_auc", "accuracy"):
            figures[metric] = float(result[(metric, "value")].iloc[0])
            figures[f"{metric}_low"] = float(result[(metric, "lower_confidence_boundary")].iloc[0])
            figures[f"{metric}_high"] = float(result[(metric, "upper_confidence_boundary")].iloc[0])
        out.append(figures)
    (directory / "nannyml.json").write_text(json.dumps({"fit_s": fit_s, "windows": out}))


def model_and_reference(reference_rows: int) -> tuple[Any, Any, Any, np.ndarray, np.ndarray]:
    from sklearn.linear_model import LogisticRegression

    from mlops.data.features import FeatureSpec
    from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate

    train = generate(SampleDataConfig(rows=20_000, seed=1))
    spec = FeatureSpec.fit(train, SAMPLE_SCHEMA)
    x = np.nan_to_num(spec.encode(train).astype(np.float64))
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
    model = LogisticRegression(max_iter=500).fit((x - mean) / std, train[SAMPLE_SCHEMA.label].to_numpy())

    def score(frame: Any) -> np.ndarray:
        encoded = np.nan_to_num(spec.encode(frame).astype(np.float64))
        return model.predict_proba((encoded - mean) / std)[:, 1]

    reference = generate(SampleDataConfig(rows=reference_rows, seed=2))
    labels = reference[SAMPLE_SCHEMA.label].to_numpy().astype(int)
    return score, spec, reference, score(reference), labels


def ours(profile: Any, scores: np.ndarray, samples: int) -> tuple[dict[str, Any], float]:
    from mlops.monitoring.performance_bands import estimated_bands
    from mlops.monitoring.performance_estimate import estimate_performance
    from mlops.monitoring.request_window import Calibrator, WindowScoreBins

    started = time.perf_counter()
    calibrate = Calibrator(profile.calibration)
    summary = WindowScoreBins()
    summary.add(scores, calibrate(scores), calibrate.bin_of(scores))
    estimate = estimate_performance(summary)
    bands = estimated_bands(summary, estimate, profile.calibration, profile.score, 0.95, samples)
    seconds = time.perf_counter() - started
    figures = {}
    for metric, band in bands.items():
        figures.update({metric: band.value, f"{metric}_low": band.low, f"{metric}_high": band.high})
    return figures, seconds


def summarise(rows: list[dict[str, Any]], who: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for metric in ("roc_auc", "accuracy"):
        errors = np.array([abs(r[who][metric] - r["realised"][metric]) for r in rows])
        covered = [r[who][f"{metric}_low"] <= r["realised"][metric] <= r[who][f"{metric}_high"] for r in rows]
        out[f"{metric}_mean_abs_error"] = float(errors.mean())
        out[f"{metric}_p90_abs_error"] = float(np.quantile(errors, 0.9))
        out[f"{metric}_band_coverage"] = float(np.mean(covered))
    seconds = np.array([r[who]["seconds"] for r in rows])
    out["median_ms_per_window"] = float(np.median(seconds) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--windows", type=int, default=200)
    parser.add_argument("--rows", type=int, default=5000, help="rows per window")
    parser.add_argument("--reference-rows", type=int, default=5000)
    parser.add_argument("--bootstrap-samples", type=int, default=200)
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="NannyML's environment")
    parser.add_argument("--nannyml-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.nannyml_child:
        nannyml_child(args.nannyml_child)
        return
    python = args.venv / "bin" / "python"
    if not python.exists():
        sys.exit(
            f"NannyML's environment {args.venv} is missing; create it with: python3.11 -m venv {args.venv} && "
            f"{args.venv}/bin/pip install nannyml==0.13.1"
        )

    import pandas as pd
    from sklearn.metrics import roc_auc_score

    from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
    from mlops.model.reference_profile import build_profile, calibration

    score, spec, reference, reference_scores, reference_labels = model_and_reference(args.reference_rows)
    profile = build_profile(reference, spec, reference_scores, reference_labels)
    # the 10-bin histogram map profiles held before the isotonic map, on the same reference (comparison)
    histogram = profile.model_copy(update={"calibration": calibration(reference_scores, reference_labels)})
    rows: list[dict[str, Any]] = []
    parts = []
    for window in range(args.windows):
        drift = DRIFTS[window % len(DRIFTS)]
        frame = generate(SampleDataConfig(rows=args.rows, seed=1000 + window, drift=drift))
        scores, labels = score(frame), frame[SAMPLE_SCHEMA.label].to_numpy().astype(int)
        estimate, seconds = ours(profile, scores, args.bootstrap_samples)
        old, old_seconds = ours(histogram, scores, args.bootstrap_samples)
        rows.append(
            {
                "window": window,
                "drift": drift,
                "realised": {
                    "roc_auc": float(roc_auc_score(labels, scores)),
                    "accuracy": float(((scores >= 0.5) == labels).mean()),
                },
                "ours": {**estimate, "seconds": seconds},
                "ours_histogram_map": {**old, "seconds": old_seconds},
            }
        )
        parts.append(
            pd.DataFrame(
                {
                    "window": window,
                    "y_pred_proba": scores,
                    "y_pred": (scores >= 0.5).astype(int),
                    "y_true": labels,
                }
            )
        )
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        pd.DataFrame(
            {
                "y_pred_proba": reference_scores,
                "y_pred": (reference_scores >= 0.5).astype(int),
                "y_true": reference_labels,
            }
        ).to_parquet(folder / "reference.parquet")
        pd.concat(parts, ignore_index=True).to_parquet(folder / "windows.parquet")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["NML_DISABLE_USAGE_LOGGING"] = "1"  # NannyML otherwise posts usage analytics on every call
        subprocess.run([str(python), __file__, "--nannyml-child", str(folder)], check=True, env=env)
        theirs = json.loads((folder / "nannyml.json").read_text())
    for row, figures in zip(rows, theirs["windows"], strict=True):
        row["nannyml"] = figures
    report = {
        "windows": args.windows,
        "rows_per_window": args.rows,
        "reference_rows": args.reference_rows,
        "ours": summarise(rows, "ours"),
        "ours_histogram_map": summarise(rows, "ours_histogram_map"),
        "nannyml": {**summarise(rows, "nannyml"), "fit_s": theirs["fit_s"]},
        "by_drift": {
            str(drift): {
                who: summarise([r for r in rows if r["drift"] == drift], who)["roc_auc_mean_abs_error"]
                for who in ("ours", "ours_histogram_map", "nannyml")
            }
            for drift in DRIFTS
        },
    }
    report["speedup"] = report["nannyml"]["median_ms_per_window"] / max(
        report["ours"]["median_ms_per_window"], 1e-9
    )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
