"""Command-line options made from a pipeline's settings: one flag per setting, named by its address.

``mlops run <pipeline> --help`` lists every setting under its section's heading (one
argparse group per section), with its default and description, read from the pipeline's
form (which the stage configs produced), so the command line, the KFP UI form and the
compiled YAML say the same thing. ``--train.epochs 5`` and ``--set train.epochs=5`` are
the same; so is ``--train.batch-size`` for ``--train.batch_size``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.parameters import coerce, describe_sections, find_setting, metavar, shown

if TYPE_CHECKING:
    from mlops.workspace import Workspace
    from pipelines.signature import PipelineForm

SHORT_SPELLINGS = {
    "--data": "data.uri",
    "--schema": "validation.schema_uri",
    "--features": "data.features.service",
}
"""Short, documented spellings: ``--data`` for the dataset, ``--schema`` for the file ``mlops data init``
writes, ``--features`` for the feature service ``--data``'s entity table is joined with."""
DEST_PREFIX = "setting:"


class SettingsHelpFormatter(argparse.HelpFormatter):
    """Wraps help text between words only, so a default (a URL, a name with dashes) stays copyable."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(
            " ".join(text.split()), width, break_on_hyphens=False, break_long_words=False
        ) or [""]


def add_setting_flags(parser: argparse.ArgumentParser, form: PipelineForm) -> None:
    """One ``--<address>`` per setting, grouped by section, plus ``--set`` and the short spellings."""
    groups = {
        section: parser.add_argument_group(
            f"{section} settings", f"{summary} (--{section}.FIELD VALUE, or --set {section}.FIELD=VALUE)"
        )
        for section, summary in describe_sections(form)
    }
    for setting in form.settings:
        flags = [f"--{setting.address}"]
        flags += [short for short, address in SHORT_SPELLINGS.items() if address == setting.address]
        per_run = "; per run: its own field on the KFP form" if setting.per_run else ""
        help_text = f"{setting.description or setting.address} (default: {shown(setting.default)}{per_run})"
        groups[setting.section].add_argument(
            *flags,
            dest=DEST_PREFIX + setting.address,
            default=None,
            metavar=metavar(setting),
            help=help_text.replace("%", "%%"),
        )
        dashed = f"--{setting.address.replace('_', '-')}"
        if dashed != flags[0]:  # the dashed spelling is accepted, not listed twice
            parser.add_argument(
                dashed, dest=DEST_PREFIX + setting.address, default=None, help=argparse.SUPPRESS
            )
    add_set_option(
        parser,
        "set a setting by its address (repeatable): section.field=value; lists as a,b or JSON; "
        "a whole section as section='{\"field\": value}'",
    )


def add_set_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--set SECTION.FIELD=VALUE`` (repeatable) into ``args.overrides``: one spelling for local and remote runs."""
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="SECTION.FIELD=VALUE", help=help_text
    )


def add_registry_option(parser: argparse.ArgumentParser) -> None:
    """``--tracking-uri``: the registry a command reads a model's versions from (``args.tracking_uri``)."""
    parser.add_argument(
        "--tracking-uri", default="", help="registry (default: $MLFLOW_TRACKING_URI, else the workspace)"
    )


def add_model_name_option(parser: argparse.ArgumentParser, setting: str = "") -> None:
    """``--model-name``: the registered model a command acts on (``args.model_name``; None: the workspace's,
    which :func:`cli.model_choice.workspace_model` finds), declared once so every command that takes it says
    the same. ``setting``: the pipeline setting the flag stands for, named in the help."""
    stands_for = f"= {setting}; " if setting else ""
    parser.add_argument(
        "--model-name",
        default=None,
        help=f"registered model ({stands_for}default: the workspace's, when its registry holds exactly one)",
    )


FEATURE_REPO_DIR = "features"
"""The feature repository's folder in the workspace, where ``mlops features init`` writes it (a flag made by
:func:`add_feature_repo_option` names another)."""


def add_feature_repo_option(
    parser: argparse.ArgumentParser, flag: str = "--feature-repo", role: str = "the feature repository"
) -> None:
    """The folder of a Feast feature repository (``--feature-repo``; ``--repo`` in ``mlops features``), read
    with :func:`feature_repo_path`, so the commands that build, join from or serve a repository find the same
    one by default. ``role``: what the command does with it, said before the default."""
    parser.add_argument(
        flag, type=Path, default=None, help=f"{role} (default <workspace>/{FEATURE_REPO_DIR})"
    )


def feature_repo_path(given: str | Path | None, workspace: Workspace) -> Path:
    """The feature repository a flag names, made absolute (tasks run elsewhere), else the workspace's."""
    if given is None or not str(given).strip():
        return workspace.root / FEATURE_REPO_DIR
    return Path(given).expanduser().resolve()


def add_entity_table_options(parser: argparse.ArgumentParser, contents: str, needed_with: str = "") -> None:
    """``--entities`` and ``--timestamp``: the entity table a point-in-time join with a feature service starts
    from, and its time column (``args.entities``, ``args.timestamp``). ``mlops features training-set`` joins
    one into a training set and ``mlops score --features`` into the rows it scores: one spelling for both.

    ``contents``: what the table holds for this command. ``needed_with``: the flag that asks for the table in a
    command that also works without one (the table is then optional, its help says when it counts);
    otherwise ``--entities`` is required.
    """
    condition = f"with {needed_with}: " if needed_with else ""
    parser.add_argument(
        "--entities",
        required=not needed_with,
        default=None,
        help=f"{condition}the entity table: CSV or Parquet ({contents})",
    )
    parser.add_argument(
        "--timestamp", default="event_timestamp", help=f"{condition}the entity table's time column"
    )


def flag_values(args: argparse.Namespace, form: PipelineForm) -> dict[str, Any]:
    """The settings given as flags, by address, typed from the pipeline's form."""
    values = {}
    for key, raw in vars(args).items():
        if key.startswith(DEST_PREFIX) and raw is not None:
            address = key.removeprefix(DEST_PREFIX)
            values[address] = coerce(find_setting(form, address), raw, flag=True)
    return values


def resolve_files(given: dict[str, Any], file_settings: set[str]) -> dict[str, Any]:
    """Settings that name a file (by address), made absolute (tasks run elsewhere) and checked before
    anything runs.

    An ``s3://`` URI passes as is; an empty value keeps its meaning (the built-in default).
    """
    resolved = {}
    for address in sorted(file_settings & set(given)):
        value = str(given[address]).strip()
        if not value or value.startswith("s3://"):
            resolved[address] = value
            continue
        path = Path(value.removeprefix("file://")).expanduser().resolve()
        if not path.is_file():
            raise ValueError(
                f"{address} {value!r}: no such file ({path}); pass an existing file (or an s3:// URI for data)"
            )
        resolved[address] = str(path)
    return resolved
