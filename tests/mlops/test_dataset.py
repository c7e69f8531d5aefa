"""The shared dataset module (schema checks, loading, digests) and the sample-data generator."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from mlops.data.dataset import DatasetError, DatasetSchema, load_table, parse_table, read_bytes
from mlops.data.sample_data import (
    CATEGORIES,
    NUMERIC,
    SAMPLE_SCHEMA,
    SampleDataConfig,
    generate,
    write,
)

SMALL = SampleDataConfig(rows=400, seed=21)


@pytest.fixture(scope="module")
def sample() -> pd.DataFrame:
    return generate(SMALL)


# --- DatasetSchema -----------------------------------------------------------------------------


def test_schema_needs_features() -> None:
    with pytest.raises(ValidationError, match="schema declares no features"):
        DatasetSchema(label="y", numeric_features=())


def test_schema_rejects_a_column_with_two_roles() -> None:
    with pytest.raises(
        ValidationError, match="'age' is declared as both numeric_features and protected_attributes"
    ):
        DatasetSchema(label="y", numeric_features=("age",), protected_attributes=("age",))


def test_schema_is_frozen_and_strict() -> None:
    with pytest.raises(ValidationError, match="frozen"):
        SAMPLE_SCHEMA.label = "other"
    with pytest.raises(ValidationError, match="extra"):
        DatasetSchema(label="y", numeric_features=("a",), target="y")  # type: ignore[call-arg]


def test_schema_columns_order_and_features(sample: pd.DataFrame) -> None:
    assert SAMPLE_SCHEMA.columns[0] == "default"
    assert SAMPLE_SCHEMA.features == (*NUMERIC, *CATEGORIES)
    assert "sex" not in SAMPLE_SCHEMA.features
    assert set(SAMPLE_SCHEMA.columns) == set(sample.columns)
    SAMPLE_SCHEMA.check(sample)  # the generator satisfies its own schema


def test_check_rejects_an_empty_frame(sample: pd.DataFrame) -> None:
    with pytest.raises(DatasetError, match="train.csv has no rows"):
        SAMPLE_SCHEMA.check(sample.iloc[0:0], "train.csv")


def test_check_names_missing_columns(sample: pd.DataFrame) -> None:
    with pytest.raises(DatasetError, match=r"lacks column\(s\) \['income', 'sex'\]"):
        SAMPLE_SCHEMA.check(sample.drop(columns=["sex", "income"]))


def test_check_names_a_non_numeric_feature(sample: pd.DataFrame) -> None:
    frame = sample.copy()
    frame["credit_score"] = frame["credit_score"].astype(str).where(frame.index > 0, "n/a")
    with pytest.raises(DatasetError, match=r"column 'credit_score' must be numeric .*'n/a'"):
        SAMPLE_SCHEMA.check(frame)


def test_check_counts_nan_labels(sample: pd.DataFrame) -> None:
    frame = sample.copy()
    frame["default"] = frame["default"].astype(float)
    frame.loc[[3, 5, 8], "default"] = np.nan
    with pytest.raises(DatasetError, match="label 'default' has 3 NaN value"):
        SAMPLE_SCHEMA.check(frame)


def test_check_rejects_non_binary_labels(sample: pd.DataFrame) -> None:
    frame = sample.assign(default=sample["default"].replace({1: 2}))
    with pytest.raises(DatasetError, match=r"must be 0/1, found \['0', '2'\]"):
        SAMPLE_SCHEMA.check(frame)


def test_check_rejects_a_single_class(sample: pd.DataFrame) -> None:
    with pytest.raises(DatasetError, match=r"single class \['0'\]"):
        SAMPLE_SCHEMA.check(sample.assign(default=0))


def test_check_accepts_boolean_labels(sample: pd.DataFrame) -> None:
    SAMPLE_SCHEMA.check(sample.assign(default=sample["default"].astype(bool)))


# --- reading and parsing -----------------------------------------------------------------------


def test_csv_and_parquet_load_the_same_table_with_the_digest_of_their_bytes(tmp_path: Path) -> None:
    csv = Path(write(str(tmp_path / "d.csv"), SMALL))
    parquet = Path(write(str(tmp_path / "d.parquet"), SMALL))
    assert parquet.read_bytes()[:4] == b"PAR1" and csv.read_bytes()[:4] != b"PAR1"

    from_csv, csv_digest = load_table(str(csv))
    from_parquet, parquet_digest = load_table(f"file://{parquet}")

    assert csv_digest == hashlib.sha256(csv.read_bytes()).hexdigest()
    assert parquet_digest == hashlib.sha256(parquet.read_bytes()).hexdigest()
    assert csv_digest != parquet_digest
    pd.testing.assert_frame_equal(from_csv, from_parquet, check_dtype=False)
    assert len(from_csv) == SMALL.rows


def test_parquet_is_recognised_by_content_not_name(tmp_path: Path, sample: pd.DataFrame) -> None:
    disguised = tmp_path / "really_parquet.csv"
    sample.to_parquet(disguised, index=False)
    frame, _ = load_table(str(disguised))
    pd.testing.assert_frame_equal(frame, sample, check_dtype=False)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"dataset file .*nope\.csv does not exist"):
        read_bytes(str(tmp_path / "nope.csv"))


def test_a_directory_is_not_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="is not a file"):
        load_table(str(tmp_path))


def test_empty_file_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "empty.csv").write_bytes(b"")
    with pytest.raises(DatasetError, match=r"empty\.csv is empty \(0 bytes\)"):
        load_table(str(tmp_path / "empty.csv"))


def test_header_only_csv_parses_to_no_rows_then_fails_the_check(tmp_path: Path) -> None:
    (tmp_path / "header.csv").write_text(",".join(SAMPLE_SCHEMA.columns) + "\n")
    frame, _ = load_table(str(tmp_path / "header.csv"))
    with pytest.raises(DatasetError, match="has no rows"):
        SAMPLE_SCHEMA.check(frame, "header.csv")


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"PAR1\x00\x01 truncated parquet", r"cannot parse dataset .*bad\.bin as Parquet"),
        (b"a,b\n1,2\n3,4,5,6\n", r"cannot parse dataset .*bad\.bin as CSV"),
        (b"\xff\xfe\x00\x81\x00garbage\x00", r"cannot parse dataset .*bad\.bin as CSV"),
    ],
    ids=["corrupt-parquet", "ragged-csv", "binary-garbage"],
)
def test_unparseable_files_name_the_format(tmp_path: Path, content: bytes, match: str) -> None:
    (tmp_path / "bad.bin").write_bytes(content)
    with pytest.raises(DatasetError, match=match):
        load_table(str(tmp_path / "bad.bin"))


def test_parse_table_names_the_uri() -> None:
    with pytest.raises(DatasetError, match="s3://b/k.csv is empty"):
        parse_table(b"", "s3://b/k.csv")


@pytest.mark.parametrize("uri", ["s3://", "s3://bucket-only", "s3://bucket/", "s3:///key"])
def test_malformed_s3_uris_are_rejected(uri: str) -> None:
    with pytest.raises(DatasetError, match="is not a valid S3 URI; expected s3://bucket/key"):
        read_bytes(uri)


def test_unreachable_s3_endpoint_is_a_dataset_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # A closed local port: botocore fails fast with a connection error, no network involved.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    with pytest.raises(DatasetError, match=r"cannot read s3://bucket/data\.csv: .*127\.0\.0\.1"):
        read_bytes("s3://bucket/data.csv")


# --- the sample-data generator -----------------------------------------------------------------


def test_generator_is_deterministic(tmp_path: Path) -> None:
    pd.testing.assert_frame_equal(generate(SMALL), generate(SMALL))
    first = Path(write(str(tmp_path / "a.csv"), SMALL)).read_bytes()
    second = Path(write(str(tmp_path / "b.csv"), SMALL)).read_bytes()
    assert first == second
    other = generate(SampleDataConfig(rows=SMALL.rows, seed=SMALL.seed + 1))
    assert not other["income"].equals(generate(SMALL)["income"])


def test_generator_shape_categories_and_missing_values() -> None:
    frame = generate(SampleDataConfig(rows=4000, seed=2, missing_rate=0.05))
    assert frame.shape == (4000, len(SAMPLE_SCHEMA.columns))
    for column, values in CATEGORIES.items():
        assert set(frame[column].dropna()) <= set(values)
    assert set(frame["sex"]) == {"female", "male"}
    assert set(frame["default"]) == {0, 1}
    # Loan terms and identifiers are never blank; other columns are, at about missing_rate.
    never_missing = ["age", "loan_amount", "loan_term_months", "interest_rate", "sex", "default"]
    assert frame[never_missing].notna().all().all()
    rates = frame.drop(columns=never_missing).isna().mean()
    assert rates.between(0.03, 0.07).all(), rates.to_dict()
    assert generate(SampleDataConfig(rows=2000, seed=2, missing_rate=0.0)).notna().all().all()


def test_drift_shifts_distributions() -> None:
    base = generate(SampleDataConfig(rows=5000, seed=3))
    drifted = generate(SampleDataConfig(rows=5000, seed=3, drift=1.0))
    assert drifted["credit_score"].mean() < base["credit_score"].mean() - 25
    assert drifted["income"].median() < base["income"].median() * 0.85
    assert drifted["credit_utilization"].mean() > base["credit_utilization"].mean() + 0.05
    business = (drifted["loan_purpose"] == "business").mean() - (base["loan_purpose"] == "business").mean()
    assert business > 0.1
    # Drift changes distributions, not the vocabulary or the columns.
    assert list(drifted.columns) == list(base.columns)
    assert set(drifted["loan_purpose"].dropna()) <= set(CATEGORIES["loan_purpose"])


def _female_minus_male_default_rate(frame: pd.DataFrame) -> float:
    rates = frame.groupby("sex")["default"].mean()
    return float(rates["female"] - rates["male"])


def test_bias_makes_the_label_depend_on_sex() -> None:
    fair = generate(SampleDataConfig(rows=6000, seed=4))
    biased = generate(SampleDataConfig(rows=6000, seed=4, bias=2.0))
    assert abs(_female_minus_male_default_rate(fair)) < 0.04
    assert _female_minus_male_default_rate(biased) > 0.2


def test_minority_fraction_sets_group_size() -> None:
    frame = generate(SampleDataConfig(rows=5000, seed=5, minority_fraction=0.1))
    assert 0.08 < (frame["sex"] == "female").mean() < 0.12


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rows": 0}, r"rows\n  Input should be greater than or equal to 1 .*input_value=0"),
        (
            {"missing_rate": 0.5},
            r"missing_rate\n  Input should be less than 0.5 .*input_value=0.5",
        ),
        (
            {"drift": -0.1},
            r"drift\n  Input should be greater than or equal to 0 .*input_value=-0.1",
        ),
        ({"bias": 11}, r"bias\n  Input should be less than or equal to 10 .*input_value=11"),
        (
            {"minority_fraction": 1.0},
            r"minority_fraction\n  Input should be less than 1 .*input_value=1.0",
        ),
    ],
)
def test_sample_config_rejects_out_of_range_knobs(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SampleDataConfig(**kwargs)  # type: ignore[arg-type]


def test_write_picks_the_format_from_the_suffix(tmp_path: Path) -> None:
    for name, magic_is_parquet in (("x.parquet", True), ("x.PQ", True), ("x.csv", False), ("x.txt", False)):
        path = Path(write(str(tmp_path / name), SampleDataConfig(rows=20, seed=6)))
        assert (path.read_bytes()[:4] == b"PAR1") is magic_is_parquet, name


# --- prepare: markers, label values, declared columns ----------------------------------------------


def test_prepare_reads_markers_maps_string_labels_and_keeps_declared_columns() -> None:
    import numpy as np

    schema = DatasetSchema(
        label="income",
        positive_label=">50K",
        negative_label="<=50K",
        numeric_features=("age",),
        categorical_features=("job",),
        ignored_columns=("id",),
        missing_values=("?",),
    )
    raw = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "age": ["30", " ?", "41", "52"],
            "job": ["x", "?", "y", "x"],
            "income": [">50K", "<=50K", " >50K", "<=50K"],
            "extra": [1, 2, 3, 4],
        }
    )
    table = schema.prepare(raw, "t.csv")
    assert list(table.columns) == ["age", "job", "income"]  # the file's order, declared columns only
    assert table["income"].tolist() == [1, 0, 1, 0]
    assert table["age"].dtype == np.float64 and table["age"].isna().tolist() == [False, True, False, False]
    assert table["job"].isna().tolist() == [False, True, False, False]


def test_prepare_names_an_unexpected_label_value_and_the_fix() -> None:
    schema = DatasetSchema(label="y", positive_label="yes", negative_label="no", numeric_features=("a",))
    frame = pd.DataFrame({"y": ["yes", "no", "maybe"], "a": [1.0, 2.0, 3.0]})
    with pytest.raises(
        DatasetError, match=r"label 'y' has value\(s\) \['maybe'\] besides positive_label 'yes'"
    ):
        schema.prepare(frame, "d.csv")


def test_numeric_labels_keep_meaning_zero_and_one() -> None:
    frame = pd.DataFrame({"y": [1.0, 0.0, 1.0], "a": [1.0, 2.0, 3.0]})
    table = DatasetSchema(label="y", numeric_features=("a",)).prepare(frame)
    assert table["y"].tolist() == [1, 0, 1]


def test_positive_and_negative_labels_must_differ() -> None:
    with pytest.raises(ValueError, match="positive_label and negative_label are both '1'"):
        DatasetSchema(label="y", numeric_features=("a",), positive_label="1", negative_label="1.0")


@pytest.mark.parametrize("sep", ["\t", ";", "|", ","])
def test_csv_delimiter_is_taken_from_the_header_line(sep: str) -> None:
    data = (
        sep.join(["'a'", "b", "c"]).encode()
        + b"\n"
        + sep.join(["1", "2,5" if sep != "," else "2", "x"]).encode()
    )
    frame = parse_table(data, "t.csv")
    assert list(frame.columns) == ["'a'", "b", "c"]
    assert frame.shape == (1, 3)


def test_single_quoted_header_names_are_unquoted_as_statsmodels_files_write_them() -> None:
    """statsmodels' anes96.csv: tab-separated, every header name in single quotes; numbers unquoted."""
    data = b"'popul'\t'age'\t'vote'\n0\t36\t1\n190\t20\t0\n"
    frame = parse_table(data, "anes96.csv")
    assert list(frame.columns) == ["popul", "age", "vote"]
    assert frame["age"].tolist() == [36, 20]
    # One quoted name among plain ones is a name that contains quotes, not a quoting style.
    mixed = parse_table(b"'a'\tb\n1\t2\n", "t.csv")
    assert list(mixed.columns) == ["'a'", "b"]


