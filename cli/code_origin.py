"""Which code a local run runs, as the model version records it (``registration.git_commit``).

The commit is the platform's own checkout's (the folder its packages are imported from), never that of
the folder the command was started in: a user's project may be a git repository of its own, or none. A
checkout with changed tracked files is marked ``-dirty`` (as ``mlops upload`` names versions). Code that
is not a git checkout (an installed package, the platform image) is named by what is true instead: the
package version and a digest of its sources, never an empty value.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

NOT_A_CHECKOUT = "not a git checkout"
"""How the recorded value of code outside a git checkout starts."""


def platform_root() -> Path:
    """The folder the platform's packages are imported from (the checkout's root in a development install)."""
    import mlops

    return Path(mlops.__file__).resolve().parent.parent


def code_commit(root: Path | None = None) -> str:
    """``<commit>`` or ``<commit>-dirty`` of the checkout at ``root`` (default :func:`platform_root`); when
    ``root`` is not itself a git checkout's top folder, ``not a git checkout: mlops <version>, sources
    sha256:<digest>`` (:func:`cli.step_cache._code_digest`, the digest ``--cache`` keys the code with)."""
    from cli.kfp_client.pipeline_upload import git_state

    root = (root or platform_root()).resolve()
    if _top_level(root) == root:
        try:
            state = git_state(root)
        except ValueError:  # a repository without a commit yet
            pass
        else:
            return state.commit + ("-dirty" if state.dirty else "")
    return _not_a_checkout()


def _top_level(folder: Path) -> Path | None:
    """The top folder of the git work tree holding ``folder``; None when there is none (or no git)."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(result.stdout.strip()).resolve() if result.returncode == 0 and result.stdout.strip() else None


def _not_a_checkout() -> str:
    from cli.step_cache import _code_digest
    from mlops.origin_facts import package_version

    return f"{NOT_A_CHECKOUT}: mlops {package_version()}, sources sha256:{_code_digest()[:16]}"
