"""`mlops data init` on a user's own file: --ignore, the findings printed and kept in the schema file,
the profiling settings checked, and a `schema.*` setting next to `--schema` refused, never ignored."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cli.main import main
from cli.parameters import ParameterError, checked_arguments
from pipelines.catalog import forms
from tests.support.bank_marketing import DATE, LEAK, REPEATED, bank_csv


def _init(tmp_path: Path, *extra: str) -> int:
    data = tmp_path / "bank-full.csv"
    if not data.exists():
        data.write_bytes(bank_csv(rows=1200))
    return main(
        ["--workspace", str(tmp_path / "ws"), "data", "init", "--data", str(data), "--label", "y",
         "--protected", "age", "--favourable", "positive", "--out", str(tmp_path / "decl"), *extra]
    )  # fmt: skip


def test_data_init_ignores_what_it_is_told_and_reports_every_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _init(tmp_path, "--ignore", f"{LEAK}, branch") == 0
    out = capsys.readouterr().out
    text = (tmp_path / "decl" / "bank-full.schema.yaml").read_text()
    declared = yaml.safe_load(text)
    assert declared["ignored_columns"] == [DATE, "branch", f"{REPEATED}.1", LEAK]
    assert declared["missing_values"] == ["unknown"]
    assert (
        "note         read as missing: 'unknown' (missing_values: confirm each is a marker, not a real value)"
        in out
    )
    assert "WARNING      balance: kept numeric, 6 of 1200 cells (0.50%) are not numbers: 'abc' ×6" in out
    assert "WARNING      default: near constant" in out
    assert f"note         {REPEATED}.1: ignored, a repeat of column name" in out
    assert f"note         {LEAK}: ignored, as --ignore asked" in out
    assert "may leak the label" not in out  # ignored, so not profiled as a feature
    # The findings travel with the file, as comments the user reads before editing it.
    assert "# warning: balance: kept numeric, 6 of 1200 cells" in text
    assert f"# note: {DATE}: ignored, dates/timestamps" in text


def test_data_init_warns_about_the_leak_with_its_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _init(tmp_path) == 0
    out = capsys.readouterr().out
    assert f"WARNING      {LEAK}: may leak the label, single-feature ROC AUC 0.99" in out
    assert _init(tmp_path, "--force", "--profile.leak_auc", "1.0") == 0
    assert "may leak the label" not in capsys.readouterr().out


def test_a_profiling_setting_out_of_range_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _init(tmp_path, "--profile.leak_auc", "1.5") == 2
    err = capsys.readouterr().err
    assert "--profile.leak_auc 1.5: Input should be less than or equal to 1" in err
    assert not (tmp_path / "decl").exists()


@pytest.mark.parametrize(
    "setting",
    [{"schema.ignored_columns": ["duration"]}, {"schema.numeric_features": ["a"], "schema.label": "y"}],
)
def test_a_schema_setting_next_to_a_schema_file_is_refused(setting: dict[str, object]) -> None:
    form = forms()["training"]
    with pytest.raises(
        ParameterError, match=r"given together with the schema file b.schema.yaml \(--schema\)"
    ) as caught:
        checked_arguments(form, {"validation.schema_uri": "b.schema.yaml", **setting})
    assert "Edit the schema file instead" in str(caught.value)
    for address in setting:
        assert address in str(caught.value)
    checked_arguments(form, dict(setting))  # without a schema file the setting is the declaration
    checked_arguments(form, {"validation.schema_uri": "b.schema.yaml"})


def test_run_training_refuses_ignored_columns_next_to_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = tmp_path / "b.schema.yaml"
    schema.write_text("label: y\nnumeric_features: [a]\n")
    (tmp_path / "b.csv").write_text("a,y\n1,0\n2,1\n")
    code = main(
        ["--workspace", str(tmp_path / "ws"), "run", "training", "--data", str(tmp_path / "b.csv"),
         "--schema", str(schema), "--schema.ignored_columns", "duration"]
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "schema.ignored_columns given together with the schema file" in err
    assert not (tmp_path / "ws" / "pipeline-runs").exists()


def test_the_run_summary_shows_validate_datas_notes(tmp_path: Path) -> None:
    from cli.summaries.common import data_note_lines

    folder = tmp_path / "validate-data"
    folder.mkdir(parents=True)
    (folder / "report_json").write_text(
        '{"notes": ["column(s) [\'region\'] are in the data but not in the schema"]}'
    )
    assert data_note_lines(tmp_path) == [
        "  data note         column(s) ['region'] are in the data but not in the schema"
    ]
    assert data_note_lines(tmp_path / "missing") == []
