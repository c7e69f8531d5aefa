"""``mlops upload`` and ``mlops submit`` as the KFP tests run them (test_kfp_upload.py, test_kfp_submit.py and
test_kfp_connection.py): parsed as ``mlops`` parses them, against the fake KFP server with its token."""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.commands import submit as submit_cmd
from cli.commands import upload as upload_cmd
from mlops.workspace import Workspace
from tests.support.fake_kfp_server import FakeKfp

TOKEN = "s3cr3t-token"


def mlops(*argv: str, workspace: Path) -> int:
    """The two commands as ``mlops`` parses them; ValueErrors propagate as they do to ``mlops``' main."""
    parser = argparse.ArgumentParser(prog="mlops")
    subparsers = parser.add_subparsers(dest="command", required=True)
    upload_cmd.add_parser(subparsers)
    submit_cmd.add_parser(subparsers)
    args = parser.parse_args(argv)
    return int(args.handler(args, Workspace(workspace)))


def auth(fake: FakeKfp) -> list[str]:
    return ["--host", fake.url, "--token", TOKEN]


def upload(fake: FakeKfp, package: Path, tmp_path: Path, *extra: str) -> int:
    return mlops("upload", "--package", str(package), *auth(fake), *extra, workspace=tmp_path / "ws")


def submit(fake: FakeKfp, tmp_path: Path, *extra: str) -> int:
    return mlops("submit", *auth(fake), "--poll", "0.01", *extra, workspace=tmp_path / "ws")
