"""The registered model the local batch-scoring tests share (test_batch_outputs.py and
test_batch_refusals_and_reruns.py): trained and registered once per test session, not once per module.
test_batch_s3.py registers its own (its module's ``model`` fixture overrides this one)."""

from __future__ import annotations

import pytest

from tests.support.monitoring import Monitored, monitored_model


@pytest.fixture(scope="package")
def model(tmp_path_factory: pytest.TempPathFactory) -> Monitored:
    """Champion v1 (signed, with its reference profile) in a workspace of its own."""
    return monitored_model(tmp_path_factory.mktemp("batch"))
