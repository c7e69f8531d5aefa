"""Typed configuration of the model server: one object, validated once, passed everywhere.

Defaults are the values measured best on a small tabular MLP on a 2-core machine
(see ``serving/README.md``); each one is a knob because a heavier model or a bigger
machine moves the optimum.
"""

from __future__ import annotations

import ipaddress
import re
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ADMIN_TOKEN_ENV = "MLOPS_SERVING_ADMIN_TOKEN"
"""The environment variable ``mlops serve`` and ``mlops rollout`` read the admin token from when no flag gives it."""


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` exposes the server to this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost may resolve to any interface
        return False


class ServerConfig(BaseModel):
    """Everything ``mlops serve`` can be told; the CLI flags map one-to-one onto these fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    section: ClassVar[str] = "server"

    model_name: str = Field(default="credit-default", description="Registered model to serve.")
    alias: str = Field(default="champion", description="Registry alias the server follows (and hot-reloads).")
    tracking_uri: str = Field(
        description="MLflow tracking/registry URI, e.g. sqlite:///<workspace>/mlflow.db or http://mlflow:5000."
    )
    host: str = Field(default="127.0.0.1", description="Interface to bind; 0.0.0.0 inside a container.")
    port: int = Field(default=8080, ge=0, le=65535, description="TCP port to bind; 0 picks a free one.")
    grpc_port: int = Field(
        default=0,
        ge=0,
        le=65535,
        description="TCP port of the gRPC endpoint (Open Inference Protocol GRPCInferenceService) on the same "
        "host, model, batching, auth and metrics as REST; 0 serves REST only.",
    )
    grpc_threads: int = Field(
        default=0,
        ge=0,
        le=1024,
        description="0 runs gRPC on grpc.aio in the event loop; N > 0 on a thread-pool grpc.server with N threads, "
        "each call run on the event loop while its thread waits (faster in most runs on a loaded machine, not "
        "yet measured quiet: serving/README.md).",
    )
    workers: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Server processes answering on the one port (the HTTP server's own workers), each with its own model "
        "session, batcher and request-log writer; /metrics adds up all of them. More than 1 needs "
        "--no-rollout-admin (a traffic plan lives in one process).",
    )
    http_server: Literal["uvicorn", "granian"] = Field(
        default="uvicorn",
        description="The HTTP server under the app: uvicorn (Python's httptools in the event loop) or granian "
        "(HTTP parsed and written in Rust, the app over its RSGI interface; same routes and answers). granian "
        "always runs its worker processes under a parent, as --workers N does.",
    )
    intra_op_threads: int = Field(
        default=1,
        ge=1,
        le=256,
        description="ONNX Runtime threads inside one operator; 1 is fastest for small MLPs on few cores.",
    )
    inter_op_threads: int = Field(
        default=1, ge=1, le=256, description="ONNX Runtime threads across independent operators."
    )
    max_batch_size: int = Field(
        default=64,
        ge=1,
        le=65536,
        description="Most rows one ONNX Runtime call coalesces from concurrent requests; 1 disables batching "
        "(each request runs in its own handler).",
    )
    max_queue_delay_ms: float = Field(
        default=0.0,
        ge=0.0,
        le=1000.0,
        description="How long a batch may wait for more requests before running; 0 coalesces only what is "
        "already queued and adds no latency.",
    )
    inference_in_thread: bool = Field(
        default=False,
        description="Run ONNX Runtime on a worker thread so the event loop keeps parsing requests meanwhile; "
        "pays off for models slower than about a millisecond per batch.",
    )
    max_payload_bytes: int = Field(
        default=8 * 1024 * 1024, ge=1024, description="Larger request bodies get 413 without being read."
    )
    auth_token: str = Field(
        default="",
        repr=False,
        description="When set, every route except the health checks needs 'Authorization: Bearer <token>'.",
    )
    admin_token: str = Field(
        default="",
        repr=False,
        description="Bearer token of the rollout admin route (PUT/GET /v2/models/<name>/rollout), which moves "
        "traffic: when set, only this token opens it (the inference token gets 403) and it opens nothing else. "
        "Required when the route is served on a non-loopback host.",
    )
    rollout_admin: bool = Field(
        default=True,
        description="Serve the rollout admin route (what `mlops rollout` drives); --no-rollout-admin for a "
        "server no rollout steers.",
    )
    reload_interval_s: float = Field(
        default=30.0, ge=0.0, description="How often to check whether the alias moved; 0 disables hot reload."
    )
    request_log_uri: str = Field(
        default="",
        description="Directory (local path, file:// or s3:// URI) receiving sampled request/response Parquet "
        "files under <uri>/<model_name>/; empty disables request logging.",
    )
    request_log_sample_rate: float = Field(
        default=1.0, ge=0.0, le=1.0, description="Fraction of requests whose rows are logged."
    )
    request_log_flush_s: float = Field(
        default=10.0,
        gt=0.0,
        description="Buffered log rows are written at least this often (and on shutdown).",
    )
    request_log_max_rows: int = Field(
        default=50_000, ge=1, description="A buffer reaching this many rows is written without waiting."
    )
    explain_max_rows: int = Field(
        default=16,
        ge=0,
        le=4096,
        description="Most rows one request may ask reasons for (V1 :explain, V2 parameters.explain); each costs "
        "1 + features x reference rows scores, so a larger request is refused (400 naming this limit); 0 turns "
        "reasons off.",
    )
    explain_top_k: int = Field(
        default=4, ge=1, le=256, description="Reasons answered per row, largest |contribution| first."
    )
    explain_reference_rows: int = Field(
        default=64,
        ge=1,
        le=10_000,
        description="Most of the version's stored reference rows (explain_reference.parquet) a reason is "
        "measured against; fewer cost less per explained row and average over fewer rows.",
    )
    features: str = Field(
        default="",
        description="Feature service (Feast) whose online features a request by entity id is scored with (V1 "
        "instances of {ENTITY: id}, V2/gRPC one input named after the entity); `mlops serve` starts the feature "
        "server over the workspace's features/ repository (or --feature-repo) unless --feature-server names a "
        "running one. Empty: requests carry feature values only.",
    )
    feature_server: str = Field(
        default="",
        description="HOST:PORT of a running Feast feature server (`feast serve`) to look features up from; "
        "empty with --features starts one for the server's lifetime.",
    )
    feature_entity: str = Field(
        default="", description="The entity's join key a request's ids come under (with --features)."
    )
    feature_max_age_s: float = Field(
        default=0.0,
        ge=0.0,
        description="Online values older than this many seconds are refused (400 naming the id); 0 accepts any "
        "age (with --features).",
    )
    feature_timeout_s: float = Field(
        default=2.0,
        gt=0.0,
        description="Longest one online feature lookup may wait before the request gets 503.",
    )
    model_cache_dir: str = Field(
        default="",
        description="Where downloaded model files are kept; empty uses a temporary directory removed on exit.",
    )

    @field_validator("model_name", "alias")
    @classmethod
    def _registry_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(
                f"{value!r} is not a registry name; use letters, digits, '.', '_' or '-' (e.g. 'credit-default')"
            )
        return value

    @field_validator("tracking_uri")
    @classmethod
    def _tracking_uri_set(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("tracking_uri is empty; pass the MLflow store, e.g. sqlite:///.mlops/mlflow.db")
        return value

    @field_validator("auth_token", "admin_token")
    @classmethod
    def _token_is_header_safe(cls, value: str) -> str:
        if value != value.strip() or any(ord(c) < 33 or ord(c) > 126 for c in value):
            raise ValueError(
                "the token must be printable ASCII without spaces (it travels in an HTTP header)"
            )
        return value

    @model_validator(mode="after")
    def _admin_route_has_its_own_credential(self) -> ServerConfig:
        if self.admin_token and self.admin_token == self.auth_token:
            raise ValueError(
                "admin_token equals auth_token: every client allowed to score could move traffic; "
                "give the rollout admin route a token of its own"
            )
        if self.rollout_admin and not self.admin_token and not is_loopback(self.host):
            raise ValueError(
                f"the rollout admin route (PUT /v2/models/{self.model_name}/rollout moves production traffic) "
                f"would be served on {self.host}, which is not a loopback interface, without an admin token: "
                f"pass --admin-token-file (or set {ADMIN_TOKEN_ENV}), or --no-rollout-admin if no rollout "
                "drives this server"
            )
        return self

    @model_validator(mode="after")
    def _one_traffic_plan(self) -> ServerConfig:
        if self.workers > 1 and self.rollout_admin:
            raise ValueError(
                f"workers {self.workers} with the rollout admin route: a PUT of the traffic plan reaches one "
                "process and the others keep theirs, so requests would split between two plans; pass "
                "--no-rollout-admin (a rollout across pods, e.g. KServe's canary, still works), or --workers 1"
            )
        return self

    @model_validator(mode="after")
    def _sampling_needs_a_destination(self) -> ServerConfig:
        if self.request_log_uri and self.request_log_sample_rate == 0.0:
            raise ValueError(
                "request_log_uri is set but request_log_sample_rate is 0; set a rate in (0, 1] or drop the uri"
            )
        return self

    @model_validator(mode="after")
    def _features_need_a_server(self) -> ServerConfig:
        if self.features and not (self.feature_server and self.feature_entity):
            raise ValueError(
                f"features {self.features!r} needs feature_server (HOST:PORT) and feature_entity; `mlops serve "
                "--features` fills both from the feature repository"
            )
        if self.feature_server and ":" not in self.feature_server:
            raise ValueError(f"feature_server {self.feature_server!r} is not HOST:PORT")
        return self

    @property
    def model_uri(self) -> str:
        return f"models:/{self.model_name}@{self.alias}"
