"""`mlops data init` on a user's own file: --ignore, the findings printed and kept in the schema file,
the profiling settings checked, and a `schema.*` setting next to `--schema` refused, never ignored."""

from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from cli.main import main
from cli.parameters import ParameterError, checked_arguments
from mlops.data.schema_file import parse_schema_file
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


def test_data_init_refuses_a_likely_leak_and_ends_in_one_pasteable_ignore_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _init(tmp_path) == 1
    out = capsys.readouterr().out
    assert f"WARNING      {LEAK}: may leak the label, single-feature ROC AUC 0.99" in out
    assert f"likely leak(s): {LEAK}: " in out and "Nothing was written" in out
    assert f"add --allow-leaks {LEAK} to the command" in out
    assert not (tmp_path / "decl").exists()
    *_, last = out.strip().splitlines()
    words = shlex.split(last)
    assert words[:3] == ["mlops", "data", "init"] and words[words.index("--ignore") + 1] == LEAK
    # Pasting the line (in the same workspace) declares the data, the leak left out.
    assert main(["--workspace", str(tmp_path / "ws"), *words[1:]]) == 0
    declared = yaml.safe_load((tmp_path / "decl" / "bank-full.schema.yaml").read_text())
    assert LEAK in declared["ignored_columns"] and LEAK not in declared["numeric_features"]
    assert declared["favourable_class"] == "positive" and declared["protected_attributes"] == ["age"]
    capsys.readouterr()
    assert _init(tmp_path, "--force", "--profile.leak_auc", "1.0") == 0  # no finding above 1.0
    assert "may leak the label" not in capsys.readouterr().out


def test_allow_leaks_acknowledges_a_flagged_feature_in_the_schema_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _init(tmp_path, "--allow-leaks", LEAK) == 0
    out = capsys.readouterr().out
    assert f"allowed      {LEAK} (acknowledged likely leaks, --allow-leaks)" in out
    text = (tmp_path / "decl" / "bank-full.schema.yaml").read_text()
    assert f"# allowed_leaks: {LEAK}, acknowledged as known before the outcome" in text
    declared = parse_schema_file(text, "bank-full.schema.yaml")
    assert declared.allowed_leaks == (LEAK,) and LEAK in declared.numeric_features
    assert declared.dataset_schema.allowed_leaks == (LEAK,)  # what travels with the data to the gate
    # Only a feature can be acknowledged: an ignored or unknown column is refused, naming it.
    assert _init(tmp_path, "--force", "--allow-leaks", f"{LEAK},branch", "--ignore", "branch") == 2
    assert "--allow-leaks branch: not feature(s) of this data" in capsys.readouterr().err


