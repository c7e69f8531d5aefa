"""Erasing one person's rows, file by file: each file rewritten without them (every other row, column and
cell kept, the old file whole after a crash), labels found through the person's request ids, and every file
that cannot be rewritten (no key column, a lock, a signed folder) named instead. The request, the salt and
the outcome's record are in test_erasure_requests_and_records.py."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from mlops import storage
from mlops.governance import audit
from mlops.governance.erasure import RowStore, erase, erase_store, signed_folder_guard
from mlops.storage import object_lock
from tests.mlops.erasure_files import SALT, WHO, logged, parquet

# --- a file: the person's rows go, every other row and column stays ---


def test_the_persons_rows_are_removed_and_every_other_row_kept(tmp_path: Path) -> None:
    uri = logged(tmp_path / "log.parquet", [WHO, "C-1", None, WHO, "C-2"])
    before = pq.read_table(uri)
    outcome = erase_store(RowStore("log", (uri,)), "customer_id", WHO, None)
    assert (outcome.files_searched, outcome.rows_removed, outcome.rewritten) == (1, 2, [uri])
    assert not outcome.unsearchable and outcome.rows_without_key == 1
    assert not outcome.conclusive  # a row without a key could be anyone's: the erasure cannot be sure
    after = pq.read_table(uri)
    assert after.schema == before.schema
    assert after.to_pylist() == [r for r in before.to_pylist() if r["customer_id"] != WHO]
    assert WHO.encode() not in Path(uri).read_bytes()  # nor in the column statistics


def test_a_value_that_is_absent_removes_nothing_and_leaves_the_file_untouched(tmp_path: Path) -> None:
    uri = logged(tmp_path / "log.parquet", ["C-1", "C-2"])
    before = Path(uri).stat().st_mtime_ns, Path(uri).read_bytes()
    outcome = erase_store(RowStore("log", (uri,)), "customer_id", WHO, None)
    assert (outcome.files_searched, outcome.rows_removed, outcome.rewritten) == (1, 0, [])
    assert outcome.conclusive
    assert (Path(uri).stat().st_mtime_ns, Path(uri).read_bytes()) == before


def test_a_file_without_the_column_is_named_as_unsearchable(tmp_path: Path) -> None:
    uri = parquet(tmp_path / "other.parquet", pd.DataFrame({"age": [1.0], "note": [WHO]}))
    outcome = erase_store(RowStore("other", (uri,)), "customer_id", WHO, None)
    assert outcome.unsearchable == [uri] and outcome.rows_removed == 0 and not outcome.conclusive


def test_a_numeric_key_column_matches_the_value_as_text(tmp_path: Path) -> None:
    uri = parquet(tmp_path / "ids.parquet", pd.DataFrame({"customer_id": [42, 420, 4], "x": [1, 2, 3]}))
    outcome = erase_store(RowStore("ids", (uri,)), "customer_id", "42", None)
    assert outcome.rows_removed == 1 and pq.read_table(uri).column("customer_id").to_pylist() == [420, 4]


def test_a_csv_file_keeps_every_other_cell_as_written(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(f"customer_id,amount,zip\n{WHO},1.50,00123\nC-1,2.00,01000\n{WHO},3,x\n")
    outcome = erase_store(RowStore("csv", (str(path),)), "customer_id", WHO, None)
    assert outcome.rows_removed == 2
    assert path.read_text() == "customer_id,amount,zip\nC-1,2.00,01000\n"


def test_a_crash_while_rewriting_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = logged(tmp_path / "log.parquet", [WHO, "C-1"])
    original = Path(uri).read_bytes()

    def crash(src: object, dst: object) -> None:
        raise OSError("power lost")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(storage.StorageError, match="power lost"):
        erase_store(RowStore("log", (uri,)), "customer_id", WHO, None)
    assert Path(uri).read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.parquet"]  # no half-written file left


# --- labels joined to the request log by id ---


def test_labels_without_the_key_are_found_by_the_persons_request_ids(tmp_path: Path) -> None:
    log = logged(tmp_path / "requests-1.parquet", [WHO, "C-1", WHO], ids=["a", "b", "c"])
    labels = parquet(
        tmp_path / "labels.parquet",
        pd.DataFrame(
            {"request_id": ["a", "b", "c", "d"], "request_row": [0, 0, 1, 0], "label": [1, 0, 1, 0]}
        ),
    )
    result = erase(
        [RowStore("labels", (labels,), joined_by_ids=True), RowStore("log", (log,), request_log=True)],
        "customer_id",
        WHO,
        SALT,
    )
    by_store = {s.store: s for s in result.stores}
    assert [s.store for s in result.stores] == ["log", "labels"]  # the log first: its ids find the labels
    assert by_store["log"].rows_removed == 2
    # ("c", 1) is not a logged row of the person (their row of request c is row 0): kept
    assert (
        by_store["labels"].rows_removed == 1
        and "request_id and request_row" in by_store["labels"].searched_by
    )
    assert pq.read_table(labels).column("request_id").to_pylist() == ["b", "c", "d"]
    assert result.status == "erased" and result.rows_removed == 3


def test_labels_are_unsearchable_when_a_request_log_file_could_not_be_searched(tmp_path: Path) -> None:
    log = logged(tmp_path / "requests-1.parquet", [WHO], ids=["a"])
    blind = parquet(tmp_path / "requests-2.parquet", pd.DataFrame({"request_id": ["z"], "request_row": [0]}))
    labels = parquet(
        tmp_path / "labels.parquet", pd.DataFrame({"request_id": ["a", "z"], "request_row": [0, 0]})
    )
    result = erase(
        [RowStore("log", (log, blind), request_log=True), RowStore("labels", (labels,), joined_by_ids=True)],
        "customer_id",
        WHO,
        SALT,
    )
    assert [s.unsearchable for s in result.stores] == [[blind], [labels]]
    assert result.status == "not conclusive" and result.rows_removed == 1


def test_labels_with_the_key_column_are_matched_by_it(tmp_path: Path) -> None:
    labels = parquet(
        tmp_path / "labels.parquet",
        pd.DataFrame({"request_id": ["a", "b"], "request_row": [0, 0], "customer_id": [WHO, "C-1"]}),
    )
    outcome = erase_store(RowStore("labels", (labels,), joined_by_ids=True), "customer_id", WHO, set())
    assert outcome.rows_removed == 1 and outcome.searched_by == "customer_id"


# --- what cannot be rewritten is named: a signed folder ---


def test_a_file_in_a_signed_folder_is_named_not_rewritten(tmp_path: Path) -> None:
    folder = tmp_path / "card"
    uri = logged(folder / "rows.parquet", [WHO])
    before = Path(uri).read_bytes()
    event = audit.record(
        "card.signed", "m/1", {"folder": str(folder), "files": {"rows.parquet": "x"}}, workspace_root=tmp_path
    )
    guard = signed_folder_guard(audit.read_events(tmp_path))
    outcome = erase_store(RowStore("s", (uri,)), "customer_id", WHO, None, guard)
    (refusal,) = outcome.refused
    assert refusal.startswith(f"{uri}: inside {folder}") and f"audit record {event.seq}" in refusal
    assert Path(uri).read_bytes() == before and outcome.rows_removed == 0 and not outcome.conclusive
    assert guard(str(tmp_path / "cardigan" / "rows.parquet")) == ""  # a sibling folder's name is not inside
    assert guard("s3://bucket/card/rows.parquet") == ""


def test_a_guard_reads_file_uris_and_only_recorded_signed_folders(tmp_path: Path) -> None:
    folder = tmp_path / "card"
    audit.record("card.signed", "m/1", {"folder": str(folder), "files": {}}, workspace_root=tmp_path)
    audit.record("evidence.exported", "m/1", {"folder": str(tmp_path / "loose")}, workspace_root=tmp_path)
    guard = signed_folder_guard(audit.read_events(tmp_path))
    assert guard(f"file://{folder}/rows.parquet") == (
        f"inside {folder}, signed and recorded in audit record 1: rewriting it would break that "
        "signature; issue the document again from the erased data, then delete this copy"
    )
    assert guard(str(tmp_path / "loose" / "rows.parquet")) == ""  # a folder without signed files


# --- edges: each pins one decision of the erasure ---


def test_an_empty_csv_has_no_column_to_search(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("")
    assert erase_store(RowStore("csv", (str(path),)), "customer_id", WHO, None).unsearchable == [str(path)]


def test_csv_cells_that_look_missing_stay_as_written(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(f"customer_id,note\n{WHO},x\nC-1,NA\nC-2,\n")
    assert erase_store(RowStore("csv", (str(path),)), "customer_id", WHO, None).rows_removed == 1
    assert path.read_text() == "customer_id,note\nC-1,NA\nC-2,\n"


def test_rows_are_joined_only_by_both_ids_and_never_by_a_missing_one(tmp_path: Path) -> None:
    labels = parquet(
        tmp_path / "labels.parquet",
        pd.DataFrame(
            {"request_id": ["a", "a", None, "b"], "request_row": pd.Series([0, None, 0, 1], dtype="Int32")}
        ),
    )  # only the two id columns: a feedback file that named groups without labels
    ids = {("a", 0), ("None", 0), ("b", 0)}
    outcome = erase_store(RowStore("labels", (labels,), joined_by_ids=True), "customer_id", WHO, ids)
    assert outcome.rows_removed == 1 and "request_id and request_row" in outcome.searched_by
    kept = pq.read_table(labels).to_pylist()
    assert kept == [
        {"request_id": "a", "request_row": None},
        {"request_id": None, "request_row": 0},
        {"request_id": "b", "request_row": 1},
    ]


def test_a_logged_row_without_an_id_adds_no_id(tmp_path: Path) -> None:
    log = parquet(
        tmp_path / "requests-1.parquet",
        pd.DataFrame(
            {
                "customer_id": [WHO, WHO],
                "request_id": [None, "a"],
                "request_row": pd.Series([0, 0], dtype="int32"),
            }
        ),
    )
    ids: set[tuple[str, int]] = set()
    erase_store(RowStore("log", (log,), request_log=True), "customer_id", WHO, ids)
    assert ids == {("a", 0)}
    other: set[tuple[str, int]] = set()
    erase_store(RowStore("batch", (logged(tmp_path / "b.parquet", [WHO]),)), "customer_id", WHO, other)
    assert other == set()  # only a request log's rows name request-log rows


def test_every_file_of_a_store_is_searched_after_one_that_cannot_be(tmp_path: Path) -> None:
    blind = parquet(tmp_path / "a.parquet", pd.DataFrame({"x": [1]}))
    first = logged(tmp_path / "b.parquet", [WHO, "C-1"])
    second = logged(tmp_path / "c.parquet", [WHO, WHO])
    seen: list[tuple[str, int]] = []
    outcome = erase_store(
        RowStore("s", (blind, first, second)),
        "customer_id",
        WHO,
        None,
        rewritten=lambda u, n: seen.append((u, n)),
    )
    assert (outcome.files_searched, outcome.rows_removed, outcome.unsearchable) == (3, 3, [blind])
    assert seen == [(first, 1), (second, 2)]


def test_a_lock_keeps_the_file_and_a_refusal_is_not_lost_to_a_later_rewrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = logged(tmp_path / "locked.parquet", [WHO])
    signed = logged(tmp_path / "signed" / "rows.parquet", [WHO])
    plain = logged(tmp_path / "plain.parquet", [WHO])
    lock = object_lock.Retention(locked, "GOVERNANCE", "2027-01-01T00:00:00+00:00", False)
    monkeypatch.setattr(object_lock, "retention", lambda uri: lock if uri == locked else None)
    before = Path(locked).read_bytes()
    guard = lambda uri: "signed" if "/signed/" in uri else ""  # noqa: E731
    outcome = erase_store(RowStore("s", (locked, signed, plain)), "customer_id", WHO, None, guard)
    assert outcome.locked == [lock] and outcome.refused == [f"{signed}: signed"]
    assert outcome.rewritten == [plain] and outcome.rows_removed == 1
    assert Path(locked).read_bytes() == before


def test_unknown_ids_leave_joined_rows_unsearchable_and_known_ids_find_them(tmp_path: Path) -> None:
    labels = parquet(tmp_path / "labels.parquet", pd.DataFrame({"request_id": ["z"], "request_row": [3]}))
    store = RowStore("labels", (labels,), joined_by_ids=True)
    assert erase([store], "customer_id", WHO, SALT, known_ids=None).stores[0].unsearchable == [labels]
    seen: list[str] = []
    result = erase(
        [store], "customer_id", WHO, SALT, rewritten=lambda u, n: seen.append(u), known_ids=[("z", 3)]
    )
    assert result.rows_removed == 1 and seen == [labels] and result.column == "customer_id"


def test_a_file_is_parquet_by_its_bytes_whatever_its_name(tmp_path: Path) -> None:
    import pandas as pd

    from mlops.governance.erasure import is_parquet_bytes, is_row_file

    artifact = tmp_path / "dataset"  # KFP's name for a step's Dataset artifact
    pd.DataFrame({"customer_id": ["C-1"]}).to_parquet(artifact, index=False)
    assert is_parquet_bytes(artifact) and is_row_file(str(artifact))
    text = tmp_path / "notes"
    text.write_bytes(b"PAR1 looks like it at the start only")
    assert not is_parquet_bytes(text) and not is_row_file(str(text))
    tiny = tmp_path / "tiny"
    tiny.write_bytes(b"PAR1PAR1")  # both markers, but too small to be Parquet
    assert not is_parquet_bytes(tiny)
    exact = tmp_path / "exact"
    exact.write_bytes(b"PAR1" + b"\0" * 4 + b"PAR1")  # the smallest size that passes the size rule
    assert is_parquet_bytes(exact)
    assert not is_parquet_bytes(tmp_path / "missing") and not is_row_file(str(tmp_path / "missing"))
    assert is_row_file("s3://bucket/x.parquet") and not is_row_file("s3://bucket/dataset")
