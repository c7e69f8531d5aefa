"""``mlops run <pipeline> --help`` lists the run's own options (``-v``, ``--cache``, ``--runner``) beside the
pipeline's settings, the same text ``mlops run --help`` shows, and they work on either side of the name."""

import argparse

import pytest

from cli.commands.run import RUN_OPTIONS_TITLE, RUNNERS, add_run_options, take_flag, take_option
from cli.main import main
from pipelines.catalog import PIPELINE_NAMES


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def _option_lines() -> list[str]:
    """How each run option is listed (flags and the first words of its help), from the one definition."""
    parser = argparse.ArgumentParser(prog="x", add_help=False)
    add_run_options(parser)
    return [" ".join(action.option_strings) for action in parser._actions]


@pytest.mark.parametrize("pipeline", PIPELINE_NAMES)
def test_each_pipelines_help_lists_the_run_options(capsys: pytest.CaptureFixture[str], pipeline: str) -> None:
    text = _help(capsys, "run", pipeline)
    assert f"\n{RUN_OPTIONS_TITLE}:\n" in text
    section = text.split(f"\n{RUN_OPTIONS_TITLE}:\n", 1)[1].split("\n\n", 2)[
        1
    ]  # past the group's description
    for flags in ("-v, --verbose", "--cache", f"--runner {{{','.join(RUNNERS)}}}"):
        assert flags in section, section
    assert "stream every step's raw output" in section and "kfp.local's step cache" in section
    assert text.startswith(f"usage: mlops run {pipeline} [-v] [--cache] [--runner")


def test_the_run_help_and_each_pipelines_help_say_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    general = " ".join(_help(capsys, "run").split())
    specific = " ".join(_help(capsys, "run", "training").split())
    assert _option_lines() == ["-v --verbose", "--cache", "--runner", "--cold-steps"]
    for text in (general, specific):
        assert "reuse the outputs of steps whose inputs, code and named files did not change" in text
        assert "where each step runs: 'subprocess' (this environment, the default) or 'docker'" in text
        assert "--cold-steps with the subprocess runner, start each step in a new interpreter" in text


def test_the_run_options_are_taken_after_the_pipelines_name_too() -> None:
    argv = ["--set", "train.epochs=2", "-v", "--runner=docker", "--cache", "--cold-steps"]
    assert (
        take_flag(argv, "-v", "--verbose") and take_flag(argv, "--cache") and take_flag(argv, "--cold-steps")
    )
    assert take_option(argv, "--runner", RUNNERS) == "docker"
    assert argv == ["--set", "train.epochs=2"]
