"""`mlops card` and `mlops evidence` on a freshly trained model of a user dataset run, slice floors included.

One training run (module fixture) on the sample's shape written as a user CSV with a schema file
declaring slices and a partly filled ``card:`` block; the labels of applicants under 35 are
flipped, a planted segment the model fails while its overall figures look fine. Then: the slice
floors block it; the card is written, signed and recorded, an edit is named by ``mlops audit
verify`` and by openssl; the evidence pack verifies offline (openssl, sha256sum, the system's
python3 without this platform), against the workspace's key by default, and a tampered file in it is named.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from components.data_validation.suite import DEFAULT_SUITE_PATH
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.governance.audit import read_events
from mlops.settings import section_values
from mlops.tracking.store import TrackingStore

pytestmark = pytest.mark.slow

MODEL = "credit-default"
MCT_V002_TOP_LEVEL = {
    "schema_version",
    "model_details",
    "model_parameters",
    "quantitative_analysis",
    "considerations",
}
"""The Model Card Toolkit v0.0.2 schema's top-level properties (it sets additionalProperties: false)."""
FILLED = {"overview", "intended_uses", "limitations"}
OPENSSL = shutil.which("openssl")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("card")
    frame = generate(SampleDataConfig(rows=4000, seed=1))
    young = (frame["age"] < 35).to_numpy()
    frame.loc[young, "default"] = 1 - frame.loc[young, "default"]  # the planted failing segment
    frame.to_csv(root / "loans.csv", index=False)
    declaration = section_values(SAMPLE_SCHEMA)
    declaration["slices"] = [{"columns": ["age"], "bins": {"age": [18, 35, 50, 90]}}, {"columns": ["sex"]}]
    declaration["expectation_suite"] = str(DEFAULT_SUITE_PATH)
    declaration["card"] = {
        "overview": "Probability that a loan applicant defaults.",
        "intended_uses": ["rank applications for manual review"],
        "limitations": ["trained on synthetic data"],
    }
    schema = root / "loans.schema.yaml"
    schema.write_text(yaml.safe_dump(declaration, sort_keys=False))
    workspace = root / "ws"
    code = main(
        ["--workspace", str(workspace), "run", "training", "--data", str(root / "loans.csv"), "--schema", str(schema),
         "--train.epochs", "10", "--train.batch_size", "256", "--train.model.hidden_units", "32,16",
         "--set", 'gate.slice_floors={"roc_auc": 0.65}']
    )  # fmt: skip
    assert code == 0
    return {"root": root, "workspace": workspace, "schema": schema}


def _ws(trained: dict[str, Any]) -> list[str]:
    return ["--workspace", str(trained["workspace"])]


def _client(trained: dict[str, Any]) -> Any:
    return TrackingStore.from_uri(f"sqlite:///{trained['workspace']}/mlflow.db")._client


def test_slice_floor_blocks_the_planted_segment(trained: dict[str, Any]) -> None:
    version = _client(trained).get_model_version_by_alias(MODEL, "challenger")
    tags = dict(version.tags)
    assert tags["mlops.gate.slices.decision"] == "reject"
    assert "slice age=[18, 35)" in tags["mlops.gate.slices.reason"]
    assert "is below the floor 0.6500" in tags["mlops.gate.slices.reason"]
    assert tags["mlops.decision"] == "reject"  # the version was not promoted
    assert "champion" not in _client(trained).get_registered_model(MODEL).aliases


