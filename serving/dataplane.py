"""The protocol-neutral core of the model server: what REST and gRPC both answer, done once.

Modelled on KServe's ``kserve.protocol.dataplane.DataPlane``: server liveness and
readiness, server metadata, model readiness and metadata, and inference taking an
:class:`InferRequest` and returning an :class:`InferResponse`, neither of which knows
a transport. The transports are thin faces over it: :mod:`serving.handlers` (REST: V2
JSON, V2 binary tensors, V1) and :mod:`serving.grpc_service` (gRPC) only decode their
wire format into an :class:`InferRequest`, call the same method, and encode the answer;
a refusal is a :class:`~serving.errors.ServingError` each of them turns into its own
status code through one table (:mod:`serving.errors`).

Everything that is not wire format happens here, once, for every transport:

- the router (:mod:`serving.routing`) picks the backend that answers, rollout split included;
- the chosen model's :class:`ModelContract` is what the request is read against: the
  transport's decoder (an :class:`Inputs`) maps its wire fields onto it, and the checks
  shared by every protocol (one input ``features`` of FP32/FP64 and shape ``[N, width]``,
  the one output ``probability``, values finite in FP32 and valid categorical codes) run
  here or in the contract, so the same bad tensor gets the same error on REST and gRPC;
- the backend scores (batched: REST and gRPC requests share batches), the answer is
  checked finite, the request log records it, and the metrics count every request,
  answered or refused, under the protocol label the transport gave.

The inference path is the measured hot path: per request it allocates the request and
response records and the admitted matrix, and nothing is copied on the way.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from mlops.model.onnx_model import INPUT_NAME, OUTPUT_NAME
from mlops.origin_facts import package_version
from serving.batching import InFlight
from serving.columns import ColumnReader
from serving.entity_features import START_HINT
from serving.errors import InternalError, InvalidInput, ServingError, http_status
from serving.explanations import REASONS_OUTPUT, Explainer
from serving.tensors import BINARY_EXTENSION, DTYPES, FeatureBounds, RowEncoder

if TYPE_CHECKING:
    from mlops.data.features import FeatureSpec
    from serving.entity_features import EntityLookup
    from serving.metrics import ServingMetrics
    from serving.request_log import RequestLogger
    from serving.routing.model_router import ModelRouter, Target
    from serving.runtime import LoadedModel

log = logging.getLogger("serving")
SERVER_NAME = "mlops-serving"
PLATFORM = "onnxruntime_onnx"
EXTENSIONS = (BINARY_EXTENSION,)
DATATYPES = tuple(DTYPES)
"""The wire datatypes the ``features`` input accepts (a tuple: a JSON list as datatype must not be hashed)."""
INPUT_WHERE = f"input {INPUT_NAME!r}"


class ModelContract:
    """What one model version accepts, built once per model file: the terms a request is read in.

    Every transport's decoder reads its request against the contract of the model the
    router chose; the checks the Open Inference Protocol transports share are methods
    here, so REST and gRPC refuse the same tensor with the same message.
    """

    def __init__(self, spec: FeatureSpec):
        self.width = spec.n_features
        self.bounds = FeatureBounds(spec)
        """The strict numeric check every protocol's values end in."""
        self.encoder = RowEncoder(spec)
        """Rows of named raw features (V1) to the encoded matrix."""
        self.columns = ColumnReader(spec)
        """One input per data column (V2, per-column form) to the encoded matrix."""
        self.expected = (
            f"this model takes one input {INPUT_NAME!r} of datatype FP32 or FP64 and shape [N, {self.width}]"
        )
        """The request form, for messages that point a client at the fix."""

    def check_inputs(self, names: list[Any]) -> bool:
        """Which form the request's inputs (``names``, in order) take: ``True`` for the packed tensor
        (exactly one input, ``features``), ``False`` for one input per data column
        (:mod:`serving.columns`); anything else is refused."""
        if names == [INPUT_NAME]:  # the packed form: one comparison on the hot path
            return True
        if INPUT_NAME in names:
            extra = [n for n in names if n != INPUT_NAME]
            raise InvalidInput(f"unexpected input(s) {extra}; {self.expected}")
        if not any(self.columns.knows(name) for name in names):
            raise InvalidInput(
                f"missing input {INPUT_NAME!r} (got {names}); {self.expected}, or {self.columns.form}"
            )
        return False

    def check_tensor(self, datatype: Any, shape: Any) -> int:
        """The ``features`` tensor's declared datatype and shape; returns its row count."""
        if datatype not in DATATYPES:
            raise InvalidInput(
                f"{INPUT_WHERE} has datatype {datatype!r}; accepted datatypes are {list(DATATYPES)}"
            )
        # type() is int: a bool is not a dimension; two comparisons instead of a generator per request.
        if not (
            type(shape) is list
            and len(shape) == 2
            and type(shape[0]) is int
            and type(shape[1]) is int
            and shape[0] >= 0
            and shape[1] == self.width
        ):
            raise InvalidInput(f"{INPUT_WHERE} has shape {shape!r}; {self.expected}")
        return shape[0]


