"""What a finished step found, in a few words, and why a failed step failed, in a few lines.

Both are read from what the step left in its folder of the run (``<run>/<task>/``):
kfp's ``executor_output.json`` (the step's returned values and artifact metadata) and
the reports it wrote, never from the step's console output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_REASONS = 5
REASON_WIDTH = 150
_EXCEPTION_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Failed|Failure|Pruned)): (.+)$")


def task_outputs(task_dir: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The step's returned values and each output artifact's metadata ({} when it wrote none)."""
    try:
        written = json.loads((task_dir / "executor_output.json").read_text())
    except (OSError, ValueError):
        return {}, {}
    artifacts = {
        name: (entry.get("artifacts") or [{}])[0].get("metadata") or {}
        for name, entry in (written.get("artifacts") or {}).items()
    }
    return written.get("parameterValues") or {}, artifacts


def _number(value: Any) -> str:
    return f"{int(value):,}" if isinstance(value, int | float) else "?"


def _auc(value: Any) -> str:
    return f"{float(value):.4f}" if isinstance(value, int | float) else "?"


def _validated(task_dir: Path, params: dict[str, Any], artifacts: dict[str, dict[str, Any]]) -> str:
    report = _read_json(task_dir / "report_json")
    if not report:
        return ""
    checks = report.get("n_checks", 0)
    return f"{_number(report.get('rows'))} rows validated, {checks - report.get('n_failed', 0)}/{checks} checks passed"


def _trained(task_dir: Path, params: dict[str, Any], artifacts: dict[str, dict[str, Any]]) -> str:
    epochs = artifacts.get("metrics", {}).get("epochs_run")
    best = artifacts.get("model", {}).get("best_epoch")
    ran = f" of {_number(epochs)} run" if epochs is not None else ""
    return f"best epoch {_number(best)}{ran}, validation AUC {_auc(params.get('val_auc'))}"


def _evaluated(task_dir: Path, params: dict[str, Any], artifacts: dict[str, dict[str, Any]]) -> str:
    champion = f", champion {_auc(params['champion_auc'])}" if params.get("has_champion") else ""
    return f"test AUC {_auc(params.get('test_auc'))}{champion}"


def _exported(task_dir: Path, params: dict[str, Any], artifacts: dict[str, dict[str, Any]]) -> str:
    diff = params.get("max_abs_diff")
    return f"ONNX parity max |diff| {diff:.1e}" if isinstance(diff, int | float) else ""


def _output(prefix: str) -> Callable[[Path, dict[str, Any], dict[str, dict[str, Any]]], str]:
    def figure(task_dir: Path, params: dict[str, Any], artifacts: dict[str, dict[str, Any]]) -> str:
        value = params.get("Output", params.get("version"))
        return f"{prefix}{value}" if value is not None else ""

    return figure


def _gate_verdict(prefix: str) -> Callable[[Path, dict[str, Any], dict[str, dict[str, Any]]], str]:
    """The gate's decision and, when it handed one over, its status: ``reject, not conclusive (2 undecided)``."""

    def figure(task_dir: Path, params: dict[str, Any], artifacts: dict[str, dict[str, Any]]) -> str:
        from mlops.gates import status_word

        decision = params.get("Output")
        if decision is None:
            return ""
        status = artifacts.get("report_json", {}).get("status", "")
        undecided = 0
        try:
            verdict = json.loads(params.get("verdict") or "{}")
            status = verdict.get("status") or status
            undecided = len(verdict.get("undecided") or ())
        except (TypeError, ValueError, AttributeError):
            pass
        more = f" ({undecided} undecided)" if undecided else ""
        return f"{prefix}{decision}, {status_word(status)}{more}" if status else f"{prefix}{decision}"

    return figure


def _best_trial(task_dir: Path, params: dict[str, Any], artifacts: dict[str, dict[str, Any]]) -> str:
    auc = next((v for k, v in params.items() if "auc" in k), None)
    return f"best validation AUC {_auc(auc)}" if auc is not None else ""


