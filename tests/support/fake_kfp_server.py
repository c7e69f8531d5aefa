"""A stand-in for the KFP v2beta1 REST API, served over real HTTP on 127.0.0.1.

Why not a real backend: the Kubernetes, Argo Workflows (v4.0.5), PostgreSQL and S3 it needs do run here,
but KFP's backend itself (the Go module github.com/kubeflow/pipelines: API server, persistence agent,
driver, launcher) is not served by the only source this machine has, the Go module proxy: its version
list, ``@latest``, commit queries and a known pseudo-version all answer 403 "This module version is not
available" (checked 2026-11-28). What it hides: server-side validation and re-serialisation of the
uploaded spec, real run states, KFP's cache. What ``mlops upload`` and
``mlops submit`` are responsible for is the conversation ``kfp.Client`` has with that
server, so this module answers exactly the endpoints those flows call (found in
``kfp/client/client.py`` and ``kfp_server_api/api/*.py``), in the same JSON shapes
(snake_case field names, RFC 3339 times, grpc-gateway error bodies), and records
every request - method, path, query, headers, body - for the tests to assert on.
It stores what it is sent (pipelines, versions with their uploaded YAML, experiments,
runs) and plays a scripted sequence of run states to each ``GET /runs/{id}``.
It is not a model of KFP's scheduling, caching or validation of pipeline specs.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

API = "/apis/v2beta1"
LOGIN_PAGE = "/dex/auth"

# (run state, {task display name: task state}) per GET of a run; the last entry repeats.
RunScript = list[tuple[str, dict[str, str]]]

SUCCEEDING_RUN: RunScript = [
    ("PENDING", {}),
    ("RUNNING", {"prepare-data": "RUNNING"}),
    ("RUNNING", {"prepare-data": "SUCCEEDED", "train-model": "RUNNING"}),
    ("SUCCEEDED", {"prepare-data": "SUCCEEDED", "train-model": "SUCCEEDED"}),
]
FAILING_RUN: RunScript = [
    ("RUNNING", {"prepare-data": "RUNNING"}),
    ("FAILED", {"prepare-data": "SUCCEEDED", "train-model": "FAILED"}),
]


# How a client with kube credentials reaches KFP: through the API server's service proxy.
KUBE_PROXY = re.compile(r"^/api/v1/namespaces/[^/]+/services/ml-pipeline:http/proxy/*")


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # as KFP's own server sees it (an API server proxy prefix removed)
    raw_path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def files(self) -> dict[str, tuple[str, bytes]]:
        """Multipart form parts by field name: (filename, content)."""
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + self.headers["content-type"].encode() + b"\r\n\r\n" + self.body
        )
        parts = {}
        for part in message.iter_parts():
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            parts[str(part.get_param("name", header="content-disposition"))] = (
                str(part.get_filename()),
                payload,
            )
        return parts


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _grpc_code(status: int) -> int:
    return {400: 3, 401: 16, 403: 7, 404: 5, 409: 6}.get(status, 13)


def _matches(item: dict[str, Any], filter_json: str | None) -> bool:
    """The EQUALS-on-a-string-field predicates kfp.Client and mlops send."""
    if not filter_json:
        return True
    for predicate in json.loads(filter_json).get("predicates", []):
        if predicate.get("operation") not in (1, "EQUALS"):
            raise ApiError(400, f"fake KFP supports only EQUALS predicates, got {predicate}")
        if item.get(predicate["key"]) != predicate.get("string_value", predicate.get("stringValue")):
            return False
    return True


@dataclass
class FakeKfp:
    """The fake server; use as a context manager or call start()/stop().

    Attributes:
        token: when set, every request must carry ``Authorization: Bearer <token>``, else 401.
        run_script: states played to successive ``GET /runs/{id}``.
        run_error: ``error.message`` of a run whose scripted state is FAILED.
        errors: (method, path) -> (status, message) answered instead of the normal response.
        login_redirect: answer requests without the token as Kubeflow's auth proxy does, with
            a redirect to an HTML login page, instead of a 401.
    """

    token: str | None = None
    login_redirect: bool = False
    run_script: RunScript = field(default_factory=lambda: list(SUCCEEDING_RUN))
    run_error: str = "task train-model failed: ValueError: loss is NaN"
    errors: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    pipelines: dict[str, dict[str, Any]] = field(default_factory=dict)
    versions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    experiments: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    _clock: datetime = field(default_factory=lambda: datetime(2025, 1, 1, tzinfo=UTC))
    _polls: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    # ----------------------------------------------------------------- lifecycle
    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeKfp:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                request = RecordedRequest(
                    method=self.command,
                    path=KUBE_PROXY.sub("/", parts.path),
                    raw_path=parts.path,
                    query=parse_qs(parts.query),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                status, headers, data = fake._respond(request)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_PATCH = _handle

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FakeKfp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ queries
    def calls(self, method: str, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == method and r.path == API + path]

    # ---------------------------------------------------------------- dispatch
    def _respond(self, request: RecordedRequest) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests.append(request)
            if request.path == LOGIN_PAGE:
                return 200, {"Content-Type": "text/html"}, b"<html><body>Log in to Kubeflow</body></html>"
            authorised = self.token is None or request.headers.get("authorization") == f"Bearer {self.token}"
            if not authorised and self.login_redirect:
                return 302, {"Location": LOGIN_PAGE}, b""
            try:
                if not authorised:
                    raise ApiError(401, "Unauthenticated: request is missing a valid bearer token")
                override = self.errors.get((request.method, request.path))
                if override:
                    raise ApiError(*override)
                payload = self._route(request)
                status = 200
            except ApiError as exc:
                status = exc.status
                payload = {"error": exc.message, "code": _grpc_code(exc.status), "message": exc.message}
            return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()

    def _route(self, request: RecordedRequest) -> Any:
        m, path = request.method, request.path.removeprefix(API)
        routes: list[tuple[str, str, Any]] = [
            ("GET", r"/healthz", lambda: {"multi_user": False, "pipeline_store": "database"}),
            ("GET", r"/pipelines", lambda: self._list_pipelines(request)),
            ("POST", r"/pipelines", lambda: self._create_pipeline(request.json())),
            ("POST", r"/pipelines/upload_version", lambda: self._upload_version(request)),
            ("GET", r"/pipelines/(?P<pid>[^/]+)/versions", None),
            ("GET", r"/pipelines/(?P<pid>[^/]+)/versions/(?P<vid>[^/]+)", None),
            ("GET", r"/experiments", lambda: self._list_experiments(request)),
            ("POST", r"/experiments", lambda: self._create_experiment(request.json())),
            ("POST", r"/runs", lambda: self._create_run(request.json())),
            ("GET", r"/runs/(?P<rid>[^/:]+)", None),
        ]
        for method, pattern, action in routes:
            match = re.fullmatch(pattern, path)
            if method != m or not match:
                continue
            if action is not None:
                return action()
            ids = match.groupdict()
            if "rid" in ids:
                return self._get_run(ids["rid"])
            if "vid" in ids:
                return self._version(ids["pid"], ids["vid"])
            return self._list_versions(ids["pid"], request)
        raise ApiError(404, f"fake KFP has no route for {m} {request.path}")

    # ----------------------------------------------------------------- helpers
    def _new_id(self, kind: str) -> str:
        return f"{kind}-{next(self._ids)}"

    def _now(self) -> str:
        self._clock += timedelta(seconds=1)
        return self._clock.strftime("%Y-%m-%dT%H:%M:%SZ")

    @staticmethod
    def _one(query: dict[str, list[str]], key: str) -> str | None:
        values = query.get(key)
        return values[0] if values else None

    # --------------------------------------------------------------- pipelines
    def _list_pipelines(self, request: RecordedRequest) -> dict[str, Any]:
        namespace = self._one(request.query, "namespace") or ""
        found = [
            p
            for p in self.pipelines.values()
            if p.get("namespace", "") == namespace and _matches(p, self._one(request.query, "filter"))
        ]
        return {"pipelines": found, "total_size": len(found)} if found else {}

    def _create_pipeline(self, body: dict[str, Any]) -> dict[str, Any]:
        name = body.get("display_name") or body.get("name")
        if not name:
            raise ApiError(400, "pipeline display_name is required")
        if any(p["display_name"] == name for p in self.pipelines.values()):
            raise ApiError(409, f"pipeline {name} already exists")
        pipeline = {
            "pipeline_id": self._new_id("pipeline"),
            "display_name": name,
            "name": name,
            "description": body.get("description", ""),
            "namespace": body.get("namespace", ""),
            "created_at": self._now(),
        }
        self.pipelines[pipeline["pipeline_id"]] = pipeline
        self.versions[pipeline["pipeline_id"]] = []
        return pipeline

    def _spec_of(self, request: RecordedRequest) -> Any:
        files = request.files()
        if "uploadfile" not in files:
            raise ApiError(400, "multipart field uploadfile is missing")
        docs = list(yaml.safe_load_all(files["uploadfile"][1]))
        if not docs or not isinstance(docs[0], dict) or "root" not in docs[0]:
            raise ApiError(400, "uploadfile is not a KFP pipeline spec")
        return docs[0] if len(docs) == 1 else {"pipeline_spec": docs[0], "platform_spec": docs[1]}

    def _add_version(self, pipeline_id: str, name: str, description: str, spec: Any) -> dict[str, Any]:
        if any(v["display_name"] == name for v in self.versions[pipeline_id]):
            raise ApiError(409, f"pipeline version {name} already exists in pipeline {pipeline_id}")
        version = {
            "pipeline_id": pipeline_id,
            "pipeline_version_id": self._new_id("version"),
            "display_name": name,
            "name": name,
            "description": description,
            "created_at": self._now(),
            "pipeline_spec": spec,
        }
        self.versions[pipeline_id].append(version)
        return version

    def _upload_version(self, request: RecordedRequest) -> dict[str, Any]:
        spec = self._spec_of(request)
        pipeline_id = self._one(request.query, "pipelineid")
        if pipeline_id not in self.pipelines:
            raise ApiError(404, f"pipeline {pipeline_id} not found")
        name = self._one(request.query, "name") or self._one(request.query, "display_name") or ""
        return self._add_version(pipeline_id, name, self._one(request.query, "description") or "", spec)

    def _list_versions(self, pipeline_id: str, request: RecordedRequest) -> dict[str, Any]:
        if pipeline_id not in self.versions:
            raise ApiError(404, f"pipeline {pipeline_id} not found")
        found = [v for v in self.versions[pipeline_id] if _matches(v, self._one(request.query, "filter"))]
        sort_by = self._one(request.query, "sort_by") or ""
        if sort_by:
            key, _, direction = sort_by.partition(" ")
            found.sort(key=lambda v: v[key], reverse=direction == "desc")
        size = int(self._one(request.query, "page_size") or 0)
        found = found[:size] if size else found
        return {"pipeline_versions": found, "total_size": len(found)} if found else {}

    def _version(self, pipeline_id: str, version_id: str) -> dict[str, Any]:
        for version in self.versions.get(pipeline_id, []):
            if version["pipeline_version_id"] == version_id:
                return version
        raise ApiError(404, f"pipeline version {version_id} not found")

    # ------------------------------------------------------------- experiments
    def _list_experiments(self, request: RecordedRequest) -> dict[str, Any]:
        namespace = self._one(request.query, "namespace") or ""
        found = [
            e
            for e in self.experiments.values()
            if e.get("namespace", "") == namespace and _matches(e, self._one(request.query, "filter"))
        ]
        return {"experiments": found, "total_size": len(found)} if found else {}

    def _create_experiment(self, body: dict[str, Any]) -> dict[str, Any]:
        experiment = {
            "experiment_id": self._new_id("experiment"),
            "display_name": body["display_name"],
            "description": body.get("description") or "",
            "namespace": body.get("namespace") or "",
            "created_at": self._now(),
            "storage_state": "AVAILABLE",
        }
        self.experiments[experiment["experiment_id"]] = experiment
        return experiment

    # -------------------------------------------------------------------- runs
    def _create_run(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("experiment_id") not in self.experiments:
            raise ApiError(404, f"experiment {body.get('experiment_id')} not found")
        reference = body.get("pipeline_version_reference") or {}
        self._version(reference.get("pipeline_id", ""), reference.get("pipeline_version_id", ""))
        run = {
            **body,
            "run_id": self._new_id("run"),
            "created_at": self._now(),
            "state": self.run_script[0][0],
        }
        self.runs[run["run_id"]] = run
        self._polls[run["run_id"]] = 0
        return run

    def _get_run(self, run_id: str) -> dict[str, Any]:
        if run_id not in self.runs:
            raise ApiError(404, f"run {run_id} not found")
        step = min(self._polls[run_id], len(self.run_script) - 1)
        self._polls[run_id] += 1
        state, tasks = self.run_script[step]
        run = {
            **self.runs[run_id],
            "state": state,
            "run_details": {
                "task_details": [
                    {"run_id": run_id, "task_id": f"task-{i}", "display_name": name, "state": task_state}
                    for i, (name, task_state) in enumerate(tasks.items())
                ]
            },
        }
        if state == "FAILED":
            run["error"] = {"code": 2, "message": self.run_error}
        return run