class Inputs(Protocol):
    """A request's input as its transport decoded it, before the model's contract is applied."""

    where: ClassVar[str]
    """How error messages name the input (``input 'features'``, ``'instances'``)."""

    def read(self, contract: ModelContract) -> np.ndarray:
        """The values as ``[rows, contract.width]``, any numeric dtype, NaN for missing; not yet admitted.

        Raises :class:`~serving.errors.InvalidInput` naming what in the wire form is wrong.
        """
        ...

    def subjects(self, name: str) -> list[str | None] | None:
        """Per row, the text of data column ``name`` (the model's subject key) when the request carries it
        (per-column and named-row forms), else None; called after :meth:`read` accepted the request."""
        ...

    def keyed(self) -> tuple[str, list[Any]] | None:
        """``(name, values)`` when the request carries one named field and nothing else (V1 instances each
        ``{name: value}``; V2/gRPC one input ``name`` of BYTES or INT, shape ``[N]``): entity ids, when the
        name is the feature store's entity (:mod:`serving.entity_features`); else None. Only asked on a
        server with a feature store, or for a refused request's message."""
        ...


@dataclass(slots=True)
class InferRequest:
    """One inference request, whatever transport carried it."""

    target: Target
    """The model (and version) it names and its headers: what the router reads."""
    inputs: Inputs
    """The input as its transport decoded it; read against the contract of the model the router picks."""
    protocol: str
    """The ``protocol`` label its metrics are counted under (``v2``, ``v1``, ``grpc``)."""
    outputs: Sequence[Any] = ()
    """The output names the client asked for (none: the model's one output)."""
    id: str | int | None = None
    """The client's request id, echoed in the response."""
    log_id: str = ""
    """The id the request log keeps its rows under (what ``mlops feedback`` joins labels by)."""
    received: float = field(default_factory=time.perf_counter)
    """``time.perf_counter()`` when the transport received it: the start of its latency."""
    explain: bool = False
    """Answer each row's reasons with its score (V1 ``:explain``, V2 ``parameters.explain``)."""


@dataclass(slots=True)
class InferResponse:
    """The answer to an :class:`InferRequest`, for its transport to encode."""

    model_name: str
    model_version: str
    """The version that scored it (a hot reload or a canary may have chosen another than the last answer's)."""
    id: str | int | None
    probabilities: np.ndarray
    """float32 [rows]: the model's one output, ``probability``."""
    reasons: list[list[dict[str, Any]]] | None = None
    """Per row its reasons (``feature``, ``value``, ``contribution``, ``text``), when the request asked for them."""


@dataclass(frozen=True)
class ServerMetadata:
    name: str
    version: str
    extensions: tuple[str, ...]


@dataclass(frozen=True)
class TensorMetadata:
    name: str
    datatype: str
    shape: list[int]


@dataclass(frozen=True)
class ModelMetadata:
    """The protocol's model metadata; REST sends all of it, gRPC's message has no ``parameters``."""

    name: str
    versions: list[str]
    platform: str
    inputs: list[TensorMetadata]
    outputs: list[TensorMetadata]
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ModelStatus:
    name: str
    version: str
    ready: bool


