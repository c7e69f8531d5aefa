"""Options that several local-run commands share, parsed and checked the same way."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_data_and_overrides(parser: argparse.ArgumentParser, set_help: str) -> None:
    parser.add_argument(
        "--data", default="", help="CSV or Parquet path or s3:// URI (default: generated sample)"
    )
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help=set_help
    )


def resolve_data(data: str) -> str:
    """An absolute path for a local file (tasks run elsewhere), an s3:// URI as is, '' for the sample."""
    if not data or data.startswith("s3://"):
        return data
    path = Path(data).expanduser().resolve()
    if not path.is_file():
        raise ValueError(f"--data {data}: no such file ({path}); pass a CSV/Parquet path or s3:// URI")
    return str(path)
