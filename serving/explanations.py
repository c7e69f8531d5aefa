"""Reasons served with each score: the version's reference rows and the limits on what explaining costs.

A version registered with reference rows (:data:`~mlops.model.row_attribution.REFERENCE_FILE`, named by
the version tag :data:`~mlops.vocabulary.EXPLAIN_REFERENCE_TAG`) is loaded with them, encoded once by its
FeatureSpec; a request that asks for reasons (V1 ``:explain``, V2 ``parameters: {"explain": true}``, gRPC
the same parameter) is scored as usual, then attributed by
:func:`mlops.model.row_attribution.attribute` — the method the validation report uses — in one ONNX
Runtime call on a worker thread, so the event loop keeps answering other requests meanwhile. An
explained row costs ``1 + features * reference rows`` scores, so the rows a request may ask reasons for
are bounded (``explain_max_rows``) and so are the reference rows used (``explain_reference_rows``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import numpy as np

from mlops.model.row_attribution import REFERENCE_FILE, attribute, raw_values, reasons
from serving.errors import Conflict, InvalidInput

if TYPE_CHECKING:
    from serving.runtime import ExplainReference, LoadedModel

REASONS_OUTPUT = "reasons"
"""The V2 output (BYTES, shape ``[N]``) carrying each row's reasons as a JSON text, when the request asked."""
EXPLAIN_PARAMETER = "explain"
"""The V2 request parameter (``parameters: {"explain": true}``) asking for reasons with the scores."""


class Explainer:
    """What explaining a request may cost and how its reasons are answered (one per server)."""

    def __init__(self, max_rows: int, top_k: int, reference_rows: int):
        self.max_rows = max_rows
        self.top_k = top_k
        self.reference_rows = reference_rows

    def admit_rows(self, rows: int) -> None:
        """Refuse a request asking reasons for more than ``max_rows`` rows (before it is scored)."""
        if rows > self.max_rows:
            if self.max_rows == 0:
                raise InvalidInput(
                    "this server answers no reasons (explain_max_rows is 0); start it with "
                    "--explain-max-rows N to allow them"
                )
            raise InvalidInput(
                f"reasons asked for {rows} rows; this server explains at most {self.max_rows} rows per request "
                f"(explain_max_rows, --explain-max-rows): split the request"
            )

    def admit(self, model: LoadedModel, rows: int) -> ExplainReference:
        """The reference rows ``model`` (the version that scored) explains against; refuses a request over the
        row limit or a version stored without reference rows."""
        self.admit_rows(rows)
        if model.reference is None:
            raise Conflict(
                f"{model.name} version {model.version} has no reference rows to explain its scores against (no "
                f"{REFERENCE_FILE}: it was registered before reasons existed, or with 0 reference rows); "
                "re-register it (mlops run training) to store them, or ask without explain"
            )
        return model.reference

    async def explain(
        self, model: LoadedModel, reference: ExplainReference, x: np.ndarray
    ) -> list[list[dict[str, Any]]]:
        """Each row's ``top_k`` reasons (``feature``, ``value``, ``contribution``, ``text``)."""
        if not len(x):
            return []
        found = await asyncio.to_thread(
            attribute, model.predict, x, reference.x[: self.reference_rows], model.spec.names
        )
        return reasons(found, raw_values(model.spec, x), reference.texts, self.top_k)