def test_card_is_signed_recorded_and_says_what_is_empty(
    trained: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    out = trained["root"] / "card"
    code = main(
        [*_ws(trained), "card", f"{MODEL}@challenger", "--schema", str(trained["schema"]), "--out", str(out)]
    )
    assert code == 0
    printed = capsys.readouterr().out
    card = json.loads((out / "model_card.json").read_text())
    facts = json.loads((out / "mlops_facts.json").read_text())
    html = (out / "model_card.html").read_text()

    assert set(card) == MCT_V002_TOP_LEVEL and card["schema_version"] == "0.0.2"
    expected_empty = sorted(
        f"card.{f}" for f in ("overview", "intended_uses", "intended_users", "out_of_scope_uses", "limitations",
                              "ethical_considerations", "human_oversight", "owners", "contact", "license")
        if f not in FILLED
    )  # fmt: skip
    assert sorted(facts["empty_fields"]) == expected_empty
    assert "still empty       card.intended_users" in printed
    assert "card.intended_users is empty" in html and "rank applications for manual review" in html
    assert card["considerations"]["use_cases"] == [{"description": "rank applications for manual review"}]

    # Figures are the ones the evaluation run logged, overall and per slice, with intervals.
    client = _client(trained)
    version = client.get_model_version_by_alias(MODEL, "challenger")
    metrics = card["quantitative_analysis"]["performance_metrics"]
    overall = next(m for m in metrics if m["type"] == "roc_auc" and m["slice"] == "")
    (evaluation,) = client.search_runs(
        [client.get_experiment_by_name("training").experiment_id], "tags.`mlops.task` = 'evaluate'"
    )
    assert overall["value"] == pytest.approx(evaluation.data.metrics["test_roc_auc"])
    young = next(m for m in metrics if m["type"] == "roc_auc" and m["slice"] == "age=[18, 35)")
    ci = young["confidence_interval"]
    assert ci["lower_bound"] <= young["value"] <= ci["upper_bound"] < 0.65 and young["n_rows"] > 50
    fairness = next(
        m for m in metrics if m["type"] == "demographic_parity_difference" and m["slice"] == "sex"
    )
    assert fairness["confidence_interval"]["lower_bound"] <= fairness["value"]

    gates = {g["gate"]: g for g in facts["gate_decisions"]}
    assert gates["slices"]["decision"] == "reject" and gates["overall"]["decision"] == "reject"
    assert all(isinstance(g["audit_seq"], int) for g in gates.values())
    assert facts["lineage"]["dataset_digest"] == version.tags["mlops.dataset_digest"]
    assert facts["training_data"]["validation"]["passed"] is True
    assert facts["explanations"]["attributions"], "the permutation importances reach the card"
    assert [h["alias"] for h in facts["deployment_history"]] == ["challenger"]

    # Signed, and the signature's manifest is in the audit trail.
    last = read_events(trained["workspace"])[-1]
    assert last.action == "card.signed" and last.subject == f"{MODEL}/{version.version}"
    manifest = (out / "SHA256SUMS").read_bytes()
    assert last.details["manifest_sha256"] == hashlib.sha256(manifest).hexdigest()
    assert last.details["signing_key_id"] == version.tags["mlops.signing_key_id"]
    assert main([*_ws(trained), "audit", "verify"]) == 0

    # An edit after signing: `mlops audit verify` names it, and so does openssl/sha256sum offline.
    edited = json.loads((out / "model_card.json").read_text())
    overall_edit = next(
        m for m in edited["quantitative_analysis"]["performance_metrics"] if m["type"] == "roc_auc"
    )
    overall_edit["value"] = 0.99
    (out / "model_card.json").write_text(json.dumps(edited))
    capsys.readouterr()
    assert main([*_ws(trained), "audit", "verify"]) == 1
    report = capsys.readouterr().out
    assert "TAMPERED" in report and "model_card.json was edited after signing" in report
    sums = subprocess.run(
        ["sha256sum", "-c", "SHA256SUMS"], cwd=out, capture_output=True, text=True, check=False
    )
    assert sums.returncode != 0 and "model_card.json: FAILED" in sums.stdout
    shutil.rmtree(out)  # the signed card is gone: the trail itself stays intact
    assert main([*_ws(trained), "audit", "verify"]) == 0


def _unzip(pack: Path, into: Path) -> Path:
    with zipfile.ZipFile(pack) as archive:
        archive.extractall(into)
    return into


def test_evidence_pack_verifies_offline_and_names_a_tampered_file(
    trained: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    pack = trained["root"] / "evidence.zip"
    code = main(
        [
            *_ws(trained),
            "evidence",
            f"{MODEL}@challenger",
            "--schema",
            str(trained["schema"]),
            "--out",
            str(pack),
        ]
    )
    assert code == 0
    key = _client(trained).get_model_version_by_alias(MODEL, "challenger").tags["mlops.signing_key_id"]
    capsys.readouterr()
    assert main([*_ws(trained), "evidence", "--verify", str(pack)]) == 0  # against the workspace's key
    verified = capsys.readouterr().out
    assert (
        f"signed by         key {key} (the trusted key)" in verified
        and "verdict           intact" in verified
    )
    assert main(["evidence", "--verify", str(pack), "--key-id", key]) == 0  # a reviewer holding only the id
    assert "intact" in capsys.readouterr().out

    # Offline, without this platform: coreutils, openssl and the system's python3 (no venv, no mlops).
    folder = _unzip(pack, trained["root"] / "unpacked")
    names = set((folder / "SHA256SUMS").read_text().split()[1::2])
    for expected in ("card/model_card.json", "audit/segment.jsonl", "lineage.txt", "VERIFY.md", "ANNEX_IV.md",
                     "signatures/model.sig", "reports/evaluate/evaluation/metrics.json",
                     "reports/gate_model_validation/model_validation/report.json",
                     "reports/data_validation/validation/report.json"):  # fmt: skip
        assert expected in names, sorted(names)
    assert OPENSSL, "openssl is needed to check offline verification: apt-get install -y openssl"
    for where in (folder, folder / "card"):
        checked = subprocess.run(
            [OPENSSL, "dgst", "-sha256", "-verify", "signing.pub", "-signature", "SHA256SUMS.sig", "SHA256SUMS"],
            cwd=where, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert checked.returncode == 0, checked.stdout + checked.stderr
        sums = subprocess.run(
            ["sha256sum", "-c", "SHA256SUMS"], cwd=where, capture_output=True, text=True, check=False
        )
        assert sums.returncode == 0, sums.stdout
    der = subprocess.run(
        [OPENSSL, "pkey", "-pubin", "-in", "signing.pub", "-outform", "DER"],
        cwd=folder,
        capture_output=True,
        check=True,
    ).stdout
    assert hashlib.sha256(der).hexdigest()[:16] == key
    system_python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    segment = subprocess.run(
        [system_python, "-I", "verify_audit_segment.py", "audit/segment.jsonl"], cwd=folder, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert segment.returncode == 0 and "audit segment intact" in segment.stdout, segment.stderr
    anchor = json.loads((folder / "audit/anchor.json").read_text())
    records = [json.loads(line) for line in (folder / "audit/segment.jsonl").read_text().splitlines()]
    assert anchor["head"]["hash"] == records[-1]["hash"]
    assert not any(r.get("withheld") for r in records)  # one model in the workspace: every record is its own
    assert any(r["action"] == "card.signed" for r in records)
    annex = json.loads((folder / "annex_iv.json").read_text())
    assert {"5", "7", "8", "2(e)"} <= set(annex["needs_human_input"]) and "2(g)" not in annex[
        "needs_human_input"
    ]
    assert "needs human input" in (folder / "ANNEX_IV.md").read_text()

    # An edited audit record in the unpacked segment: the stdlib checker names it.
    edited = [dict(r) for r in records]
    edited[1]["details"] = {**edited[1]["details"], "decision": "promote"}
    (folder / "audit/segment.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in edited))
    segment = subprocess.run(
        [system_python, "-I", "verify_audit_segment.py", "audit/segment.jsonl"], cwd=folder, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert segment.returncode != 0 and f"record {records[1]['seq']} (line 2) was edited" in segment.stderr

    # A tampered file inside the archive: the pack no longer verifies, and the file is named.
    tampered = trained["root"] / "tampered.zip"
    with zipfile.ZipFile(pack) as source, zipfile.ZipFile(tampered, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "reports/evaluate/evaluation/metrics.json":
                data = data.replace(b'"roc_auc": 0.', b'"roc_auc": 0.9', 1)
            target.writestr(item, data)
    capsys.readouterr()
    assert main([*_ws(trained), "evidence", "--verify", str(tampered)]) == 1
    out = capsys.readouterr().out
    assert "TAMPERED" in out and "reports/evaluate/evaluation/metrics.json was edited after signing" in out
    assert main(["evidence", "--verify", str(pack), "--key-id", "0" * 16]) == 1  # another platform's key
    assert f"signed by         key {key}, NOT the trusted key {'0' * 16}" in capsys.readouterr().out


def test_evidence_refuses_a_tampered_trail(
    trained: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    trail = trained["workspace"] / "audit.jsonl"
    original = trail.read_text()
    lines = original.splitlines(keepends=True)
    lines[0] = lines[0].replace('"success": true', '"success": false')
    assert lines[0] != original.splitlines(keepends=True)[0]
    trail.write_text("".join(lines))
    try:
        code = main(
            [*_ws(trained), "evidence", f"{MODEL}@challenger", "--out", str(trained["root"] / "x.zip")]
        )
        assert code == 2
        err = capsys.readouterr().err
        assert "does not verify" in err and "record 1" in err and "only exported from an intact trail" in err
        assert not (trained["root"] / "x.zip").exists()
    finally:
        trail.write_text(original)


def test_bad_references_are_named(trained: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*_ws(trained), "card", "credit-default"]) == 2
    assert "write <model-name>@<alias>" in capsys.readouterr().err
    assert main([*_ws(trained), "card", f"{MODEL}@nope"]) == 2
    assert f"{MODEL}@nope does not resolve" in capsys.readouterr().err
    assert (
        main([*_ws(trained), "evidence", f"{MODEL}@challenger", "--out", str(trained["root"] / "pack.tar")])
        == 2
    )
    assert "is a zip archive" in capsys.readouterr().err
