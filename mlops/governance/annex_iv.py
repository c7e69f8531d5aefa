"""The index of an evidence pack: which file answers which section of the EU AI Act's Annex IV.

Annex IV (Regulation (EU) 2024/1689) lists what the technical documentation of a high-risk
AI system holds (Art. 11). The platform records part of it; the rest only the provider can
write (intended purpose, risk management, standards, the declaration of conformity). Each
entry names the pack's files and says plainly whether the section is covered, partly
covered, or needs human input, and what is missing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

COVERED = "covered by the platform's records"
PARTLY = "partly covered: needs human input"
HUMAN = "needs human input: the platform records nothing for it"


@dataclass(frozen=True)
class Section:
    number: str
    title: str
    status: str
    files: tuple[str, ...]
    missing: str
    """What a person must add (empty when covered)."""


def sections(empty_fields: list[str]) -> list[Section]:
    """Annex IV's points, mapped onto the pack's files; ``empty_fields`` are the card's unfilled fields."""
    card = ("card/model_card.html", "card/model_card.json", "card/mlops_facts.json")
    use_fields = {"card.overview", "card.intended_uses", "card.intended_users"}
    use_missing = sorted(use_fields & set(empty_fields))
    oversight_missing = "card.human_oversight" in empty_fields
    limits_missing = sorted({"card.limitations", "card.out_of_scope_uses"} & set(empty_fields))
    return [
        Section(
            "1",
            "General description: intended purpose, provider, version, how it is used",
            PARTLY,
            card,
            "provider identity, hardware it runs on, instructions for use"
            + (f"; the card's {', '.join(use_missing)} are empty" if use_missing else ""),
        ),
        Section(
            "2(a)", "Development methods and steps", COVERED, ("lineage.txt", "reports/train/", *card), ""
        ),
        Section(
            "2(b)",
            "Design specifications, key choices and trade-offs, what it optimises",
            PARTLY,
            ("reports/train/", "card/model_card.json"),
            "the rationale of the design choices and assumptions",
        ),
        Section(
            "2(c)",
            "System architecture and computational resources",
            PARTLY,
            ("card/model_card.json", "reports/train/"),
            "the serving architecture and the compute used (the platform logs settings, not a description)",
        ),
        Section(
            "2(d)",
            "Data: provenance, scope, characteristics, selection, labelling, cleaning",
            PARTLY,
            ("reports/data_validation/", "card/mlops_facts.json", "lineage.txt"),
            "how the data was obtained, selected and labelled (the pack proves its digest, suite and profile)",
        ),
        Section(
            "2(e)",
            "Human oversight measures (Art. 14)",
            HUMAN if oversight_missing else PARTLY,
            card,
            "card.human_oversight is empty" if oversight_missing else "the organisational measures around it",
        ),
        Section(
            "2(f)",
            "Pre-determined changes and continuous compliance",
            HUMAN,
            (),
            "which retraining and rollout changes are pre-determined (the monitoring and rollout settings in use)",
        ),
        Section(
            "2(g)",
            "Validation and testing: data, metrics, discriminatory impact, signed test reports",
            COVERED,
            (
                "reports/evaluate/",
                "reports/gate_model_validation/",
                "reports/gate_metrics/",
                "audit/segment.jsonl",
                *card,
            ),
            "",
        ),
        Section(
            "2(h)",
            "Cybersecurity measures",
            PARTLY,
            ("signatures/", "audit/segment.jsonl"),
            "the platform's measures beyond model signing and the hash-chained trail (access control, network)",
        ),
        Section(
            "3",
            "Monitoring, functioning and control: capabilities, limitations, accuracy per group",
            PARTLY,
            ("card/model_card.html", "reports/gate_model_validation/"),
            "foreseeable unintended outcomes and risks"
            + (f"; the card's {', '.join(limits_missing)} are empty" if limits_missing else ""),
        ),
        Section(
            "4",
            "Appropriateness of the performance metrics",
            HUMAN,
            ("card/model_card.json",),
            "why these metrics and thresholds fit the intended purpose",
        ),
        Section("5", "Risk management system (Art. 9)", HUMAN, (), "the provider's risk management system"),
        Section(
            "6",
            "Changes through the lifecycle",
            COVERED,
            ("audit/segment.jsonl", "card/mlops_facts.json", "lineage.txt"),
            "",
        ),
        Section(
            "7",
            "Harmonised standards applied, or other solutions",
            HUMAN,
            (),
            "the standards or specifications applied",
        ),
        Section("8", "EU declaration of conformity (Art. 47)", HUMAN, (), "a copy of the declaration"),
        Section(
            "9",
            "Post-market monitoring plan (Art. 72)",
            HUMAN,
            (),
            "the plan; the platform's drift monitor and retrain trigger settings can be cited in it",
        ),
    ]


def index(empty_fields: list[str]) -> dict[str, Any]:
    items = sections(empty_fields)
    return {
        "regulation": "Regulation (EU) 2024/1689 (AI Act), Annex IV: technical documentation (Art. 11)",
        "sections": [asdict(s) for s in items],
        "needs_human_input": [s.number for s in items if s.status != COVERED],
    }


def markdown(empty_fields: list[str]) -> str:
    lines = [
        "# Annex IV index",
        "",
        "Regulation (EU) 2024/1689 (AI Act), Annex IV: what the technical documentation holds, and where in this pack.",
        "Sections marked *needs human input* are not complete from the platform's records alone.",
        "",
        "| section | title | status | files | still needed |",
        "| --- | --- | --- | --- | --- |",
    ]
    for s in sections(empty_fields):
        lines.append(
            f"| {s.number} | {s.title} | {s.status} | {', '.join(s.files) or '-'} | {s.missing or '-'} |"
        )
    return "\n".join(lines) + "\n"
