"""The string-built page before it moved to a Jinja2 template, kept only to compare with. The model card for people: one self-contained HTML page from the card's two JSON documents."""

from __future__ import annotations

import math
from html import escape
from typing import Any

from mlops.gates import status_word
from mlops.governance.report_charts import calibration_chart, group_rates_chart, score_chart

STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.2em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#f3f3f3}.empty{color:#b00020;font-weight:600}.promote{color:#176f2c;font-weight:600}
.reject{color:#b00020;font-weight:600}code{background:#f5f5f5;padding:0 3px}
.pass{color:#176f2c;font-weight:600}.fail{color:#b00020;font-weight:600}.not_conclusive{color:#8a5a00;font-weight:600}
.override{background:#fff4e0}img{max-width:100%}"""


def _status(status: Any) -> str:
    """A status as coloured text: pass green, fail red, anything else (not conclusive, not recorded) amber."""
    text = str(status or "not recorded")
    css = text if text in ("pass", "fail") else "not_conclusive"
    return f'<span class="{css}">{escape(status_word(text))}</span>'


def _limit(threshold: dict[str, Any] | None) -> str:
    if not threshold or threshold.get("value") is None:
        return "not recorded"
    return f"{threshold.get('bound')} {threshold['value']:g}"


def _limits_html(facts: dict[str, Any]) -> str:
    """Every limit in force, overrides first and highlighted, each with who set it and where."""
    limits = facts.get("limits") or []
    changed = facts.get("overrides") or []
    parts = ["<h2>Limits in force</h2>"]
    if changed:
        items = "".join(
            f"<li><code>{escape(str(o['address']))}</code> = {_fmt(o.get('value'))} (default "
            f"{_fmt(o.get('default'))}): {escape(str(o.get('source', '')))}"
            + (f", set by {escape(str(o['set_by']))}" if o.get("set_by") else "")
            + (f" (audit record {o['audit_seq']})" if o.get("audit_seq") is not None else "")
            + "</li>"
            for o in changed
        )
        parts.append(
            f'<p class="empty">{len(changed)} limit(s) changed from the platform default:</p><ul>{items}</ul>'
        )
    elif limits:
        parts.append("<p>Every limit is the platform default.</p>")
    if not limits:
        parts.append('<p class="empty">No record of the limits the gates used.</p>')
        return "\n".join(parts)
    rows = "".join(
        f'<tr class="{"override" if limit.get("value") != limit.get("default") else ""}"><td><code>'
        f"{escape(str(limit['address']))}</code></td><td>{_fmt(limit.get('value'))}</td><td>{_fmt(limit.get('default'))}</td>"
        f"<td>{escape(str(limit.get('source', '')))}</td><td>{_fmt(limit.get('set_by') or '')}</td></tr>"
        for limit in limits
    )
    parts.append(
        "<table><tr><th>setting</th><th>value</th><th>default</th><th>source</th><th>set by</th></tr>"
        f"{rows}</table>"
    )
    return "\n".join(parts)


def _group_note(group: dict[str, Any]) -> str:
    """Which of the group's rates were too few to decide on; ``too small`` only when it decided nothing."""
    undecided = list(group.get("undecided") or [])
    if len(undecided) >= 3:
        return "too small: decided nothing"
    names = {"selection_rate": "selection rate", "true_positive_rate": "TPR", "false_positive_rate": "FPR"}
    return ", ".join(names.get(u, u) for u in undecided) + " not decided on" if undecided else ""


def _fmt(value: Any) -> str:
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "html":
        return str(value[1])  # markup built here, already escaped
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return "n/a" if not math.isfinite(value) else f"{value:.4f}"
    if isinstance(value, list | tuple):
        return escape(", ".join(str(v) for v in value))
    return escape(str(value))


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    if not rows:
        return "<p><em>nothing recorded</em></p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _items(values: list[str], empty: str) -> str:
    if not values:
        return f'<p class="empty">{escape(empty)}</p>'
    return "<ul>" + "".join(f"<li>{escape(v)}</li>" for v in values) + "</ul>"


def _interval(metric: dict[str, Any]) -> str:
    ci = metric.get("confidence_interval")
    return f"[{_fmt(ci.get('lower_bound'))}, {_fmt(ci.get('upper_bound'))}]" if ci else ""


def render(card: dict[str, Any], facts: dict[str, Any]) -> str:
    """The page: human fields (empty ones flagged), data, evaluation, slices, fairness, explanations,
    gates, lineage, deployment history."""
    details = card["model_details"]
    human = facts["human_fields"]
    model = facts["model"]
    title = f"Model card: {model['name']} version {model['version']} ({model['alias']})"
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>",
        f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>",
    ]
    parts.append(f"<p>{escape(details.get('overview') or '')}</p>")
    parts.append(
        f"<p>Machine-readable: <code>model_card.json</code> ({escape(facts['card_schema'])}) and "
        "<code>mlops_facts.json</code>. Signed: see <code>SHA256SUMS</code>, <code>SHA256SUMS.sig</code>.</p>"
    )
    if facts["empty_fields"]:
        parts.append(
            '<p class="empty">Still to be filled by the model owner (schema file, <code>card:</code> block, '
            f"then run <code>mlops card</code> again): {escape(', '.join(facts['empty_fields']))}</p>"
        )
    parts.append("<h2>Intended use</h2>")
    parts.append("<h3>Uses</h3>" + _items(list(human["intended_uses"]), "card.intended_uses is empty"))
    parts.append("<h3>Users</h3>" + _items(list(human["intended_users"]), "card.intended_users is empty"))
    parts.append(
        "<h3>Out of scope</h3>" + _items(list(human["out_of_scope_uses"]), "card.out_of_scope_uses is empty")
    )
    parts.append("<h3>Limitations</h3>" + _items(list(human["limitations"]), "card.limitations is empty"))
    parts.append(
        "<h3>Ethical considerations</h3>"
        + _items(list(human["ethical_considerations"]), "card.ethical_considerations is empty")
    )
    parts.append(
        "<h3>Human oversight</h3>"
        + _items(
            [human["human_oversight"]] if human["human_oversight"] else [], "card.human_oversight is empty"
        )
    )
    parts.append(
        f"<p>Owners: {_fmt(human['owners']) or '<span class=empty>empty</span>'}; contact: {_fmt(human['contact'])}; licence: {_fmt(human['license'])}</p>"
    )

    data = facts["training_data"]
    parts.append("<h2>Training data</h2>")
    validation = data.get("validation") or {}
    parts.append(
        _table(
            ["field", "value"],
            [
                ["dataset", data["dataset_uri"]],
                ["sha256", data["dataset_digest"]],
                ["expectation suite", f"{data['suite']} version {data['suite_version']}"],
                [
                    "validation",
                    ("passed" if validation.get("passed") else "FAILED")
                    + f" at {validation.get('at')} (audit record {validation.get('audit_seq')})"
                    if validation
                    else "no record",
                ],
                ["rows in the reference profile", data["profile"].get("rows")],
            ],
        )
    )
    profile = data["profile"]
    parts.append(
        _table(
            ["numeric feature", "missing", "mean", "std"],
            [[p["feature"], p["missing"], p["mean"], p["std"]] for p in profile.get("numeric", [])],
        )
    )
    parts.append(
        _table(
            ["categorical feature", "missing", "categories", "most frequent"],
            [[p["feature"], p["missing"], p["categories"], p["top"]] for p in profile.get("categorical", [])],
        )
    )

    metrics = card["quantitative_analysis"]["performance_metrics"]
    parts.append("<h2>Evaluation (held-out test split)</h2>")
    parts.append(
        _table(
            ["metric", "value", "rows"],
            [[m["type"], m["value"], m.get("n_rows")] for m in metrics if not m["slice"]],
        )
    )
    slices = facts.get("slices") or {}
    parts.append("<h3>Per slice</h3>")
    if slices.get("slices"):
        rows = [
            [
                s["slice"],
                s["size"],
                *(
                    _fmt(s["metrics"].get(k, {}).get("value"))
                    + " "
                    + _interval(
                        {
                            "confidence_interval": {
                                "lower_bound": s["metrics"].get(k, {}).get("lower"),
                                "upper_bound": s["metrics"].get(k, {}).get("upper"),
                            }
                        }
                    )
                    for k in ("roc_auc", "accuracy")
                ),
                s.get("note", ""),
            ]
            for s in slices["slices"]
        ]
        parts.append(_table(["slice", "rows", "roc_auc [interval]", "accuracy [interval]", "note"], rows))
    else:
        parts.append("<p><em>no slices declared (schema file <code>slices:</code>)</em></p>")

    parts.append("<h2>Fairness</h2>")
    thresholds = facts.get("fairness_thresholds") or {}
    fair_rows = [
        [
            a.get("attribute"),
            k,
            a.get(k),
            _interval(
                {
                    "confidence_interval": dict(
                        zip(
                            ("lower_bound", "upper_bound"),
                            a.get("intervals", {}).get(k, []) or [None, None],
                            strict=False,
                        )
                    )
                }
            ),
            _limit(thresholds.get(k)),
            ("html", _status((a.get("statuses") or {}).get(k))),
        ]
        for a in facts["fairness"]
        for k in ("demographic_parity_difference", "demographic_parity_ratio", "equalized_odds_difference")
    ]
    parts.append(_table(["attribute", "disparity", "value", "interval", "limit", "status"], fair_rows))
    undecided = [u for a in facts["fairness"] for u in a.get("undecided") or []]
    if undecided:
        parts.append(
            '<p class="not_conclusive">Not conclusive on the test rows (neither pass nor fail):</p><ul>'
            + "".join(f"<li>{escape(str(u))}</li>" for u in undecided)
            + "</ul>"
        )
    group_rows = [
        [
            a.get("attribute"),
            g.get("group"),
            g.get("size"),
            g.get("selection_rate"),
            g.get("true_positive_rate"),
            g.get("false_positive_rate"),
            _group_note(g),
        ]
        for a in facts["fairness"]
        for g in a.get("groups", [])
    ]
    parts.append(_table(["attribute", "group", "rows", "selection rate", "TPR", "FPR", "note"], group_rows))
    confidence = facts.get("fairness_confidence")
    parts += [
        group_rates_chart(a, confidence if isinstance(confidence, float) else None) for a in facts["fairness"]
    ]
    scores = facts.get("scores") or {}
    if scores:
        parts.append("<h3>Scores</h3>")
        parts.append(calibration_chart(scores) + score_chart(scores))

    explained = facts["explanations"]
    parts.append("<h2>Explanations</h2>")
    if explained:
        parts.append(
            f"<p>{_fmt(explained.get('method'))} on {_fmt(explained.get('rows'))} rows; ranking stability {escape(str(explained.get('stability', {})))}</p>"
        )
        parts.append(
            _table(
                ["rank", "feature", "importance", "std"],
                [
                    [a["rank"], a["feature"], a["importance"], a["importance_std"]]
                    for a in explained["attributions"]
                ],
            )
        )
    else:
        parts.append("<p><em>no explanation report recorded</em></p>")

    parts.append("<h2>Gate decisions</h2>")
    parts.append(
        _table(
            ["gate", "decision", "status", "reason", "at", "audit record"],
            [
                [
                    g["gate"],
                    g["decision"],
                    ("html", _status(g.get("status"))),
                    g["reason"],
                    g["at"],
                    g["audit_seq"],
                ]
                for g in facts["gate_decisions"]
            ],
        )
    )
    parts.append(_limits_html(facts))
    parts.append("<h2>Lineage</h2>")
    parts.append(_table(["field", "value"], [[k, v] for k, v in facts["lineage"].items()]))
    parts.append("<h2>Deployment history</h2>")
    parts.append(
        _table(
            ["alias", "version", "since", "until", "why", "by"],
            [
                [h["alias"], h["version"], h["since"], h["until"] or "now", h["reason"], h["actor"]]
                for h in facts["deployment_history"]
            ],
        )
    )
    parts.append("<h2>Approval</h2>")
    parts.append(
        _table(
            ["decision", "by", "key id", "at", "why", "audit record"],
            [
                [a["decision"], a["by"], a["key_id"], a["at"], a["reason"], a["audit_seq"]]
                for a in facts.get("approvals", [])
            ],
        )
    )
    parts.append("</body></html>")
    return "\n".join(parts)
