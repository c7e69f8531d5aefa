"""A user's own data, start to finish: `mlops data init` → `mlops run training --schema`, no hand-written file.

The data is census-like: string labels (">50K"/"<=50K"), "?" for missing values, an ID
column and a protected attribute whose favourable outcome is the positive class.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from cli.main import main
from mlops.model.onnx_model import OnnxScorer
from mlops.tracking.store import TrackingStore
from serving.protocol import model_metadata
from tests.pipelines.shared_runs import CENSUS_FAST as FAST
from tests.pipelines.shared_runs import CENSUS_GROUP, CensusTrained, census, declare_census

pytestmark = pytest.mark.slow


def _client(workspace: Path) -> Any:
    return TrackingStore.from_uri(f"sqlite:///{workspace}/mlflow.db")._client


@pytest.mark.xdist_group(CENSUS_GROUP)
def test_data_init_then_run_training_uses_the_declaration(
    census_trained: CensusTrained, tmp_path: Path
) -> None:
    # The workspace test_two_models.py adds a second model to: this test reads its census run by folder and id.
    data, schema_path, workspace, run_dir = (
        census_trained.data,
        census_trained.schema,
        census_trained.workspace,
        census_trained.run_dir,
    )

    declared = yaml.safe_load(schema_path.read_text())
    assert declared["model_name"] == "census"  # from the file's name: the run below names no model
    assert declared["ignored_columns"] == ["person_id"]
    assert declared["missing_values"] == ["?"]
    assert declared["numeric_features"] == ["age", "hours_per_week"]  # "?" did not make age a category
    assert declared["favourable_class"] == "positive"

    assert census_trained.exit_code == 0
    client = _client(workspace)
    version = client.get_model_version("census", "1")
    assert "challenger" in version.aliases  # the gates decided, so the version became the challenger
    # What the run was told to read, by address: a triggered retraining trains on the same source.
    (checked,) = client.search_runs(
        [client.get_run(version.tags["mlops.train_run_id"]).info.experiment_id],
        "tags.`mlflow.runName` = 'data_validation'"
        f" and tags.`mlops.pipeline_run_id` = '{version.tags['mlops.kfp_run_id']}'",
    )
    assert checked.data.params["data.uri"] == str(data)
    assert checked.data.params["validation.schema_uri"] == str(schema_path)
    # The served model names the label values: its probability is of ">50K".
    # The version's files through the seam's registry (MLflow's models:/ download reads a global URI).
    local = TrackingStore.from_uri(f"sqlite:///{workspace}/mlflow.db").download_version(
        "census", "1", tmp_path / "v1"
    )
    spec = OnnxScorer.load(local / "model.onnx").spec
    assert (spec.label, spec.classes) == ("income", ("<=50K", ">50K"))
    served = json.loads(model_metadata("census", "1", spec, "fp32"))["parameters"]
    assert (served["label"], served["negative_class"], served["positive_class"]) == (
        "income",
        "<=50K",
        ">50K",
    )

    report = json.loads((run_dir / "validate-model" / "report_json").read_text())
    assert report["favourable_prediction"] == 1  # the declared favourable outcome: the positive class
    (sex,) = report["fairness"]
    for group in sex["groups"]:
        # Favourable = predicted positive, so its rate is the selection rate (with 0 it would be 1 - it).
        assert group["favourable_rate"] == pytest.approx(group["selection_rate"])
        assert 0.0 < group["selection_rate"] < 1.0
    assert report["decisions"]["behavioural"]["reason"] == "no behavioural tests declared"

    assert json.loads((run_dir / "validate-data" / "report_json").read_text())["success"] is True
    table = pd.read_parquet(run_dir / "validate-data" / "dataset")
    assert "person_id" not in table.columns
    assert set(table["income"]) == {0, 1}
    assert table["age"].isna().sum() == 40 and table["education"].isna().sum() == 60


def test_an_unknown_column_in_a_behavioural_test_fails_before_training_and_registers_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "census.csv"
    census(rows=600).to_csv(data, index=False)
    workspace = tmp_path / "ws"
    schema_path = declare_census(data, tmp_path / "decl", workspace)
    declared = yaml.safe_load(schema_path.read_text())
    declared["invariance"] = [{"feature": "zip_code"}]
    schema_path.write_text(yaml.safe_dump(declared))

    code = main(
        ["--workspace", str(workspace), "run", "training", "--data", str(data), "--schema", str(schema_path),
         "--registration.model_name", "census", *FAST]
    )  # fmt: skip
    assert code == 1
    out = capsys.readouterr().out
    assert "validate-data" in out and "zip_code" in out
    assert _client(workspace).search_registered_models() == []
    assert not list(workspace.glob("pipeline-runs/training-*/train-model"))


def test_bank_table_data_init_edit_the_schema_file_and_run_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second public-style table: `;`, `unknown`, a numeric protected age, a leaking duration, bad
    cells, a date and a repeated name. `data init` flags each and refuses the leak, ending in the line
    that leaves it out; the user pastes it, then moves a column to ignored_columns by editing the file
    alone; training validates with no other edit."""
    import shlex

    from tests.support.bank_marketing import LEAK, bank_csv

    data = tmp_path / "bank-full.csv"
    data.write_bytes(bank_csv(rows=1500))
    workspace = tmp_path / "ws"
    code = main(
        ["--workspace", str(workspace), "data", "init", "--data", str(data), "--label", "y", "--protected",
         "age", "--favourable", "positive", "--out", str(tmp_path / "decl")]
    )  # fmt: skip
    assert code == 1
    out = capsys.readouterr().out
    for flagged in (f"WARNING      {LEAK}: may leak", "WARNING      balance: kept numeric", "contact_date: ignored",
                    "campaign.1: ignored, a repeat", "read as missing: 'unknown'"):  # fmt: skip
        assert flagged in out
    pasted = shlex.split(out.strip().splitlines()[-1])
    assert pasted[pasted.index("--ignore") + 1] == LEAK
    assert main(["--workspace", str(workspace), *pasted[1:]]) == 0
    schema_path = tmp_path / "decl" / "bank-full.schema.yaml"
    declared = yaml.safe_load(schema_path.read_text())
    assert LEAK in declared["ignored_columns"]
    declared["categorical_features"].remove("branch")
    declared["ignored_columns"] += ["branch"]
    schema_path.write_text(yaml.safe_dump(declared, sort_keys=False))
    run_data = tmp_path / "bank-run.csv"  # the same rows with a column the schema does not know
    header, *lines = bank_csv(rows=1500).decode().splitlines()
    run_data.write_text("\n".join([f"{header};region", *(f"{line};north" for line in lines)]) + "\n")

    code = main(
        ["--workspace", str(workspace), "run", "training", "--data", str(run_data), "--schema", str(schema_path),
         *FAST]  # the model's name comes from the schema file (data init wrote it)
    )  # fmt: skip
    out = capsys.readouterr().out
    (data_report,) = workspace.glob("pipeline-runs/training-*/validate-data/report_json")
    report = json.loads(data_report.read_text())
    assert report["success"] is True, [c["observed_text"] for c in report["checks"] if not c["success"]]
    skipped, unknown = report["notes"]
    assert "['branch'] are in the schema file's ignored_columns" in skipped  # the leak: never in the suite
    assert unknown.startswith("column(s) ['region'] are in the data but not in the schema file")
    (validated,) = workspace.glob("pipeline-runs/training-*/validate-data/dataset")
    table = pd.read_parquet(validated)
    assert LEAK not in table.columns and "region" not in table.columns
    assert table["balance"].isna().sum() == 7  # the 'abc' cells, read as missing
    assert list(workspace.glob("pipeline-runs/training-*/train-model")), out
    assert code == 0, out  # ages compared in bins, the leak ignored: the gates decide and the run ends
    assert "data note         column(s) ['region'] are in the data but not in the schema file" in out
