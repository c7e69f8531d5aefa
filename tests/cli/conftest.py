"""Fixtures of the KFP tests (test_kfp_upload.py, test_kfp_submit.py and test_kfp_connection.py): the
compiled training pipeline, compiled once per test session (not once per module), and a fake KFP server per
test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.kfp_commands import TOKEN
from tests.support.fake_kfp_server import FakeKfp


@pytest.fixture(scope="package")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pipelines.catalog import compile_all

    out = tmp_path_factory.mktemp("compiled")
    (path,) = [p for p in compile_all(out) if p.name == "training.yaml"]
    return path


@pytest.fixture
def fake() -> Iterator[FakeKfp]:
    with FakeKfp(token=TOKEN) as server:
        yield server