def test_a_column_only_one_label_class_fills_is_a_likely_leak_even_below_the_auc_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Days from arrest: 0 for everyone who did not reoffend, a signed count for those who did. Its values
    straddle the filler, so it scores about 0.5 alone; only one class fills it."""
    rng = np.random.default_rng(4)
    rows = 800
    y = rng.random(rows) < 0.4
    frame = pd.DataFrame(
        {
            "priors count": rng.poisson(2 + y, rows),
            "r_days": np.where(y, rng.choice([-9, -5, -2, 3, 6, 8], rows), 0),
            "two_year_recid": y.astype(int),
        }
    )
    data = tmp_path / "compas.csv"
    frame.to_csv(data, index=False)
    args = [
        "--workspace",
        str(tmp_path / "ws"),
        "data",
        "init",
        "--data",
        str(data),
        "--label",
        "two_year_recid",
    ]
    assert main([*args, "--out", str(tmp_path / "d"), "--profile.leak_auc", "0.9"]) == 1
    out = capsys.readouterr().out
    assert "WARNING      r_days: may leak the label, is 0 in 100.0% of the '0' rows" in out
    assert "single-feature ROC AUC" not in out.split("r_days: may leak")[1].split("\n")[0]
    *_, last = out.strip().splitlines()
    assert shlex.split(last)[shlex.split(last).index("--ignore") + 1] == "r_days"
    assert "--profile.leak_auc 0.9" in last  # the settings given come back in the line


def test_without_protected_no_favourable_class_is_written_and_it_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "bank-full.csv"
    data.write_bytes(bank_csv(rows=600))
    base = ["--workspace", str(tmp_path / "ws"), "data", "init", "--data", str(data), "--label", "y",
            "--ignore", LEAK, "--out", str(tmp_path / "decl")]  # fmt: skip
    assert main(base) == 0
    out = capsys.readouterr().out
    assert (
        "fairness     no fairness check: no --protected attributes, so no favourable_class is written" in out
    )
    text = (tmp_path / "decl" / "bank-full.schema.yaml").read_text()
    assert "favourable_class" not in yaml.safe_load(text)
    assert "# no fairness check: no --protected attributes" in text
    assert yaml.safe_load(text)["protected_attributes"] == []
    assert main([*base, "--force", "--favourable", "negative"]) == 2
    assert "--favourable negative without --protected" in capsys.readouterr().err


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
    from cli.summaries.run_outline import data_note_lines

    folder = tmp_path / "validate-data"
    folder.mkdir(parents=True)
    (folder / "report_json").write_text(
        '{"notes": ["column(s) [\'region\'] are in the data but not in the schema"]}'
    )
    assert data_note_lines(tmp_path) == [
        "  data note         column(s) ['region'] are in the data but not in the schema"
    ]
    assert data_note_lines(tmp_path / "missing") == []


def test_subject_key_is_written_and_left_out_of_the_features_and_a_wrong_one_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    frame = pd.read_csv(io.BytesIO(bank_csv(rows=600)), sep=None, engine="python")
    frame.insert(0, "client_id", [f"K{i:04d}" for i in range(len(frame))])
    data = tmp_path / "bank-ids.csv"
    frame.to_csv(data, index=False)
    base = ["--workspace", str(tmp_path / "ws"), "data", "init", "--data", str(data), "--label", "y",
            "--ignore", LEAK, "--out", str(tmp_path / "decl")]  # fmt: skip
    assert main([*base, "--subject-key", "client_id"]) == 0
    declared = parse_schema_file((tmp_path / "decl" / "bank-ids.schema.yaml").read_text(), "schema")
    assert declared.subject_key == "client_id"
    assert "client_id" in declared.ignored_columns and "client_id" not in declared.features
    printed = capsys.readouterr().out
    assert "client_id: ignored, the subject key (an identifier is never a model input)" in printed
    assert (
        "client_id: ignored, as --ignore asked" not in printed
        and f"{LEAK}: ignored, as --ignore asked" in printed
    )
    assert main([*base, "--force", "--subject-key", "clientid"]) == 2
    assert "--subject-key clientid is not a column of this data" in capsys.readouterr().err
    assert main([*base, "--force", "--subject-key", "y"]) == 2
    assert "--subject-key y is the label" in capsys.readouterr().err


def test_the_acknowledge_advice_pastes_whole_when_a_leaking_column_name_has_spaces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Public tables name columns ``worst radius``: the advised ``--allow-leaks`` value is quoted, and pasted
    as printed it declares the data with that column acknowledged."""
    rng = np.random.default_rng(7)
    label = rng.integers(0, 2, 600)
    table = pd.DataFrame(
        {
            "worst radius": label * 5.0 + rng.normal(0, 1, 600),
            "texture": rng.normal(0, 1, 600),
            "smoothness": rng.normal(0, 1, 600),
            "y": np.where(label == 1, "malignant", "benign"),
        }
    )
    data = tmp_path / "cells.csv"
    table.to_csv(data, index=False)
    command = ["--workspace", str(tmp_path / "ws"), "data", "init", "--data", str(data), "--label", "y",
               "--positive", "malignant", "--out", str(tmp_path / "decl")]  # fmt: skip
    assert main(command) == 1
    out = capsys.readouterr().out
    advice = out.split("(add --allow-leaks ", 1)[1].split(" to the command)", 1)[0]
    assert advice == "'worst radius'"
    assert main([*command, "--allow-leaks", *shlex.split(advice)]) == 0
    declared = parse_schema_file((tmp_path / "decl" / "cells.schema.yaml").read_text(), "cells.schema.yaml")
    assert declared.allowed_leaks == ("worst radius",)
