"""Every command's and subcommand's ``--help`` renders as text: argparse formats help with ``%``, so a
literal ``%`` in a help text that comes from a config's description (``a 5 % step``) must be doubled, or
``--help`` prints argparse's internals (or raises) instead of the text."""

from __future__ import annotations

import argparse

import pytest

from cli.main import build_parser


def _parsers(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found += _parsers(child, f"{path} {name}")
    return found


PARSERS = _parsers(build_parser(), "mlops")


def test_the_walk_reaches_nested_subcommands() -> None:
    paths = {path for path, _ in PARSERS}
    assert {"mlops rollout start", "mlops features init", "mlops data init"} <= paths


@pytest.mark.parametrize(("path", "parser"), PARSERS, ids=[path for path, _ in PARSERS])
def test_help_renders_every_help_text(path: str, parser: argparse.ArgumentParser) -> None:
    text = parser.format_help()
    assert "{'option_strings'" not in text, f"{path} --help shows argparse's internals"
    for action in parser._actions:
        if action.help and action.help is not argparse.SUPPRESS:
            words = " ".join(action.help.replace("%%", "%").split()[:3])
            if "%(" not in words:
                assert " ".join(words.split()) in " ".join(text.split()), (
                    f"{path}: help of {action.dest} missing"
                )


def test_a_percent_in_a_rollout_description_shows_as_written() -> None:
    (parser,) = [parser for path, parser in PARSERS if path == "mlops rollout start"]
    assert "a 5 % step" in " ".join(parser.format_help().split())