def _drift_checked(task_dir: Path, params: dict[str, Any], artifacts: dict[str, dict[str, Any]]) -> str:
    """The check's decision and the kinds of finding (bias drift, attribution drift) its report holds."""
    report = _read_json(task_dir / "report_json")
    kinds = dict.fromkeys(str(f).split(":", 1)[0] for f in report.get("findings", []))
    found = f"; findings: {', '.join(kinds)}" if kinds else ""
    return f"decision: {params.get('Output') or report.get('decision') or '?'}{found}"


FIGURES: dict[str, Callable[[Path, dict[str, Any], dict[str, dict[str, Any]]], str]] = {
    "prepare-data": lambda d, p, a: (
        f"{_number(a.get('sample', {}).get('rows'))} sample rows" if "rows" in a.get("sample", {}) else ""
    ),
    "validate-data": _validated,
    "train-model": _trained,
    "evaluate-model": _evaluated,
    "export-onnx-model": _exported,
    "register-model": _output("version "),
    "metrics-gate": _output(""),
    "validate-model": _gate_verdict(""),
    "combine-gates": _output("decision: "),
    "promote-to-champion": lambda d, p, a: f"champion (before: {p.get('Output') or 'none'})",
    "run-tuning-worker": _output("trials run: "),
    "select-best-trial": _best_trial,
    "check-drift": _drift_checked,
}
"""Per component (the task's name without kfp's ``-2`` suffix): its key figure."""


def step_figure(task: str, task_dir: Path) -> str:
    """The key figure of a finished step, or '' when it has none (or left nothing to read)."""
    figure = FIGURES.get(re.sub(r"-\d+$", "", task))
    if figure is None:
        return ""
    params, artifacts = task_outputs(task_dir)
    try:
        return figure(task_dir, params, artifacts)
    except (TypeError, ValueError, KeyError):
        return ""


def _read_json(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def short(text: str, width: int = REASON_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def split_reasons(text: str) -> list[str]:
    """``a; b (c; d); e`` → ``[a, b (c; d), e]``: split on top-level semicolons only."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
        if char == ";" and depth <= 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return [part for part in parts if part]


def failed_checks(report_path: Path) -> tuple[str, list[str]] | None:
    """A data validation report's verdict and its failed checks, each with the values it observed."""
    report = _read_json(report_path)
    checks = [c for c in report.get("checks", []) if isinstance(c, dict) and not c.get("success", True)]
    if not checks:
        return None
    lines = []
    for check in checks:
        args = ", ".join(
            f"{k}={short(str(v), 40)}" for k, v in (check.get("kwargs") or {}).items() if k != "column"
        )
        where = f"{check['column']}: " if check.get("column") else ""
        # The observed values first: they must survive the line's clipping; the bounds come after.
        lines.append(
            f"{where}{check.get('expectation')}: {check.get('observed_text', '')}"
            + (f" ({args})" if args else "")
        )
    header = f"{len(checks)} of {len(report.get('checks', []))} checks failed"
    if report.get("suite_name"):
        header += f" (suite {report['suite_name']} {report.get('suite_version', '')})".rstrip()
    return header, lines


def exception_reason(log_lines: list[str]) -> tuple[str, list[str]]:
    """The last exception a step's log shows: its type and its message split into reasons."""
    for line in reversed(log_lines):
        match = _EXCEPTION_LINE.match(line)
        if match:
            kind, message = match.group(1).rsplit(".", 1)[-1], match.group(2)
            head, _, rest = message.partition(": ")
            reasons = split_reasons(rest) if rest and ";" in rest else split_reasons(message)
            return (f"{kind}: {head}" if rest and ";" in rest else kind), reasons
    return "the step exited with an error", []


def failure_reasons(task_dir: Path, log_path: Path) -> tuple[str, list[str]]:
    """Why a step failed: a failed data validation's checks, else the exception in its log."""
    found = failed_checks(task_dir / "report_json")
    if found is not None:
        return found
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    return exception_reason(lines)
