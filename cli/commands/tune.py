"""``mlops tune``: the tuning pipeline alone — an alias of ``mlops run tuning`` (see ``cli.ALIASES``)."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Listed in ``mlops --help``; ``cli.expand_aliases`` turns ``tune …`` into ``run tuning …`` first."""
    subparsers.add_parser(
        "tune", help="tune hyperparameters (= mlops run tuning): parallel Optuna trials sharing one study"
    )
