"""Lineage and deployment history, answered from the registry's tags and the audit trail.

``lineage``: from the version an alias serves back to its signature, data digest,
expectation-suite version, code commit, pipeline run and gate decisions. ``history``:
which version held each alias, from when to when, and why it moved — the history the
MLflow registry itself does not keep (it only knows where an alias points now).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mlops import vocabulary
from mlops.governance.audit import AuditEvent

GATE_PREFIX = f"{vocabulary.TAG_PREFIX}gate."


@dataclass(frozen=True)
class Holding:
    """One stretch of time during which ``version`` held ``alias``."""

    alias: str
    version: str
    since: str
    until: str
    """When the alias moved on; empty while the version still holds it."""
    reason: str
    actor: str
    links: dict[str, str]


def history(model_name: str, events: Sequence[AuditEvent]) -> list[Holding]:
    """Every alias move of ``model_name`` in the trail, as holdings, per alias in time order."""
    moves = [e for e in events if e.action == "alias.moved" and e.subject.startswith(f"{model_name}/")]
    holdings: list[Holding] = []
    for alias in sorted({str(e.details.get("alias", "")) for e in moves}):
        mine = [e for e in moves if e.details.get("alias") == alias]
        for current, following in zip(mine, [*mine[1:], None], strict=True):
            holdings.append(
                Holding(
                    alias=alias,
                    version=str(current.details.get("to", current.subject.rsplit("/", 1)[-1])),
                    since=current.at,
                    until=following.at if following else "",
                    reason=str(current.details.get("reason", "")),
                    actor=current.actor,
                    links=dict(current.links),
                )
            )
    return holdings


def history_lines(model_name: str, events: Sequence[AuditEvent]) -> list[str]:
    holdings = history(model_name, events)
    if not holdings:
        return [f"no alias of {model_name} has moved in this audit trail"]
    lines = [f"{'alias':<11} {'version':<8} {'from':<33} {'until':<33} {'by':<12} why"]
    for h in holdings:
        run = h.links.get("pipeline_run_id") or h.links.get("deployment", "")
        why = h.reason + (f" (run {run})" if run else "")
        lines.append(f"{h.alias:<11} {h.version:<8} {h.since:<33} {h.until or 'now':<33} {h.actor:<12} {why}")
    return lines


APPROVAL_ACTIONS = ("approval.requested", "approval.approved", "approval.rejected")
"""The trail's records of a second person's sign-off (:mod:`mlops.tracking.approval_registry` writes them)."""


def approvals(model_name: str, events: Sequence[AuditEvent]) -> list[dict[str, str]]:
    """Every approval request and decision on ``model_name``'s versions, in trail order: which version,
    what (requested, approved, rejected), by whom (the approver's identity, from their key), when, why."""
    return [
        {
            "version": e.subject.rsplit("/", 1)[-1],
            "decision": e.action.removeprefix("approval."),
            "by": str(e.details.get("approver") or e.actor),
            "key_id": str(e.details.get("approver_key_id", "")),
            "at": str(e.details.get("at") or e.at),
            "reason": str(e.details.get("reason", "")),
            "audit_seq": str(e.seq),
        }
        for e in events
        if e.action in APPROVAL_ACTIONS and e.subject.startswith(f"{model_name}/")
    ]


def approval_lines(model_name: str, events: Sequence[AuditEvent]) -> list[str]:
    """``mlops history``'s approval table; nothing when no version was ever put under approval."""
    rows = approvals(model_name, events)
    if not rows:
        return []
    lines = ["", f"{'version':<8} {'approval':<10} {'at':<33} {'by':<12} why"]
    for row in rows:
        who = row["by"] + (f" (key {row['key_id']})" if row["key_id"] else "")
        lines.append(
            f"{row['version']:<8} {row['decision']:<10} {row['at']:<33} {who:<12} {row['reason']}".rstrip()
        )
    return lines


def feature_lines(tags: Mapping[str, str]) -> list[str]:
    """Where a training set built from the feature store came from: the service, each view's definition
    hash, TTL and features, the entity table's digest; nothing for a version trained on a plain table."""
    service = tags.get(vocabulary.FEATURE_SERVICE_TAG)
    if not service:
        return []
    where = [
        f"Feast project {tags[vocabulary.FEATURE_PROJECT_TAG]}"
        if tags.get(vocabulary.FEATURE_PROJECT_TAG)
        else "",
        f"repository {tags[vocabulary.FEATURE_SOURCE_TAGS['data.features.repo']]}"
        if tags.get(vocabulary.FEATURE_SOURCE_TAGS["data.features.repo"])
        else "",
    ]
    shown = ", ".join(part for part in where if part)
    lines = [f"  feature service    {service}" + (f" ({shown})" if shown else "")]
    lines += [
        f"    view {name.removeprefix(vocabulary.FEATURE_VIEW_TAG_PREFIX):<13} {value}"
        for name, value in sorted(tags.items())
        if name.startswith(vocabulary.FEATURE_VIEW_TAG_PREFIX)
    ]
    lines.append(
        f"  entity table       sha256 {tags.get(vocabulary.ENTITY_TABLE_SHA256_TAG, '(none)')}"
        + (f" ({tags[vocabulary.ENTITY_TABLE_URI_TAG]})" if vocabulary.ENTITY_TABLE_URI_TAG in tags else "")
    )
    missing = tags.get(vocabulary.ROWS_WITHOUT_FEATURES_TAG, "0")
    if missing not in ("", "0"):
        lines.append(f"    {missing} entity row(s) kept without feature values (allow_missing)")
    return lines


def lineage_lines(
    model_name: str, alias: str, version: str, tags: Mapping[str, str], events: Sequence[AuditEvent]
) -> list[str]:
    """The chain from the serving version back to its data, code, pipeline run and gate decisions."""
    subject = f"{model_name}/{version}"
    mine = [e for e in events if e.subject == subject]
    registered = next((e for e in mine if e.action == "model.registered"), None)
    digest = tags.get(vocabulary.DATASET_DIGEST_TAG, "")
    validated = [
        e
        for e in events
        if e.action == "data.validated" and e.details.get("dataset_digest") == digest and digest
    ]
    lines = [
        f"{model_name}@{alias} = version {version}",
        f"  model sha256       {tags.get(vocabulary.DIGEST_TAG, '(none)')}",
        f"  signed             key {tags.get(vocabulary.SIGNING_KEY_ID_TAG, '(unsigned)')} "
        f"bundle {tags.get(vocabulary.SIGNATURE_URI_TAG, '(none)')}",
        f"  dataset digest     {digest or '(none)'}"
        + (f" ({tags[vocabulary.DATASET_URI_TAG]})" if vocabulary.DATASET_URI_TAG in tags else ""),
        *feature_lines(tags),
        f"  expectation suite  version {tags.get(f'{vocabulary.TAG_PREFIX}suite_version', '(none)')}",
        f"  code commit        {tags.get(f'{vocabulary.TAG_PREFIX}git_commit') or '(not from a git checkout)'}",
        f"  pipeline run       {tags.get(f'{vocabulary.TAG_PREFIX}kfp_run_id', '(none)')}",
        f"  training run       {tags.get(f'{vocabulary.TAG_PREFIX}train_run_id', '(none)')} (MLflow)",
        f"  package version    {tags.get(f'{vocabulary.TAG_PREFIX}package_version', '(none)')}",
    ]
    if registered is not None:
        lines.append(
            f"  registered         {registered.at} by {registered.actor} (audit record {registered.seq})"
        )
    for event in validated[-1:]:
        lines.append(
            f"  data validated     {event.at}: {'passed' if event.details.get('success') else 'FAILED'} "
            f"suite {event.details.get('suite')} {event.details.get('suite_version')} (audit record {event.seq})"
        )
    lines.append("  gate decisions")
    decisions = [e for e in mine if e.action == "gate.decided"]
    for event in decisions:
        lines.append(
            f"    {event.details.get('gate', '?'):<18} {event.details.get('decision', '?'):<8} "
            f"{event.details.get('reason', '')} ({event.at}, audit record {event.seq})"
        )
    if not decisions:
        lines += [
            f"    {_gate_name(k):<18} {v:<8} {tags.get(k[: -len('decision')] + 'reason', '')}"
            for k, v in _gates(tags)
        ]
        if vocabulary.DECISION_TAG in tags:
            lines.append(
                f"    {'overall':<18} {tags[vocabulary.DECISION_TAG]:<8} {tags.get(vocabulary.REASON_TAG, '')}"
            )
    moves = [e for e in mine if e.action == "alias.moved"]
    if moves:
        lines.append("  alias moves")
        lines += [
            f"    {e.details.get('alias')} -> {version} at {e.at} by {e.actor}: {e.details.get('reason', '')}"
            for e in moves
        ]
    return lines


def _gates(tags: Mapping[str, Any]) -> list[tuple[str, str]]:
    return sorted(
        (k, str(v)) for k, v in tags.items() if k.startswith(GATE_PREFIX) and k.endswith(".decision")
    )


def _gate_name(tag: str) -> str:
    return tag.removeprefix(GATE_PREFIX).removesuffix(".decision")
