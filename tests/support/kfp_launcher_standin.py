"""Stand-in for the KFP v2 launcher, run inside a pod of the platform image (mounted from a ConfigMap).

A real KFP backend wraps every task's container command in its Go launcher, which cannot be built here:
the module (github.com/kubeflow/pipelines) is not served by the Go module proxy, the machine's only source
(see fake_kfp_server.py). What this hides: the driver's resolution of inputs and caching, the launcher's
own artifact paths and metadata, and the Argo executor around it.
This script does the part of its job a component depends on, the same way:

1. substitute the executor input (``{{$}}``) into the component's arguments;
2. download every input artifact whose URI is ``s3://bucket/key`` to ``/s3/bucket/key`` (the path
   ``kfp.dsl`` maps such a URI to);
3. run the component's command exactly as the compiled pipeline YAML gives it;
4. on success only, upload every output artifact from ``/s3/...`` to its ``s3://`` URI and print the
   executor output (output parameters, artifact metadata) on one line prefixed ``KFP_EXECUTOR_OUTPUT``.

Usage: ``python3 kfp_launcher_standin.py -- <command> <args...>`` with the executor input JSON in
``KFP_EXECUTOR_INPUT``; S3 endpoint and keys come from the environment (boto3's own variables).
It imports only what the platform image has, never the tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import boto3

PLACEHOLDER = "{{$}}"
S3 = "s3://"
LOCAL_S3 = Path("/s3")


def _client():
    endpoint = os.environ.get("MLFLOW_S3_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT_URL")
    return boto3.client("s3", endpoint_url=endpoint)


def _artifacts(section: dict) -> list[dict]:
    return [a for entry in section.get("artifacts", {}).values() for a in entry.get("artifacts", [])]


def _split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri[len(S3) :].partition("/")
    return bucket, key


def _download(client, uri: str) -> None:
    bucket, key = _split(uri)
    target = LOCAL_S3 / bucket / key
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key)
    for item in (item for page in pages for item in page.get("Contents", [])):
        path = target if item["Key"] == key else target / item["Key"][len(key) :].lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        client.download_file(bucket, item["Key"], str(path))


def _upload(client, uri: str) -> None:
    bucket, key = _split(uri)
    source = LOCAL_S3 / bucket / key
    if source.is_dir():
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            client.upload_file(str(path), bucket, f"{key}/{path.relative_to(source).as_posix()}")
    elif source.is_file():
        client.upload_file(str(source), bucket, key)
    else:
        sys.exit(f"launcher: output artifact {uri} was not written (expected {source})")


def main(argv: list[str]) -> int:
    if "--" not in argv:
        sys.exit("usage: kfp_launcher_standin.py -- <command> <args...>")
    command = argv[argv.index("--") + 1 :]
    executor_input = json.loads(os.environ["KFP_EXECUTOR_INPUT"])
    text = json.dumps(executor_input)
    client = _client()
    for artifact in _artifacts(executor_input.get("inputs", {})):
        if artifact["uri"].startswith(S3):
            _download(client, artifact["uri"])
    result = subprocess.run([text if part == PLACEHOLDER else part for part in command], check=False)
    if result.returncode != 0:
        print(f"launcher: the component exited with {result.returncode}; no output uploaded", flush=True)
        return result.returncode
    for artifact in _artifacts(executor_input["outputs"]):
        if artifact["uri"].startswith(S3):
            _upload(client, artifact["uri"])
    output_file = Path(executor_input["outputs"]["outputFile"])
    output = json.loads(output_file.read_text()) if output_file.is_file() else {}
    print("KFP_EXECUTOR_OUTPUT " + json.dumps(output), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
