"""Two datasets in one workspace are two models, each named by its schema file, with no file written by hand.

The second dataset ("bank": `;`-separated, `unknown` for missing, other columns) trains its own model
next to the first ("census"); a command that needs a model name then asks which. Training the census
data under the bank model's name stops before anything trains, naming the columns, and registers nothing.

The census model is the one tests/pipelines/test_user_data.py reads (its workspace is shared: a training
run costs minutes, see tests/pipelines/shared_runs.py); the bank model is added to it here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from cli.main import main
from mlops.tracking.store import TrackingStore
from tests.pipelines.shared_runs import CENSUS_FAST as FAST
from tests.pipelines.shared_runs import CENSUS_GROUP, CensusTrained

pytestmark = pytest.mark.slow


def bank(rows: int = 1200, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    balance = rng.normal(1500, 800, rows).round(0)
    duration = rng.integers(30, 900, rows)
    job = rng.choice(["admin", "blue-collar", "technician", "unknown"], rows)
    logit = -1.5 + 0.004 * (duration - 300) + 0.0004 * (balance - 1500) + (job == "admin") * 0.6
    subscribed = np.where(rng.random(rows) < 1 / (1 + np.exp(-logit)), "yes", "no")
    return pd.DataFrame({"balance": balance, "duration": duration, "job": job, "y": subscribed})


def _init(workspace: Path, data: Path, out: Path, label: str, *extra: str) -> Path:
    code = main(["--workspace", str(workspace), "data", "init", "--data", str(data), "--label", label,
                 "--out", str(out), *extra])  # fmt: skip
    assert code == 0
    (schema,) = out.glob("*.schema.yaml")
    return schema


def _train(workspace: Path, data: Path, schema: Path) -> int:
    return main(["--workspace", str(workspace), "run", "training", "--data", str(data), "--schema", str(schema),
                 *FAST])  # fmt: skip


@pytest.mark.xdist_group(CENSUS_GROUP)
def test_two_datasets_in_one_workspace_are_two_models(
    census_trained: CensusTrained, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The census data was declared and trained in this workspace by `data init` and `run training --data
    # --schema`, with no setting naming the model (the fixture).
    workspace, census_csv, census_schema = (
        census_trained.workspace,
        census_trained.data,
        census_trained.schema,
    )
    bank_csv = tmp_path / "bank.csv"
    bank().to_csv(bank_csv, index=False, sep=";")
    bank_schema = _init(workspace, bank_csv, tmp_path / "b", "y", "--positive", "yes")
    assert yaml.safe_load(census_schema.read_text())["model_name"] == "census"
    assert yaml.safe_load(bank_schema.read_text())["model_name"] == "bank"

    assert census_trained.exit_code == 0
    assert _train(workspace, bank_csv, bank_schema) == 0
    store = TrackingStore.from_uri(f"sqlite:///{workspace}/mlflow.db")
    assert store.registered_model_names() == ["bank", "census"]
    for name in ("bank", "census"):
        (version,) = store.search_versions(f"name = '{name}'")
        assert str(version.version) == "1"  # one model each, no stray version of the other

    capsys.readouterr()
    assert main(["--workspace", str(workspace), "history"]) == 2
    assert "holds 2 models (bank, census); say which, e.g. mlops history bank" in capsys.readouterr().err

    # The census data declared as the bank model: refused before training, nothing registered.
    declared = yaml.safe_load(census_schema.read_text())
    declared["model_name"] = "bank"
    wrong = tmp_path / "census-as-bank.schema.yaml"
    wrong.write_text(yaml.safe_dump(declared))
    (suite,) = census_schema.parent.glob("*.suite.json")
    (tmp_path / suite.name).write_text(suite.read_text())
    capsys.readouterr()
    assert _train(workspace, census_csv, wrong) == 1
    out = capsys.readouterr().out
    assert "train-model" in out and "cannot score this data" in out and "'balance'" in out
    assert "--model-name NEW" in out
    versions = store.search_versions("name = 'bank'")
    assert [str(v.version) for v in versions] == ["1"]
