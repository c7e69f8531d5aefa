"""Logged rows in memory (:class:`Block`, one model version's rows, preallocated) and their framing for
the writer process's pipe: a JSON header and the arrays' raw bytes, never pickle, which would run code
when read."""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from mlops.data.features import FeatureSpec

FRAME = struct.Struct("<Q")
"""The length prefix of one batch on the writer's pipe, and of the JSON header inside it."""


class Block:
    """Logged rows of one model version, preallocated so that recording is a slice assignment.

    Per request only its time, id and row count are kept (list appends); the per-row
    columns (``timestamp``, ``request_id``, ``request_row``) are expanded by :func:`~serving.request_log_table.to_table`,
    in the writer process.
    """

    def __init__(self, version: str, spec: FeatureSpec, capacity: int):
        self.version = version
        self.spec = spec
        self.x = np.empty((capacity, spec.n_features), dtype=np.float32)
        self.y = np.empty(capacity, dtype=np.float32)
        self.at_us: list[int] = []
        self.ids: list[str] = []
        self.sizes: list[int] = []
        self.explained: list[bool] = []
        self.subjects: list[str | None] = []
        """Per row, the subject key's value the request carried (only for a model whose spec names one)."""
        self.rows = 0

    def room(self) -> int:
        return len(self.y) - self.rows

    def add(
        self,
        x: np.ndarray,
        y: np.ndarray,
        at_us: int,
        request_id: str = "",
        explained: bool = False,
        subjects: list[str | None] | None = None,
    ) -> None:
        if self.spec.subject:
            known = subjects is not None and len(subjects) == len(x)
            self.subjects.extend(subjects if known and subjects is not None else [None] * len(x))
        end = self.rows + len(x)
        self.x[self.rows : end] = x
        self.y[self.rows : end] = y
        self.at_us.append(at_us)
        self.ids.append(request_id)
        self.sizes.append(len(x))
        self.explained.append(explained)
        self.rows = end


def encode_blocks(blocks: list[Block]) -> bytes:
    """One batch for the writer's pipe: the length of a JSON header (each block's version, spec, per-request
    times, ids and sizes, row count), the header, then each block's filled rows of ``x`` and ``y`` as raw
    float32 bytes. Only data crosses the pipe: decoding it runs no code (unlike pickle)."""
    header = json.dumps(
        [
            {
                "version": b.version,
                "spec": b.spec.model_dump(),
                "at_us": b.at_us,
                "ids": b.ids,
                "sizes": b.sizes,
                "explained": b.explained,
                "subjects": b.subjects,
                "rows": b.rows,
            }
            for b in blocks
        ]
    ).encode()
    parts = [FRAME.pack(len(header)), header]
    for b in blocks:
        parts += [
            np.ascontiguousarray(b.x[: b.rows]).tobytes(),
            np.ascontiguousarray(b.y[: b.rows]).tobytes(),
        ]
    return b"".join(parts)


def decode_blocks(payload: bytes) -> list[Block]:
    """The blocks :func:`encode_blocks` framed (a payload whose sizes do not add up is refused)."""
    from mlops.data.features import FeatureSpec

    (size,) = FRAME.unpack_from(payload)
    offset = FRAME.size + size
    blocks = []
    for entry in json.loads(payload[FRAME.size : offset]):
        spec = FeatureSpec.model_validate(entry["spec"])
        rows = int(entry["rows"])
        block = Block(str(entry["version"]), spec, 0)
        x_bytes, y_bytes = rows * spec.n_features * 4, rows * 4
        if offset + x_bytes + y_bytes > len(payload):
            raise ValueError(f"a request-log batch is cut short: {len(payload)} bytes, {rows} rows need more")
        block.x = np.frombuffer(payload, np.float32, rows * spec.n_features, offset).reshape(
            rows, spec.n_features
        )
        block.y = np.frombuffer(payload, np.float32, rows, offset + x_bytes)
        offset += x_bytes + y_bytes
        block.at_us, block.ids, block.sizes = list(entry["at_us"]), list(entry["ids"]), list(entry["sizes"])
        block.explained = [bool(e) for e in entry.get("explained", [False] * len(block.sizes))]
        block.subjects = [None if s is None else str(s) for s in entry.get("subjects", [])]
        block.rows = rows
        blocks.append(block)
    if offset != len(payload):
        raise ValueError(f"a request-log batch has {len(payload) - offset} bytes after its last block")
    return blocks
