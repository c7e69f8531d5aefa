"""``mlops data init``: profile a user's table and write its schema file and expectation suite.

The two files are the data's declaration, meant to be read, edited and versioned with the
data; ``mlops run training --schema FILE`` then validates, trains and gates with them.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from mlops.vocabulary import NAME_PATTERN

if TYPE_CHECKING:
    from components.data_validation.config import ProfileSettings
    from components.data_validation.data_profile import Profile
    from mlops.data.schema_file import SchemaFile
    from mlops.workspace import Workspace

SCHEMA_SUFFIX = ".schema.yaml"
NO_FAIRNESS = (
    "no fairness check: no --protected attributes, so no favourable_class is written (which label class "
    "benefits a person only you know); to check fairness, add protected_attributes and favourable_class: "
    "positive|negative to the schema file, or re-run with --protected COLUMNS --favourable positive|negative"
)
"""Said on the console and in the schema file when ``data init`` declares no fairness check."""
SUITE_SUFFIX = ".suite.json"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "data",
        help="declare your own data: `mlops data init` writes its schema file and expectation suite",
        description="Work with a dataset's declaration (schema file + Great Expectations suite).",
    )
    commands = parser.add_subparsers(dest="data_command", required=True)
    init = commands.add_parser(
        "init",
        help="profile a CSV/Parquet table and write <name>.schema.yaml and <name>.suite.json",
        description="Profile a table and propose its schema and expectation suite (edit, then version them). "
        "Then: mlops run training --data FILE --schema <name>.schema.yaml",
    )
    init.add_argument("--data", required=True, help="CSV or Parquet file: a local path or s3:// URI")
    init.add_argument("--label", required=True, help="the binary label column")
    init.add_argument(
        "--positive",
        default=None,
        help="the label value of the positive class (needed unless obvious: 1, true, yes)",
    )
    init.add_argument(
        "--protected",
        default="",
        help="protected attributes, comma-separated (fairness only, never features)",
    )
    init.add_argument(
        "--favourable",
        choices=("positive", "negative"),
        default=None,
        help="which label class benefits the person (an approval: positive; a default: negative); "
        "required with --protected",
    )
    init.add_argument(
        "--ignore",
        default="",
        help="columns to leave out, comma-separated (written to the schema file's ignored_columns)",
    )
    init.add_argument(
        "--subject-key",
        default="",
        help="the column that names the person a row is about, e.g. customer_id (written as subject_key and "
        "left out of the features: what `mlops forget --key COLUMN=VALUE` erases by)",
    )
    init.add_argument(
        "--allow-leaks",
        default="",
        help="features flagged as likely leaks that you know are recorded before the outcome, comma-separated "
        "(written to the schema file's allowed_leaks; the training gate does not hold them against the model)",
    )
    add_profile_flags(init)
    init.add_argument("--out", type=Path, default=Path("."), help="directory for the two files (default: .)")
    init.add_argument("--name", default="", help="file and suite name (default: the data file's stem)")
    init.add_argument("--force", action="store_true", help="overwrite existing files")
    init.add_argument(
        "--model-name",
        default="",
        help="registered model this data trains, written into the schema file as model_name "
        "(default: the file name, e.g. adult.csv -> adult)",
    )
    init.set_defaults(handler=init_command)


def add_profile_flags(parser: argparse.ArgumentParser) -> None:
    """One ``--profile.FIELD VALUE`` per profiling setting (``ProfileSettings``), its docstring as help."""
    from components.data_validation.config import ProfileSettings

    for name, info in ProfileSettings.model_fields.items():
        parser.add_argument(
            f"--profile.{name}",
            dest=f"profile_{name}",
            type=info.annotation,  # type: ignore[arg-type]
            default=None,
            metavar=str(getattr(info.annotation, "__name__", "VALUE")).upper(),
            help=f"{info.description} (default: {info.default})".replace("%", "%%"),
        )


def profile_settings(args: argparse.Namespace) -> ProfileSettings:
    """The profiling settings given as flags, validated (a leak threshold of 2 is refused, naming it)."""
    from pydantic import ValidationError

    from components.data_validation.config import ProfileSettings

    given = {
        name: getattr(args, f"profile_{name}")
        for name in ProfileSettings.model_fields
        if getattr(args, f"profile_{name}", None) is not None
    }
    try:
        return ProfileSettings(**given)
    except ValidationError as exc:
        problems = "; ".join(
            f"--profile.{'.'.join(map(str, e['loc']))} {e.get('input')!r}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(problems) from exc


def _name(data: str, given: str) -> str:
    stem = given or Path(data.rstrip("/").rsplit("/", 1)[-1]).name.split(".")[0]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("_.-")
    if not name:
        raise ValueError(f"cannot derive a name from {data!r}; pass --name NAME")
    return name


def _with_model_name(schema: SchemaFile, model_name: str) -> SchemaFile:
    """The schema file naming its model; a name the registry refuses is refused here, with the fix."""
    from mlops.data.schema_file import SchemaFile

    if not re.fullmatch(NAME_PATTERN, model_name):
        raise ValueError(
            f"--model-name {model_name!r} is not a registered-model name; use letters, digits, '_', '.' or '-', "
            "starting with a letter or digit (e.g. adult-income)"
        )
    return SchemaFile.model_validate({**schema.model_dump(), "model_name": model_name})


def _columns(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(c.strip() for c in text.split(",") if c.strip()))


def _rerun(args: argparse.Namespace, ignore: tuple[str, ...]) -> str:
    """The ``mlops data init`` command line as given, with ``--ignore`` replaced by ``ignore``."""
    words = ["mlops", "data", "init", "--data", args.data, "--label", args.label]
    flags = {
        "--positive": args.positive,
        "--protected": args.protected,
        "--favourable": args.favourable,
        "--ignore": ",".join(ignore),
        "--allow-leaks": args.allow_leaks,
        "--name": args.name,
        "--model-name": args.model_name,
    }
    for flag, value in flags.items():
        if value:
            words += [flag, value]
    if args.out != Path("."):
        words += ["--out", str(args.out)]
    for name in sorted(vars(args)):
        if name.startswith("profile_") and getattr(args, name) is not None:
            words += [f"--profile.{name.removeprefix('profile_')}", str(getattr(args, name))]
    return shlex.join(words)


def likely_leaks(found: Profile, allowed: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The features that likely leak the label and are not acknowledged, and a warning for each one the
    single-feature AUC did not already warn about: a column only one label class fills (the leakage gate's
    rule, :func:`components.promotion_gate.leakage.one_class_findings`, with its default thresholds)."""
    from components.promotion_gate.config import LeakagePolicy
    from components.promotion_gate.leakage import one_class_findings

    schema = found.schema
    warnings: list[str] = []
    columns = list(found.leaks)
    if found.table is not None:
        labels = found.table[schema.label].to_numpy()
        classes = (schema.negative_label, schema.positive_label)
        for finding in one_class_findings(found.table, labels, schema.features, LeakagePolicy(), classes):
            column = finding.columns[0]
            if column not in columns:
                columns.append(column)
                warnings.append(f"{column}: may leak the label, {finding.detail.removeprefix(column + ' ')}")
    return [c for c in columns if c not in allowed], warnings