@pytest.mark.parametrize(
    "labels",
    [
        pd.Series([0, 1, 1]),
        pd.Series([0.0, 1.0, np.nan]),
        pd.Series(["yes", " no", "1.0", None]),
        pd.Series([True, 1, "1.0"], dtype=object),
        pd.Series(["a", "b", "a"], dtype="category"),
        pd.Series([1, 0, None], dtype="Int64"),
    ],
)
def test_labels_text_is_label_text_of_each_row(labels: pd.Series) -> None:
    from mlops.data.dataset import label_text, labels_text

    assert list(labels_text(labels)) == list(labels.map(label_text))


def test_a_subject_key_that_is_the_label_is_refused_by_name() -> None:
    import pytest as _pytest

    from mlops.data.dataset import DatasetSchema

    with _pytest.raises(ValueError, match="subject_key 'y' is the label"):
        DatasetSchema(label="y", numeric_features=("a",), subject_key="y")
    assert DatasetSchema(label="y", numeric_features=("a",), subject_key="id").subject_key == "id"


def test_the_subject_key_column_travels_with_the_prepared_table_and_its_absence_is_named() -> None:
    import pandas as pd
    import pytest as _pytest

    from mlops.data.dataset import DatasetError, DatasetSchema

    schema = DatasetSchema(label="y", numeric_features=("a",), ignored_columns=("id",), subject_key="id")
    frame = pd.DataFrame({"a": [1.0, 2.0], "y": [0, 1], "id": ["c1", "c2"], "note": ["x", "y"]})
    table = schema.prepare(frame)
    assert list(table["id"]) == ["c1", "c2"] and "note" not in table.columns
    with _pytest.raises(DatasetError, match="lacks the subject_key column 'id'"):
        schema.prepare(frame.drop(columns=["id"]))
