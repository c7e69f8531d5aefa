"""Upload a compiled pipeline as a new version named by the git commit it was compiled from.

A version per commit makes "which code did this run execute" answerable from the KFP
UI; uploading the same commit twice reuses the version instead of failing, so a
re-run CI job is harmless, while different content under an existing name is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from cli.kfp_client.connection import KfpConnection
from cli.kfp_client.kfp_errors import translate_errors
from cli.kfp_client.lookup import comparable, find_pipeline, find_version, pipeline_spec_of, read_package

if TYPE_CHECKING:
    from pipelines.signature import PipelineForm

SHORT_SHA = 12  # fixed, unlike `git rev-parse --short`, so CI can compute the same name from $GITHUB_SHA


@dataclass(frozen=True)
class GitState:
    commit: str
    dirty: bool

    @property
    def version_name(self) -> str:
        return self.commit[:SHORT_SHA] + ("-dirty" if self.dirty else "")


def git_state(repo: Path) -> GitState:
    """The checkout's commit and whether tracked files differ from it (``git describe --dirty`` rules)."""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                ["git", *args],
                cwd=repo,
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
                # `git status` would otherwise refresh the index under a lock, racing a concurrent commit.
                env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ValueError(
                f"cannot run git in {repo} ({exc}); pass --version-name to name the version"
            ) from exc

    head = git("rev-parse", "HEAD")
    if head.returncode != 0:
        raise ValueError(
            f"{repo} is not a git checkout with a commit ({head.stderr.strip()}); pass --version-name to name "
            "the version"
        )
    status = git("status", "--porcelain", "--untracked-files=no")
    return GitState(commit=head.stdout.strip(), dirty=bool(status.stdout.strip()))


def with_image(package: Path, image: str, out_dir: Path) -> Path:
    """A copy of ``package`` whose platform-image steps run ``image`` (e.g. the image built for this commit).

    Components name the released platform image at compile time; CI swaps in the image
    it just built so the uploaded version runs exactly the code of its commit.
    """
    from mlops.images import PLATFORM_IMAGE

    image = image.strip()
    if not image or any(c.isspace() for c in image):
        raise ValueError(f"--image {image!r} is not an image reference; pass e.g. ghcr.io/org/mlops:<sha>")
    docs = [doc for doc in yaml.safe_load_all(package.read_text(encoding="utf-8")) if doc is not None]
    executors = docs[0].get("deploymentSpec", {}).get("executors", {}) if docs else {}
    replaced = 0
    for executor in executors.values():
        container = executor.get("container") or {}
        if container.get("image") == PLATFORM_IMAGE:
            container["image"] = image
            replaced += 1
    if not replaced:
        raise ValueError(f"{package} has no step using {PLATFORM_IMAGE}, so --image would change nothing")
    out = out_dir / f"{package.stem}-{image.rsplit(':', 1)[-1][:12]}.yaml"
    out.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return out


def settings_suffix(settings: Mapping[str, Any]) -> str:
    """A short digest of the defaults ``--set`` gave an upload, so the version name tells them apart
    (the same settings always give the same suffix: a re-run upload reuses its version)."""
    text = "\n".join(
        f"{address}={json.dumps(value, sort_keys=True)}" for address, value in sorted(settings.items())
    )
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def with_defaults(package: Path, form: PipelineForm, settings: Mapping[str, Any], out_dir: Path) -> Path:
    """A copy of ``package`` (compiled from ``form``) whose KFP form shows ``settings`` (by address) as its
    defaults: the per-run parameter's default, or its section's default ``dict`` and the description that
    lists it, exactly as the pipeline compiled with those defaults would hold them."""
    from mlops.settings import from_addressed
    from pipelines.signature import PipelineForm

    changed = PipelineForm(
        form.name,
        form.description,
        from_addressed(settings, form.defaults),
        per_run=form.per_run,
        returns=form.returns,
    )
    defaults = changed.parameter_defaults()
    docs = [doc for doc in yaml.safe_load_all(package.read_text(encoding="utf-8")) if doc is not None]
    if not docs or (docs[0].get("pipelineInfo") or {}).get("name") != form.name:
        raise ValueError(
            f"{package} is not the compiled {form.name!r} pipeline, so --set cannot change its defaults"
        )
    inputs = docs[0]["root"]["inputDefinitions"]["parameters"]
    for address in settings:
        setting = form.setting(address)
        parameter = setting.form_name if setting.per_run else setting.section
        inputs[parameter]["defaultValue"] = defaults[parameter]
        inputs[parameter]["description"] = changed.parameter_description(parameter)
    out = out_dir / f"{package.stem}-{settings_suffix(settings)}.yaml"
    out.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return out


@dataclass(frozen=True)
class UploadResult:
    pipeline_id: str
    version_id: str
    version_name: str
    created_pipeline: bool
    reused_version: bool


def upload_version(
    client: Any,
    connection: KfpConnection,
    package: Path,
    pipeline_name: str,
    version_name: str,
    description: str = "",
) -> UploadResult:
    """Add ``package`` as version ``version_name`` of pipeline ``pipeline_name``, creating the pipeline if absent."""
    import kfp_server_api

    local_spec = read_package(str(package))
    target, hint = connection.target, connection.auth_hint()
    with translate_errors(target, hint, f"look up pipeline {pipeline_name!r}"):
        pipeline = find_pipeline(client, pipeline_name, connection.namespace)
    created = pipeline is None
    if pipeline is None:
        # An empty pipeline, so that even the first version is named by its commit
        # (kfp.Client.upload_pipeline would name it after the pipeline).
        body = kfp_server_api.V2beta1Pipeline(
            display_name=pipeline_name, description=description or None, namespace=connection.namespace
        )
        with translate_errors(target, hint, f"create pipeline {pipeline_name!r}"):
            pipeline = client.pipelines.pipeline_service_create_pipeline(pipeline=body)
    else:
        with translate_errors(target, hint, f"look up version {version_name!r} of {pipeline_name!r}"):
            existing = find_version(client, pipeline.pipeline_id, version_name)
        if existing is not None:
            if comparable(pipeline_spec_of(existing)) != comparable(local_spec):
                raise ValueError(
                    f"pipeline {pipeline_name!r} already has a version {version_name!r} with different content; "
                    "commit your changes (a new commit gets a new version) or pass another --version-name"
                )
            return UploadResult(pipeline.pipeline_id, existing.pipeline_version_id, version_name, False, True)
    with translate_errors(target, hint, f"upload version {version_name!r} of {pipeline_name!r}"):
        version = client.upload_pipeline_version(
            str(package),
            pipeline_version_name=version_name,
            pipeline_id=pipeline.pipeline_id,
            description=description or None,
        )
    return UploadResult(pipeline.pipeline_id, version.pipeline_version_id, version_name, created, False)
