"""Evidence packs: verified against a key the verifier trusts, holding only their model's audit records.

A workspace with two models (census income and bank marketing, interleaved in one audit trail)
and a signed card; the pack of one is built with :func:`build_pack` as ``mlops evidence`` builds
it. Checked: the other model's records and data paths stay out while the chain still links the
pack's records to the head; a record replaced and re-hashed under its own sequence number is
caught by the chain; a pack re-signed with a fresh key fails by default and passes only with
``--trust-key-in-pack``, which the report says.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cli.main import main
from mlops.governance import audit
from mlops.governance.audit import content_hash, read_events
from mlops.governance.evidence_pack import (
    ANCHOR,
    SEGMENT,
    WITHHELD,
    build_pack,
    segment,
    verify_pack,
    verify_segment,
)
from mlops.governance.manifest_signing import sign_folder
from mlops.governance.signing import KEYS_DIR, PRIVATE_KEY_FILE, PUBLIC_KEY_FILE, generate_key_pair, key_id
from mlops.governance.trusted_key import TrustedKey, TrustError, choose

CENSUS, BANK = "census-income", "bank-marketing"
CENSUS_DATA, BANK_DATA = "/data/adult-census.csv", "/data/bank-additional-full.csv"
CENSUS_DIGEST, BANK_DIGEST = "c" * 64, "b" * 64


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two models' pipeline runs interleaved in one trail, and the workspace's key pair."""
    for variable in (audit.AUDIT_URI_ENV, "MLOPS_SIGNING_KEY", "MLOPS_SIGNING_PUBLIC_KEY"):
        monkeypatch.delenv(variable, raising=False)
    root = tmp_path / "ws"
    generate_key_pair(root / KEYS_DIR)

    def rec(action: str, subject: str, details: dict[str, object], **links: str) -> None:
        audit.record(action, subject, details, links=links, workspace_root=root)

    rec(
        "data.validated",
        CENSUS_DATA,
        {"dataset_digest": CENSUS_DIGEST, "success": True},
        pipeline_run_id="run-c",
    )
    rec(
        "data.validated", BANK_DATA, {"dataset_digest": BANK_DIGEST, "success": True}, pipeline_run_id="run-b"
    )
    rec("training_job.created", "TrainJob/default/job-c", {"image": "mlops:1"}, pipeline_run_id="run-c")
    rec(
        "model.registered",
        f"{CENSUS}/1",
        {"source": "runs:/c"},
        pipeline_run_id="run-c",
        model_version=f"{CENSUS}/1",
    )
    rec(
        "model.registered",
        f"{BANK}/1",
        {"source": "runs:/b"},
        pipeline_run_id="run-b",
        model_version=f"{BANK}/1",
    )
    rec("gate.decided", f"{CENSUS}/1", {"decision": "promote"}, pipeline_run_id="run-c")
    rec("gate.decided", f"{BANK}/1", {"decision": "promote"}, pipeline_run_id="run-b")
    rec("alias.moved", f"{CENSUS}/1", {"alias": "champion"}, model_version=f"{CENSUS}/1")
    rec("retrain.triggered", BANK, {"why": "drift psi 0.31"})
    rec("card.signed", f"{CENSUS}/1", {"alias": "champion"}, model_version=f"{CENSUS}/1")
    rec("alias.moved", f"{BANK}/1", {"alias": "champion"}, model_version=f"{BANK}/1")
    return root


CENSUS_SEQS = [1, 3, 4, 6, 8, 10]
"""The census model's records in the fixture's trail: its data, its run's job, registration, gate, alias, card."""


def _pack(workspace: Path, out: Path) -> Path:
    card = workspace / "card"
    card.mkdir()
    (card / "model_card.json").write_text('{"schema_version": "0.0.2", "auc": 0.914}\n')
    sign_folder(card, workspace / KEYS_DIR / PRIVATE_KEY_FILE)
    reports = workspace / "reports"
    (reports / "evaluate").mkdir(parents=True)
    (reports / "evaluate" / "metrics.json").write_text('{"roc_auc": 0.914}\n')
    trail = segment(read_events(workspace), CENSUS, "1", CENSUS_DIGEST)
    build_pack(
        out, card, reports, trail, (CENSUS, "champion", "1"), {"lineage.txt": f"{CENSUS}@champion\n"}, None,
        workspace / KEYS_DIR / PRIVATE_KEY_FILE, [], 10,
    )  # fmt: skip
    return out


def _workspace_trust(workspace: Path) -> TrustedKey:
    return choose(None, "", False, workspace)


def _unzip(pack: Path, into: Path) -> Path:
    with zipfile.ZipFile(pack) as archive:
        archive.extractall(into)
    return into


