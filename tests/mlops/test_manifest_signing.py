"""Signed manifests of documents (model cards, evidence packs): verified offline with openssl, edits named."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mlops.governance.audit import AuditEvent
from mlops.governance.manifest_signing import (
    MANIFEST_FILE,
    SIGNATURE_FILE,
    SignedOutputs,
    parse_manifest,
    sign_folder,
    signed_outputs,
    signed_outputs_problems,
    verify_folder,
)
from mlops.governance.signing import generate_key_pair, key_id
from mlops.governance.trusted_key import TrustedKey
from mlops.origin_facts import file_sha256

OPENSSL = shutil.which("openssl")


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    return generate_key_pair(tmp_path / "keys")


def _trusting(public: Path) -> TrustedKey:
    return TrustedKey.from_file(public, "test key")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    directory = tmp_path / "card"
    (directory / "sub").mkdir(parents=True)
    (directory / "model_card.json").write_text('{"schema_version": "0.0.2"}\n')
    (directory / "sub" / "report.html").write_text("<html>report</html>")
    return directory


def test_signed_folder_verifies_with_openssl_alone(folder: Path, keys: tuple[Path, Path]) -> None:
    private, public = keys
    signed = sign_folder(folder, private)
    checked = verify_folder(folder, _trusting(public))
    assert checked.problems == []
    assert checked.signer == checked.shipped == checked.trusted == key_id(public) == signed.key_id
    assert signed.files == {
        "model_card.json": file_sha256(folder / "model_card.json"),
        "sub/report.html": file_sha256(folder / "sub" / "report.html"),
    }
    assert signed.manifest_sha256 == file_sha256(folder / MANIFEST_FILE)
    assert parse_manifest((folder / MANIFEST_FILE).read_text()) == signed.files
    assert OPENSSL, "openssl is needed to check offline verification: apt-get install -y openssl"
    checked = subprocess.run(
        [OPENSSL, "dgst", "-sha256", "-verify", "signing.pub", "-signature", SIGNATURE_FILE, MANIFEST_FILE],
        cwd=folder, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert checked.returncode == 0 and "Verified OK" in checked.stdout
    sums = subprocess.run(
        ["sha256sum", "-c", MANIFEST_FILE], cwd=folder, capture_output=True, text=True, check=False
    )
    assert sums.returncode == 0, sums.stdout + sums.stderr


def test_an_edited_file_is_named(folder: Path, keys: tuple[Path, Path]) -> None:
    sign_folder(folder, keys[0])
    (folder / "sub" / "report.html").write_text("<html>report!</html>")
    problems = verify_folder(folder, _trusting(keys[1])).problems
    assert len(problems) == 1 and problems[0].startswith("sub/report.html was edited after signing")


def test_an_edited_manifest_fails_its_signature_even_with_matching_sums(
    folder: Path, keys: tuple[Path, Path]
) -> None:
    sign_folder(folder, keys[0])
    (folder / "model_card.json").write_text('{"schema_version": "9"}\n')
    text = (folder / MANIFEST_FILE).read_text().splitlines()
    text = [
        f"{file_sha256(folder / 'model_card.json')}  model_card.json"
        if line.endswith("model_card.json")
        else line
        for line in text
    ]
    (folder / MANIFEST_FILE).write_text("\n".join(text) + "\n")
    checked = verify_folder(folder, _trusting(keys[1]))
    assert checked.problems == [
        f"{MANIFEST_FILE} does not match its signature by the trusted key {key_id(keys[1])}: "
        "the manifest or its signature was edited after signing"
    ]
    assert checked.signer == ""
    checked = subprocess.run(
        [str(OPENSSL), "dgst", "-sha256", "-verify", "signing.pub", "-signature", SIGNATURE_FILE, MANIFEST_FILE],
        cwd=folder, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert checked.returncode != 0


def test_added_and_deleted_files_and_another_key_are_named(
    folder: Path, keys: tuple[Path, Path], tmp_path: Path
) -> None:
    sign_folder(folder, keys[0])
    (folder / "extra.txt").write_text("slipped in")
    (folder / "model_card.json").unlink()
    problems = verify_folder(folder, TrustedKey.pinned_id("0" * 16)).problems
    assert any("model_card.json is missing" in p for p in problems)
    assert any("extra.txt is not in the signed manifest" in p for p in problems)
    assert (
        f"signed with key {key_id(keys[1])} (the key shipped inside), not the trusted key {'0' * 16}"
        in problems[0]
    )
    unsigned = tmp_path / "unsigned"
    unsigned.mkdir()
    assert "was never signed" in verify_folder(unsigned, _trusting(keys[1])).problems[0]


def test_audit_records_of_signed_folders_catch_an_edit(folder: Path, keys: tuple[Path, Path]) -> None:
    signed = sign_folder(folder, keys[0])
    event = AuditEvent(
        "card.signed",
        "m/1",
        {"folder": str(folder), "files": signed.files, "manifest_sha256": signed.manifest_sha256},
        seq=7,
    )
    assert signed_outputs_problems([event]) == []
    (folder / "model_card.json").write_text("{}\n")
    (problem,) = signed_outputs_problems([event])
    assert problem.startswith("record 7 (card.signed m/1): model_card.json was edited after signing")
    # Re-signing after the edit does not help: the trail recorded the manifest that was signed first.
    sign_folder(folder, keys[0])
    problems = signed_outputs_problems([event])
    assert any(f"{MANIFEST_FILE} in {folder} is not the manifest that was signed" in p for p in problems)
    shutil.rmtree(folder)  # a moved or deleted folder is not an edit
    assert signed_outputs_problems([event]) == []
    assert signed_outputs([event]) == SignedOutputs(checked=0, gone=1, problems=[])


def test_signed_outputs_count_the_folders_checked_and_gone(folder: Path, keys: tuple[Path, Path]) -> None:
    signed = sign_folder(folder, keys[0])
    details = {"folder": str(folder), "files": signed.files, "manifest_sha256": signed.manifest_sha256}
    here = AuditEvent("card.signed", "m/1", details, seq=1)
    gone = AuditEvent("card.signed", "m/2", {**details, "folder": str(folder) + "-moved"}, seq=2)
    unrelated = AuditEvent("alias.moved", "m/1", {"alias": "champion"}, seq=3)
    result = signed_outputs([here, gone, unrelated])
    assert (result.checked, result.gone, result.problems) == (1, 1, [])


def test_a_manifest_re_signed_with_a_foreign_key_fails_against_the_trusted_key(
    folder: Path, keys: tuple[Path, Path], tmp_path: Path
) -> None:
    """An edited file, the manifest re-signed with a fresh P-256 key shipped beside it: every
    digest and the signature agree with the shipped key, so only the trusted key tells."""
    sign_folder(folder, keys[0])
    (folder / "model_card.json").write_text('{"schema_version": "0.0.2", "edited": true}\n')
    foreign_private, foreign_public = generate_key_pair(tmp_path / "foreign")
    sign_folder(folder, foreign_private)
    ours, theirs = key_id(keys[1]), key_id(foreign_public)

    checked = verify_folder(folder, _trusting(keys[1]))
    assert checked.problems == [
        f"signed with key {theirs} (the key shipped inside), not the trusted key {ours} "
        f"(test key {keys[1]}): the manifest was re-signed with another key"
    ]
    assert (checked.signer, checked.shipped, checked.trusted) == (theirs, theirs, ours)
    # Pinned by id, the same; trusting the shipped key, the files are only shown unchanged since *that* key signed.
    assert verify_folder(folder, TrustedKey.pinned_id(ours)).signer == theirs
    assert verify_folder(folder, TrustedKey.pinned_id(ours)).problems != []
    shipped = verify_folder(folder, TrustedKey.shipped())
    assert (shipped.problems, shipped.signer, shipped.trusted) == ([], theirs, theirs)
    assert verify_folder(folder, _trusting(foreign_public)).problems == []


def test_a_replaced_shipped_key_is_named_though_the_trusted_key_signed(
    folder: Path, keys: tuple[Path, Path], tmp_path: Path
) -> None:
    sign_folder(folder, keys[0])
    other = generate_key_pair(tmp_path / "other")[1]
    shutil.copyfile(other, folder / "signing.pub")
    checked = verify_folder(folder, _trusting(keys[1]))
    assert checked.signer == key_id(keys[1])
    assert checked.problems == [
        f"signing.pub is key {key_id(other)}, not the key that signed ({key_id(keys[1])}): the shipped public "
        "key was replaced, so an offline openssl check against it fails"
    ]
    # The key pinned by id is the shipped one, which did not sign: nothing verifies.
    pinned = verify_folder(folder, TrustedKey.pinned_id(key_id(other)))
    assert pinned.signer == "" and "does not match its signature by the trusted key" in pinned.problems[0]
