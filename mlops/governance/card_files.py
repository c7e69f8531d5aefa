"""Write a model card's three files, sign them together and record the signature in the audit trail."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mlops.data.card_fields import CardFields
from mlops.governance.card_html import render
from mlops.governance.manifest_signing import SignedManifest, sign_folder
from mlops.governance.model_card import CARD_HTML, CARD_JSON, FACTS_JSON, facts_document, model_card
from mlops.governance.version_facts import ModelFacts

CARD_SIGNED = "card.signed"
"""Audit action: a model card was written and signed; details name its folder, files and manifest digest."""


@dataclass(frozen=True)
class WrittenCard:
    folder: Path
    signed: SignedManifest
    empty_fields: list[str]
    audit_seq: int


def write_card(
    folder: Path,
    facts: ModelFacts,
    fields: CardFields,
    schema_source: str,
    private_key: Path,
    workspace_root: Path | None = None,
) -> WrittenCard:
    """``model_card.json`` (MCT v0.0.2), ``mlops_facts.json``, ``model_card.html`` in ``folder``, signed;
    one ``card.signed`` audit record with every file's SHA-256, so an edit is caught by ``mlops audit verify``."""
    from mlops.governance.audit import record

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    card = model_card(facts, fields)
    document = facts_document(facts, fields, schema_source)
    (folder / CARD_JSON).write_text(json.dumps(card, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    (folder / FACTS_JSON).write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    (folder / CARD_HTML).write_text(render(card, document), encoding="utf-8")
    signed = sign_folder(folder, private_key)
    event = record(
        CARD_SIGNED,
        f"{facts.name}/{facts.version}",
        {
            "alias": facts.alias,
            "folder": str(folder.resolve()),
            "files": signed.files,
            "manifest_sha256": signed.manifest_sha256,
            "signing_key_id": signed.key_id,
            "empty_fields": document["empty_fields"],
        },
        links={"model_version": f"{facts.name}/{facts.version}"},
        workspace_root=workspace_root,
        tracking_uri=facts.tracking_uri,
    )
    return WrittenCard(folder, signed, document["empty_fields"], event.seq)