def describe(name: str, version: str, spec: FeatureSpec, precision: str) -> ModelMetadata:
    """The metadata of ``name`` ``version``: its tensors, feature names, vocabularies and classes."""
    return ModelMetadata(
        name=name,
        versions=[version],
        platform=PLATFORM,
        inputs=[TensorMetadata(INPUT_NAME, "FP32", [-1, spec.n_features])],
        outputs=[TensorMetadata(OUTPUT_NAME, "FP32", [-1])],
        parameters={
            "feature_names": list(spec.names),
            "categorical_vocabularies": {
                n: list(v) for n, v in zip(spec.categorical, spec.vocabularies, strict=True)
            },
            "precision": precision,
            # What the output is the probability of: the label's positive value (the schema's positive_label).
            "label": spec.label,
            "negative_class": spec.classes[0],
            "positive_class": spec.classes[1],
        },
    )


class RequestIds:
    """Ids for requests that came without one: 32 hex digits like ``uuid4().hex``, at a fraction of its cost.

    A random 64-bit prefix drawn once per server, then a counter: unique across the server's life and,
    with overwhelming probability, across its replicas and restarts (what ``mlops feedback`` joins
    labels by). ``uuid4`` reads the OS's random source on every call: 2.5 % of the server's CPU on
    the one-row REST load (py-spy), this a string format.
    """

    def __init__(self) -> None:
        self._prefix = secrets.token_hex(8)
        self._counter = itertools.count()

    def new(self) -> str:
        return f"{self._prefix}{next(self._counter):016x}"


