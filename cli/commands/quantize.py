"""``mlops quantize``: quantise a registered model to INT8 behind an AUC-parity gate.

Quantise models:/<model-name>/<source> dynamically to INT8; register the result as a new version
(tags mlops.quantized_from, mlops.precision=int8) or write it with --out. Refused when the held-out
AUC drops by more than --max-auc-drop.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.commands.options import add_model_name_option
from mlops.workspace import Workspace

# Not the training pipeline's default seed (0), so the default held-out rows are unseen by a sample-trained model.
HOLDOUT_SEED = 20_240
HOLDOUT_ROWS = 4000


HELP = "quantise a registered model to INT8 behind an AUC-parity gate"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("quantize", help=HELP, description=__doc__.split("\n\n", 1)[1])
    add_model_name_option(parser)
    parser.add_argument(
        "--source", default="champion", help="version number or alias to quantise (default %(default)s)"
    )
    parser.add_argument(
        "--data",
        default="",
        help="labelled held-out CSV/Parquet (path or s3://) for the parity gate; default: a freshly generated "
        "sample (only meaningful for models trained on the built-in sample)",
    )
    parser.add_argument(
        "--label-column", default="default", help="label column in --data (default %(default)s)"
    )
    parser.add_argument(
        "--max-auc-drop", type=float, default=0.005, help="allowed AUC loss (default %(default)s)"
    )
    parser.add_argument("--weight-type", choices=["int8", "uint8"], default="int8")
    parser.add_argument("--per-channel", action="store_true", help="one weight scale per output channel")
    parser.add_argument(
        "--out", type=Path, default=None, help="write the INT8 model.onnx here instead of registering"
    )
    parser.add_argument("--tracking-uri", default=None, help="MLflow store (default: the workspace's)")
    parser.add_argument("--experiment", default="quantize", help="MLflow experiment of the quantize run")
    parser.set_defaults(handler=quantize_command)


def quantize_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.model_choice import workspace_model
    from components.quantize.int8 import quantize_registered
    from components.quantize.quantizer import QuantizationRejected, QuantizeConfig
    from mlops.data.dataset import load_table
    from mlops.data.sample_data import SampleDataConfig, generate
    from mlops.tracking.store import TrackingStore

    tracking_uri = args.tracking_uri or workspace.tracking_uri
    if tracking_uri == workspace.tracking_uri and not workspace.tracking_db.is_file():
        raise ValueError(
            f"workspace {workspace.root} has no MLflow store ({workspace.tracking_db}); "
            "run `mlops run training` first or pass --workspace / --tracking-uri"
        )
    args.model_name = workspace_model(args.model_name, tracking_uri)
    config = QuantizeConfig(
        max_auc_drop=args.max_auc_drop, weight_type=args.weight_type, per_channel=args.per_channel
    )
    if args.data:
        holdout, _ = load_table(args.data)
    else:
        print(f"no --data: judging on {HOLDOUT_ROWS} generated sample rows (seed {HOLDOUT_SEED})")
        holdout = generate(SampleDataConfig(rows=HOLDOUT_ROWS, seed=HOLDOUT_SEED))
    store = TrackingStore.from_uri(
        tracking_uri, experiment=args.experiment, artifact_root=workspace.artifact_root
    )
    try:
        result = quantize_registered(
            store,
            args.model_name,
            args.source,
            holdout,
            args.label_column,
            config,
            out_path=args.out,
            register=args.out is None,
        )
    except QuantizationRejected as exc:
        print(f"mlops quantize: {exc}")
        return 1
    print(result.parity.message())
    if not result.version:
        print(f"wrote {result.path} (INT8 of {args.model_name} version {result.source_version})")
    else:
        print(
            f"registered {args.model_name} version {result.version} = INT8 of version {result.source_version}; "
            f"roll it out with `mlops rollout start --model-name {args.model_name} --challenger "
            f"{result.version}` (shadow, canary steps, promotion) or `mlops serve --alias <alias>`"
        )
    return 0
