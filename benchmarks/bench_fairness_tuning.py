"""Fairness-aware tuning on the sample with its bias knob on: which trial each selection hands on,
and what the real fairness gate says about it.

    PYTHONPATH=$PWD python -m benchmarks.bench_fairness_tuning --bias 1.5 --rows 4000

One multi-objective study (``tune.objectives [val_auc, fairness_gap]``) runs the same fixed set
of configurations (enqueued, so the comparison is about the *selection*, not the sampler's luck);
single-objective tuning would hand on the highest validation AUC among the same trials, the
multi-objective rule the highest AUC within ``tune.max_fairness_gap``. Both configurations are
trained again and judged by the model-validation gate's fairness check
(``components.model_validation.fairness.evaluate_fairness``, default policy: bootstrap
intervals) on the held-out test split. Prints a Markdown table; no timings.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

CONFIGS = [  # as Optuna stores them (hidden_units encoded "64,32", as components.tune.space does)
    {"learning_rate": 0.0003, "hidden_units": "64,32", "dropout": 0.0},
    {"learning_rate": 0.001, "hidden_units": "64,32", "dropout": 0.2},
    {"learning_rate": 0.003, "hidden_units": "64,32", "dropout": 0.0},
    {"learning_rate": 0.01, "hidden_units": "128,64", "dropout": 0.0},
    {"learning_rate": 0.03, "hidden_units": "128,64", "dropout": 0.1},
    {"learning_rate": 0.03, "hidden_units": "256,128", "dropout": 0.4},
]
SPACE = {
    "learning_rate": {"type": "categorical", "choices": [0.0003, 0.001, 0.003, 0.01, 0.03]},
    "hidden_units": {"type": "categorical", "choices": [[64, 32], [128, 64], [256, 128]]},
    "dropout": {"type": "categorical", "choices": [0.0, 0.1, 0.2, 0.4]},
}


def main() -> None:
    import optuna

    from components.model_validation.config import FairnessPolicy
    from components.model_validation.fairness import evaluate_fairness
    from components.tune.best import select_best
    from components.tune.pareto import NoFairTrial
    from components.tune.space import apply
    from components.tune.study import TuneSettings
    from components.tune.study_workers import prepare_study, run_worker
    from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
    from mlops.tracking.store import TrackingStore
    from training.config import ModelConfig, TrainConfig
    from training.onnx_export import torch_probabilities
    from training.trainer import train

    parser = argparse.ArgumentParser()
    parser.add_argument("--bias", type=float, default=1.5)
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--max-gap", type=float, default=0.1)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    frame = generate(SampleDataConfig(rows=args.rows, seed=1, bias=args.bias))
    base = TrainConfig(
        epochs=args.epochs,
        batch_size=128,
        patience=0,
        model=ModelConfig(hidden_units=(64, 32)),
        precision="fp32",
    )
    with tempfile.TemporaryDirectory(prefix="bench-fair-") as tmp:
        root = Path(tmp)
        store = TrackingStore(
            tracking_uri=f"sqlite:///{root}/mlflow.db", experiment="tune", artifact_root=(root / "a").as_uri()
        )
        settings = TuneSettings(
            study_name="fair", trials=len(CONFIGS), workers=1, max_minutes=120,
            objectives=("val_auc", "fairness_gap"), max_fairness_gap=args.max_gap,
        )  # fmt: skip
        storage = f"sqlite:///{root}/optuna.db"
        space_file = root / "space.yaml"  # only these three vary; the default file's others stay at base
        space_file.write_text("parameters: {}\n")
        plan = prepare_study(
            settings, base, storage, store, space_file=str(space_file), space_overrides=SPACE
        )
        study = optuna.load_study(study_name="fair", storage=storage)
        for config in CONFIGS:
            study.enqueue_trial(config)
        run_worker(plan, 0, frame, SAMPLE_SCHEMA, store)
        trials = [t for t in study.get_trials() if t.values]
        try:
            chosen = select_best(plan, store)
        except NoFairTrial as exc:  # the rule refuses: show the trials and say so
            for t in trials:
                print(
                    f"trial {t.number} {t.params}: val AUC {t.values[0]:.4f}, val fairness gap {t.values[1]:.4f}"
                )
            print(f"\nmulti-objective rule: {exc}")
            return
        single = max(trials, key=lambda t: (t.values[0], -t.number))
        front = {t.number for t in study.best_trials}
        print(
            f"sample data: rows {args.rows}, bias {args.bias}; {args.epochs} epochs; tune.max_fairness_gap {args.max_gap}\n"
        )
        print(
            "| trial | learning_rate | hidden_units | dropout | val AUC | val fairness gap | Pareto | picked by |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for t in trials:
            by = [
                n
                for n, num in (("single-objective", single.number), ("multi-objective rule", chosen.number))
                if num == t.number
            ]
            p = t.params
            print(f"| {t.number} | {p['learning_rate']} | {p['hidden_units']} | {p['dropout']} | {t.values[0]:.4f} | "
                  f"{t.values[1]:.4f} | {'yes' if t.number in front else ''} | {', '.join(by)} |")  # fmt: skip
        print(
            "\nThe fairness gate on the held-out test split (default policy: a limit fails only when the whole"
        )
        print(
            "95% interval lies beyond it; and with point estimates, model_validation.fairness.gate_on_intervals=false):\n"
        )
        print(
            "| selection | trial | selection rate female / male | dp difference [interval] | eo difference [interval] | gate (default) | gate (point estimates) |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name, number in (("single-objective", single.number), ("multi-objective rule", chosen.number)):
            params = plan.space.decode(study.trials[number].params)
            result = train(
                frame, SAMPLE_SCHEMA, apply(base, params), root / f"model-{number}"
            )  # as training gets it
            test = result.test_frame
            scores = torch_probabilities(result.model, result.model.spec.encode(test))
            verdicts = []
            for policy in (FairnessPolicy(), FairnessPolicy(gate_on_intervals=False)):
                (fair,) = evaluate_fairness(test, scores, SAMPLE_SCHEMA.label, ["sex"], policy, "negative")
                verdicts.append(
                    "reject: " + "; ".join(v.message for v in fair.violations) if fair.violations else "pass"
                )
            (fair,) = evaluate_fairness(
                test, scores, SAMPLE_SCHEMA.label, ["sex"], FairnessPolicy(), "negative"
            )
            rates = {g.group: g.selection_rate for g in fair.groups}
            ci = fair.intervals
            dp, eo = fair.demographic_parity_difference, fair.equalized_odds_difference
            print(f"| {name} | {number} | {rates.get('female', float('nan')):.3f} / {rates.get('male', float('nan')):.3f} | "
                  f"{dp:.4f} [{ci['demographic_parity_difference'][0]:.3f}, {ci['demographic_parity_difference'][1]:.3f}] | "
                  f"{eo:.4f} [{ci['equalized_odds_difference'][0]:.3f}, {ci['equalized_odds_difference'][1]:.3f}] | "
                  f"{verdicts[0][:120]} | {verdicts[1][:120]} |")  # fmt: skip


if __name__ == "__main__":
    main()