class DataPlane:
    """The server's answers, shared by its transports: one router, one metrics registry, one request log."""

    def __init__(
        self, name: str, router: ModelRouter, metrics: ServingMetrics, explainer: Explainer | None = None
    ):
        self.name = name
        self.router = router
        self.metrics = metrics
        self.explainer = explainer or Explainer(max_rows=16, top_k=4, reference_rows=64)
        """What a request asking for reasons may cost, and how they are answered."""
        self.request_log: RequestLogger | None = None
        """Set by the app's lifespan when request logging is on."""
        self.request_ids = RequestIds()
        """Where a request without an id gets one."""
        self.in_flight = InFlight()
        """Inference requests the transports have in progress: one alone skips the batcher's queue."""
        self.entities: EntityLookup | None = None
        """Where requests by entity id get their features (``mlops serve --features``); None: values only."""
        self._contracts: dict[str, ModelContract] = {}
        self._server = ServerMetadata(SERVER_NAME, package_version(), EXTENSIONS)

    @property
    def live_version(self) -> str:
        """The primary model's version: the label of metrics not tied to a scored request."""
        return self.router.primary.holder.current.version

    def contract(self, model: LoadedModel) -> ModelContract:
        """``model``'s contract, built once per model file."""
        found = self._contracts.get(model.sha256)
        if found is None:
            found = self._contracts[model.sha256] = ModelContract(model.spec)
        return found

    def live(self) -> bool:
        """The process answers."""
        return True

    def ready(self) -> bool:
        """The server can score: its model is loaded and verified before the port opens, and stays loaded."""
        return True

    def server_metadata(self) -> ServerMetadata:
        return self._server

    def models(self) -> list[str]:
        """The names of the models served (V1's listing)."""
        return [self.name]

    def model_ready(self, target: Target) -> ModelStatus:
        """The model ``target`` names is ready; raises :class:`~serving.errors.ModelNotFound` otherwise.

        Not counted as an error here: to a readiness probe "not served" is an answer (gRPC
        says ``ready: false``); REST, which answers it with a 404, counts it like its other 404s.
        """
        scorer, _ = self.router.select(target)
        return ModelStatus(self.name, scorer.holder.current.version, True)

    def model_metadata(self, target: Target) -> ModelMetadata:
        """The metadata of the model ``target`` names (the version the router would score it with)."""
        try:
            scorer, _ = self.router.select(target)
        except ServingError as exc:
            self.failed(exc)
            raise
        current = scorer.holder.current
        return describe(self.name, current.version, current.spec, current.precision)

    async def infer(self, request: InferRequest) -> InferResponse:
        """Route, read, admit, score (batched), check, log and count ``request``.

        Raises a :class:`~serving.errors.ServingError` (already counted) for every refusal;
        an unexpected failure is logged with its traceback and raised as
        :class:`~serving.errors.InternalError`.
        """
        try:
            scorer, version = self.router.select(request.target)
            contract = self.contract(scorer.holder.current)
            if self.entities is not None:  # a server without a feature store pays one comparison
                keyed = request.inputs.keyed()
                if keyed is not None and keyed[0] == self.entities.entity:
                    request.inputs = await self.entities.rows(keyed[1])
            values = request.inputs.read(contract)
            for name in request.outputs:
                if name != OUTPUT_NAME and not (request.explain and name == REASONS_OUTPUT):
                    raise InvalidInput(
                        f"requested output {name!r}; this model has one output {OUTPUT_NAME!r}"
                    )
            x = contract.bounds.admit(values, request.inputs.where)
            if request.explain:
                self.explainer.admit_rows(len(x))
            y, used = await scorer.predict(x, version)
            if len(y) and not np.isfinite(y).all():
                row = int(np.flatnonzero(~np.isfinite(y))[0])
                raise InvalidInput(
                    f"the model produced no finite probability for row {row}: its values lie far outside "
                    "anything it was trained on; check the row's units and scale"
                )
            reasons = None
            if request.explain:
                started = time.perf_counter()
                reasons = await self.explainer.explain(used, self.explainer.admit(used, len(x)), x)
                self.metrics.explained(self.name, used.version, len(x), time.perf_counter() - started)
            if self.request_log is not None and len(x):
                subject = used.spec.subject
                subjects = request.inputs.subjects(subject) if subject else None
                self.request_log.record(used, x, y, request.log_id, request.explain, subjects)
        except ServingError as exc:
            error = self._entity_hint(request, exc) if type(exc) is InvalidInput else exc
            self.failed(error, request.protocol)
            if error is exc:
                raise
            raise error from exc
        except Exception as exc:
            error = self.internal_error(exc)
            self.failed(error, request.protocol)
            raise error from exc
        self.metrics.answered(
            self.name, used.version, request.protocol, 200, time.perf_counter() - request.received
        )
        return InferResponse(self.name, used.version, request.id, y, reasons)

    def _entity_hint(self, request: InferRequest, error: InvalidInput) -> InvalidInput:
        """``error``, or, when the refused request carried one field no feature of the model is named (entity
        ids, by the look of it), an error saying how this server takes entity ids."""
        try:
            keyed = request.inputs.keyed()
        except Exception:  # a malformed body: the original message says what is wrong
            return error
        if keyed is None:
            return error
        name = keyed[0]
        spec = self.router.primary.holder.current.spec
        if name in spec.names or name == INPUT_NAME:
            return error
        if self.entities is None:
            return InvalidInput(
                f"the request carries only {name!r}, which is no feature of this model; to send entity ids "
                f"instead of feature values, {START_HINT}; else send the features {list(spec.names)}"
            )
        return InvalidInput(
            f"the request carries only {name!r}; this server looks features up by entity "
            f"{self.entities.entity!r} (send {{{self.entities.entity!r}: id}} rows or an input named so), "
            f"or send the features {list(spec.names)}"
        )

    def internal_error(self, exc: Exception) -> InternalError:
        """``exc``, which no check foresaw, logged with its traceback (call inside ``except``) and wrapped."""
        log.exception("inference failed")
        return InternalError(f"inference failed: {type(exc).__name__}: {exc}")

    def failed(self, error: ServingError, protocol: str | None = None) -> None:
        """Count a refusal under its reason; with ``protocol``, also as an inference request answered."""
        version = self.live_version
        if protocol is not None:
            self.metrics.answered(self.name, version, protocol, http_status(error))
        self.metrics.error(self.name, version, error.reason)
