"""The code commit a local run records is the platform checkout's, wherever the command is started, and
never empty: outside a git checkout it names the package version and a digest of the sources."""

import re
import subprocess
from pathlib import Path

import pytest

from cli.code_origin import NOT_A_CHECKOUT, code_commit, platform_root
from cli.commands.run import GIT_COMMIT, local_arguments
from cli.step_cache import _code_digest
from mlops.origin_facts import package_version
from mlops.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"]


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(
        [*GIT, *args], cwd=folder, capture_output=True, text=True, check=True
    ).stdout.strip()


def _repository(folder: Path, *, commit: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    _git(folder, "init", "-q")
    (folder / "file.txt").write_text("one\n")
    if commit:
        _git(folder, "add", "file.txt")
        _git(folder, "commit", "-q", "-m", "one")
    return folder


def _recorded(tmp_path: Path) -> str:
    from pipelines.training.pipeline import FORM

    arguments, _ = local_arguments("training", {}, Workspace(tmp_path / "ws"))
    return str(FORM.values(arguments)[GIT_COMMIT])


def test_this_checkout_is_recorded_with_its_commit() -> None:
    assert platform_root() == ROOT
    head = _git(ROOT, "rev-parse", "HEAD")
    dirty = bool(_git(ROOT, "status", "--porcelain", "--untracked-files=no"))
    assert code_commit() == head + ("-dirty" if dirty else "")


def test_a_run_started_outside_the_checkout_records_the_platforms_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)  # not a git checkout
    assert _recorded(tmp_path) == code_commit() != ""
    users_project = _repository(tmp_path / "project")
    monkeypatch.chdir(users_project)  # a git checkout, but of the user's project
    assert _recorded(tmp_path) == code_commit() != _git(users_project, "rev-parse", "HEAD")


def test_a_checkout_with_changes_is_marked_dirty(tmp_path: Path) -> None:
    repository = _repository(tmp_path / "code")
    head = _git(repository, "rev-parse", "HEAD")
    assert code_commit(repository) == head
    (repository / "file.txt").write_text("two\n")
    assert code_commit(repository) == f"{head}-dirty"
    (repository / "new.txt").write_text("untracked files are not the code that ran\n")
    (repository / "file.txt").write_text("one\n")
    assert code_commit(repository) == head


@pytest.mark.parametrize(
    "where", ["no repository", "inside another repository", "a repository without a commit"]
)
def test_code_outside_a_checkout_is_named_by_version_and_digest(tmp_path: Path, where: str) -> None:
    if where == "no repository":
        root = tmp_path / "site-packages"
    elif where == "inside another repository":
        root = _repository(tmp_path / "project") / ".venv" / "lib" / "site-packages"
    else:
        root = _repository(tmp_path / "fresh", commit=False)
    root.mkdir(parents=True, exist_ok=True)
    recorded = code_commit(root)
    assert recorded == f"{NOT_A_CHECKOUT}: mlops {package_version()}, sources sha256:{_code_digest()[:16]}"
    assert re.fullmatch(r"not a git checkout: mlops \S+, sources sha256:[0-9a-f]{16}", recorded)