def _rezip(folder: Path, out: Path) -> Path:
    with zipfile.ZipFile(out, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return out


def _segment_lines(folder: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (folder / SEGMENT).read_text().splitlines()]


def _write_segment(folder: Path, lines: list[dict[str, object]]) -> None:
    (folder / SEGMENT).write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines))


def test_the_pack_holds_only_its_models_records_and_the_links_between(
    workspace: Path, tmp_path: Path
) -> None:
    pack = _pack(workspace, tmp_path / "census.zip")
    with zipfile.ZipFile(pack) as archive:
        everything = b"".join(archive.read(name) for name in archive.namelist())
    for other in (BANK, BANK_DATA, BANK_DIGEST, "run-b", "psi 0.31"):
        assert other.encode() not in everything, f"{other!r} leaked into the census model's pack"

    folder = _unzip(pack, tmp_path / "unpacked")
    lines = _segment_lines(folder)
    trail = read_events(workspace)
    assert [line["seq"] for line in lines] == list(range(1, len(trail) + 1))  # up to the head: no gap
    whole = [line for line in lines if WITHHELD not in line]
    assert [line["seq"] for line in whole] == CENSUS_SEQS
    assert whole == [json.loads(json.dumps(vars(e))) for e in trail if e.seq in CENSUS_SEQS]
    for line in lines:
        if WITHHELD in line:
            assert set(line) == {"seq", "prev_hash", "hash", WITHHELD}
            assert line["hash"] == trail[int(str(line["seq"])) - 1].hash  # checkable against the live trail
    anchor = json.loads((folder / ANCHOR).read_text())
    assert anchor["records_about_this_model"] == CENSUS_SEQS
    assert anchor["head"] == {"seq": trail[-1].seq, "hash": trail[-1].hash}

    # The links prove the census records are part of one chain ending at the head.
    checked = verify_pack(pack, _workspace_trust(workspace))
    assert checked.problems == []
    system_python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    offline = subprocess.run(
        [system_python, "-I", "verify_audit_segment.py", SEGMENT], cwd=folder, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert offline.returncode == 0, offline.stderr
    assert f"records up to {trail[-1].seq}, last hash {trail[-1].hash}" in offline.stdout


def test_the_segment_starts_at_the_models_first_record(workspace: Path) -> None:
    bank = segment(read_events(workspace), BANK, "1", BANK_DIGEST)
    assert bank.records[0].seq == 2 and sorted(bank.about) == [2, 5, 7, 9, 11]
    assert [line.get(WITHHELD, False) for line in bank.lines()][:2] == [False, True]


def _replace_and_rehash(line: dict[str, object]) -> dict[str, object]:
    """The record with one detail changed and its own hash recomputed: its seq and prev_hash kept."""
    forged = {**line, "details": {**dict(line["details"]), "decision": "reject"}}  # type: ignore[dict-item]
    forged["hash"] = content_hash(forged)
    return forged


def test_a_record_replaced_and_rehashed_under_its_own_number_breaks_the_chain(
    workspace: Path, tmp_path: Path
) -> None:
    """Its own hash checks out and its number is in sequence: only the next record's link tells."""
    folder = _unzip(_pack(workspace, tmp_path / "census.zip"), tmp_path / "unpacked")
    lines = _segment_lines(folder)
    gate = next(i for i, line in enumerate(lines) if line.get("action") == "gate.decided")
    assert lines[gate]["seq"] == 6
    lines[gate] = _replace_and_rehash(lines[gate])
    text = [json.dumps(line, sort_keys=True) for line in lines]
    assert verify_segment(text) == [f"{SEGMENT} record 7 does not chain to record 6"]

    # In the pack, re-signed with the workspace's own key (an insider's edit): the chain still names it.
    _write_segment(folder, lines)
    sign_folder(folder, workspace / KEYS_DIR / PRIVATE_KEY_FILE)
    checked = verify_pack(_rezip(folder, tmp_path / "forged.zip"), _workspace_trust(workspace))
    assert checked.problems == [f"{SEGMENT} record 7 does not chain to record 6"]
    offline = subprocess.run(
        [sys.executable, "-I", "verify_audit_segment.py", SEGMENT], cwd=folder, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert offline.returncode != 0 and "record 7 (line 7) does not chain to record 6" in offline.stderr


def test_a_withheld_link_replaced_or_a_record_removed_is_named(workspace: Path, tmp_path: Path) -> None:
    folder = _unzip(_pack(workspace, tmp_path / "census.zip"), tmp_path / "unpacked")
    lines = _segment_lines(folder)
    as_text = [json.dumps(line, sort_keys=True) for line in lines]
    assert verify_segment(as_text) == []
    relinked = [dict(line) for line in lines]
    relinked[1]["hash"] = "f" * 64  # record 2 (the bank model's, withheld)
    assert verify_segment([json.dumps(line) for line in relinked]) == [
        f"{SEGMENT} record 3 does not chain to record 2"
    ]
    assert verify_segment(as_text[:3] + as_text[4:]) == [
        f"{SEGMENT} record 5 does not follow record 3 (a record was removed)"
    ]
    leaking = [dict(line) for line in lines]
    leaking[1]["subject"] = BANK_DATA
    assert verify_segment([json.dumps(line) for line in leaking]) == [
        f"{SEGMENT} record 2 is marked withheld but carries subject"
    ]
    edited = [dict(line) for line in lines]
    edited[0]["subject"] = "/data/other.csv"
    assert verify_segment([json.dumps(line) for line in edited]) == [
        f"{SEGMENT} record 1 was edited: its content does not match its hash"
    ]


def test_an_anchor_that_disagrees_with_the_segment_is_named(workspace: Path, tmp_path: Path) -> None:
    folder = _unzip(_pack(workspace, tmp_path / "census.zip"), tmp_path / "unpacked")
    lines = _segment_lines(folder)
    _write_segment(folder, lines[:-1])  # the last record (seq 11) cut off: the chain alone cannot tell
    assert verify_segment([json.dumps(line) for line in lines[:-1]]) == []
    anchor = json.loads((folder / ANCHOR).read_text())
    anchor["records_about_this_model"] = CENSUS_SEQS[:-1]
    (folder / ANCHOR).write_text(json.dumps(anchor))
    sign_folder(folder, workspace / KEYS_DIR / PRIVATE_KEY_FILE)
    problems = verify_pack(_rezip(folder, tmp_path / "cut.zip"), _workspace_trust(workspace)).problems
    assert problems == [
        f"{ANCHOR} records the head {anchor['head']}, the segment ends at record 10 (hash {str(lines[-2]['hash'])[:12]})",
        f"{ANCHOR} lists records {CENSUS_SEQS[:-1]} as this model's, the segment holds {CENSUS_SEQS} whole",
    ]


def _re_signed_with_a_fresh_key(workspace: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The census pack with a report and the card edited, both manifests re-signed with a fresh P-256 key."""
    folder = _unzip(_pack(workspace, tmp_path / "census.zip"), tmp_path / "unpacked")
    (folder / "reports" / "evaluate" / "metrics.json").write_text('{"roc_auc": 0.99}\n')
    (folder / "card" / "model_card.json").write_text('{"schema_version": "0.0.2", "auc": 0.99}\n')
    private, public = generate_key_pair(tmp_path / "foreign")
    sign_folder(folder / "card", private)
    sign_folder(folder, private)
    return _rezip(folder, tmp_path / "re-signed.zip"), public


def test_cli_a_pack_re_signed_with_a_fresh_key_fails_by_default(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack, foreign = _re_signed_with_a_fresh_key(workspace, tmp_path)
    ours, theirs = key_id(workspace / KEYS_DIR / PUBLIC_KEY_FILE), key_id(foreign)
    assert main(["--workspace", str(workspace), "evidence", "--verify", str(pack)]) == 1
    out = capsys.readouterr().out
    assert f"trusted key       {ours} (workspace key {workspace / KEYS_DIR / PUBLIC_KEY_FILE})" in out
    assert f"signed by         key {theirs}, NOT the trusted key {ours}" in out
    assert f"card signed by    key {theirs}, NOT the trusted key {ours}" in out
    assert "verdict           TAMPERED: 2 problem(s)" in out
    assert f"  - signed with key {theirs} (the key shipped inside), not the trusted key {ours}" in out
    assert f"  - card/: signed with key {theirs} (the key shipped inside), not the trusted key {ours}" in out
    assert "intact" not in out

    # Pinned by the published id instead of a file: the same verdict.
    assert main(["--workspace", str(workspace), "evidence", "--verify", str(pack), "--key-id", ours]) == 1
    assert f"signed by         key {theirs}, NOT the trusted key {ours}" in capsys.readouterr().out


def test_cli_trusting_the_key_in_the_pack_passes_and_says_so(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack, foreign = _re_signed_with_a_fresh_key(workspace, tmp_path)
    theirs = key_id(foreign)
    assert (
        main(["--workspace", str(workspace), "evidence", "--verify", str(pack), "--trust-key-in-pack"]) == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert "trusted key       none of yours: the key shipped inside (--trust-key-in-pack)" in out
    assert f"signed by         key {theirs} (the key shipped inside)" in out
    (warning,) = [line for line in out if line.startswith("warning ")]
    assert warning == (
        f"warning           trusted the key shipped inside ({theirs}) because --trust-key-in-pack was given: "
        "this shows the files are unchanged since that key signed them, not that the platform signed them; "
        "compare the key id with the one the platform publishes"
    )
    assert out[-1] == (
        "verdict           intact: every file matches the manifests signed by the key shipped inside, "
        "and the audit segment chains to its head"
    )
    # The foreign key given as the trusted one: it passes, naming that key, without the warning.
    assert (
        main(
            ["--workspace", str(workspace), "evidence", "--verify", str(pack), "--trusted-key", str(foreign)]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"trusted key       {theirs} (--trusted-key {foreign})" in out and "warning" not in out


def test_cli_an_untouched_pack_passes_against_the_workspace_key_and_names_it(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = _pack(workspace, tmp_path / "census.zip")
    ours = key_id(workspace / KEYS_DIR / PUBLIC_KEY_FILE)
    assert main(["--workspace", str(workspace), "evidence", "--verify", str(pack)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"evidence pack     {pack}",
        f"trusted key       {ours} (workspace key {workspace / KEYS_DIR / PUBLIC_KEY_FILE})",
        f"signed by         key {ours} (the trusted key)",
        f"card signed by    key {ours} (the trusted key)",
        f"verdict           intact: every file matches the manifests signed by the trusted key {ours}, "
        "and the audit segment chains to its head",
    ]


def test_cli_no_trusted_key_is_not_a_pass(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = _pack(workspace, tmp_path / "census.zip")
    elsewhere = tmp_path / "reviewer"
    assert main(["--workspace", str(elsewhere), "evidence", "--verify", str(pack)]) == 2
    err = capsys.readouterr().err
    assert (
        "no trusted key to verify against" in err
        and "--trusted-key PATH" in err
        and "--trust-key-in-pack" in err
    )
    shipped_and_id = ["--trust-key-in-pack", "--key-id", key_id(workspace / KEYS_DIR / PUBLIC_KEY_FILE)]
    assert main(["--workspace", str(elsewhere), "evidence", "--verify", str(pack), *shipped_and_id]) == 2
    assert "give one of --key-id, --trust-key-in-pack" in capsys.readouterr().err
    assert main(["--workspace", str(elsewhere), "evidence", "--verify", str(pack), "--key-id", "ABC"]) == 2
    assert "--key-id 'ABC' is not a key id: it is 16 lower-case hex digits" in capsys.readouterr().err
    private = workspace / KEYS_DIR / PRIVATE_KEY_FILE
    assert (
        main(
            ["--workspace", str(elsewhere), "evidence", "--verify", str(pack), "--trusted-key", str(private)]
        )
        == 2
    )
    assert f"--trusted-key: {private} is not a PEM public key" in capsys.readouterr().err


def test_the_environments_public_key_is_the_default_trust(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = generate_key_pair(tmp_path / "cluster")[1]
    monkeypatch.setenv("MLOPS_SIGNING_PUBLIC_KEY", str(other))
    trust = choose(None, "", False, workspace)
    assert (trust.public_key, trust.key_id, trust.source) == (
        other, key_id(other), f"MLOPS_SIGNING_PUBLIC_KEY {other}"
    )  # fmt: skip
    problems = verify_pack(_pack(workspace, tmp_path / "census.zip"), trust).problems
    assert problems and problems[0].startswith(
        f"signed with key {key_id(workspace / KEYS_DIR / PUBLIC_KEY_FILE)}"
    )
    with pytest.raises(TrustError, match="does not exist"):
        choose(tmp_path / "missing.pub", "", False, workspace)


def test_cli_card_verify_uses_the_same_trust(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _unzip(_re_signed_with_a_fresh_key(workspace, tmp_path)[0], tmp_path / "again") / "card"
    ours = key_id(workspace / KEYS_DIR / PUBLIC_KEY_FILE)
    assert main(["--workspace", str(workspace), "card", "--verify", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"signed by         key {key_id(folder / 'signing.pub')}, NOT the trusted key {ours}" in out
    assert main(["--workspace", str(workspace), "card", "--verify", str(folder), "--trust-key-in-pack"]) == 0
    assert "warning           trusted the key shipped inside" in capsys.readouterr().out
    card = workspace / "card"  # the one _pack signed with the workspace key
    assert main(["--workspace", str(workspace), "card", "--verify", str(card)]) == 0
    assert f"signed by         key {ours} (the trusted key)" in capsys.readouterr().out