def init_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from components.data_validation.column_findings import repeated_names
    from components.data_validation.data_profile import profile
    from mlops.data.dataset import parse_table, read_bytes, sha256_digest
    from mlops.data.schema_file import SchemaFile

    protected = tuple(p.strip() for p in args.protected.split(",") if p.strip())
    if protected and args.favourable is None:
        raise ValueError(
            "--protected needs --favourable positive|negative: fairness compares how often each group gets "
            "the outcome that benefits a person, and only you know which label class that is"
        )
    if args.favourable is not None and not protected:
        raise ValueError(
            f"--favourable {args.favourable} without --protected: fairness compares groups of a protected "
            "attribute; name them with --protected COLUMNS, or leave out --favourable"
        )
    name = _name(args.data, args.name)
    out: Path = args.out
    schema_path, suite_path = out / f"{name}{SCHEMA_SUFFIX}", out / f"{name}{SUITE_SUFFIX}"
    existing = [str(p) for p in (schema_path, suite_path) if p.exists()]
    if existing and not args.force:
        raise ValueError(f"{', '.join(existing)} already exist(s); pass --force to overwrite or --out DIR")
    settings = profile_settings(args)
    data = read_bytes(args.data)
    frame, digest = parse_table(data, args.data), sha256_digest(data)
    ignore, allowed = _columns(args.ignore), _columns(args.allow_leaks)
    subject = args.subject_key.strip()
    if subject and (subject not in frame.columns or subject == args.label):
        what = "is the label" if subject == args.label else "is not a column of this data"
        raise ValueError(
            f"--subject-key {subject} {what} (its columns: {', '.join(map(str, frame.columns))}); name the "
            "column that identifies the person a row is about"
        )
    if subject and subject not in ignore:
        ignore = (*ignore, subject)  # an identifier is never a model input
    found = profile(
        frame,
        args.label,
        name=name,
        positive=args.positive,
        protected=protected,
        favourable=args.favourable or "negative",
        suite_file=suite_path.name,
        ignore=ignore,
        repeated=repeated_names(data),
        settings=settings,
        subjects=(subject,) if subject else (),
    )
    not_features = [c for c in allowed if c not in found.schema.features]
    if not_features:
        raise ValueError(
            f"--allow-leaks {','.join(not_features)}: not feature(s) of this data (its features: "
            f"{', '.join(found.schema.features)}); acknowledge only flagged features, leave out the rest with --ignore"
        )
    leaks, leak_warnings = likely_leaks(found, allowed)
    found.warnings += leak_warnings
    if leaks:
        _print_summary(found, None, None, args.data)
        print(
            f"likely leak(s): {', '.join(leaks)}: a model trained on a column recorded after the outcome "
            "cannot work in use, and the training gate rejects it. Nothing was written.\n"
            f"If a column is known before the outcome, acknowledge it (add --allow-leaks "
            f"{shlex.quote(','.join((*allowed, *leaks)))} to the command); otherwise leave them out:"
        )
        print(_rerun(args, (*ignore, *leaks)))
        return 1
    declared = _with_model_name(
        SchemaFile.model_validate(
            {**found.schema.model_dump(), "allowed_leaks": allowed, "subject_key": subject}
        ),
        args.model_name or name,
    )
    out.mkdir(parents=True, exist_ok=True)
    header = (
        f"Declaration of {args.data} (sha256 {digest[:12]}…), proposed by `mlops data init` from "
        f"{found.rows} rows.\nReview and edit it, then version it with the data. Add behavioural tests under "
        "invariance/directional,\ne.g. invariance: [{feature: COLUMN}] for a column that must not matter.\n"
        "The suite follows this file: a column moved to ignored_columns is no longer checked."
    )
    header += "".join(f"\nwarning: {w}" for w in found.warnings)
    header += "".join(f"\nnote: {n}" for n in found.notes)
    if allowed:
        header += (
            f"\nallowed_leaks: {', '.join(allowed)}, acknowledged as known before the outcome (--allow-leaks)"
        )
    omit: tuple[str, ...] = ()
    if args.favourable is None:
        header += f"\n{NO_FAIRNESS}"
        omit = ("favourable_class",)
    schema_path.write_text(declared.to_yaml(header, omit=omit), encoding="utf-8")
    suite_path.write_text(
        found.suite.model_dump_json(indent=2, exclude_defaults=True) + "\n", encoding="utf-8"
    )
    found.schema = declared
    _print_summary(found, schema_path, suite_path, args.data)
    print(f"model: runs with this schema file register {declared.model_name!r} (model_name in the file)")
    return 0


def _print_summary(found: Profile, schema_path: Path | None, suite_path: Path | None, data: str) -> None:
    schema = found.schema
    print(f"profiled {found.rows} rows of {data}")
    print(
        f"  label        {schema.label}: positive {schema.positive_label!r}, negative {schema.negative_label!r}"
    )
    print(f"  numeric      {len(schema.numeric_features)}: {', '.join(schema.numeric_features) or '-'}")
    print(
        f"  categorical  {len(schema.categorical_features)}: {', '.join(schema.categorical_features) or '-'}"
    )
    if schema.protected_attributes:
        print(
            f"  protected    {', '.join(schema.protected_attributes)} "
            f"(favourable outcome: the {schema.favourable_class} class)"
        )
    else:
        print(f"  fairness     {NO_FAIRNESS}")
    if schema.allowed_leaks:
        print(f"  allowed      {', '.join(schema.allowed_leaks)} (acknowledged likely leaks, --allow-leaks)")
    if schema.ignored_columns:
        print(f"  ignored      {len(schema.ignored_columns)}: {', '.join(schema.ignored_columns)}")
    for note in found.notes:
        print(f"  note         {note}")
    for warning in found.warnings:
        print(f"  WARNING      {warning}")
    if schema_path is None or suite_path is None:
        return
    print(f"wrote {schema_path} and {suite_path} ({len(found.suite.expectations)} expectations)")
    print(f"next: mlops run training --data {data} --schema {schema_path}")
