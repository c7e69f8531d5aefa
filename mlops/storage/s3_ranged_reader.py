"""An S3 object read as a seekable stream of ranged GETs, each pinned to the ETag seen when it was opened
(a changed object fails the read instead of mixing two versions)."""

from __future__ import annotations

import io
from typing import Any, BinaryIO

from mlops.storage import s3
from mlops.storage.location import Location

RANGE_BYTES = 8 << 20
"""Most bytes one ranged GET of :func:`open_read` asks for (and its read-ahead buffer)."""


def open_object(location: Location, size: int, etag: str, read_ahead: int) -> BinaryIO:
    """A buffered reader of the object; a small read fetches ``read_ahead`` bytes (at most :data:`RANGE_BYTES`)."""
    return io.BufferedReader(
        RangedObject(location, size, etag), buffer_size=max(1, min(read_ahead, RANGE_BYTES))
    )


class RangedObject(io.RawIOBase):
    """An S3 object as a raw seekable stream: every read is one ranged GET."""

    def __init__(self, location: Location, size: int, etag: str):
        self.location = location
        self.size = size
        self.etag = etag
        self.position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self.position >= self.size or not len(view):
            return 0
        end = min(self.size, self.position + len(view), self.position + RANGE_BYTES) - 1
        arguments = {
            "Bucket": self.location.bucket,
            "Key": self.location.key,
            "Range": f"bytes={self.position}-{end}",
        }
        if self.etag:
            arguments["IfMatch"] = self.etag
        with s3.failing_as("read", self.location):
            body: bytes = s3.s3_client().get_object(**arguments)["Body"].read()
        view[: len(body)] = body
        self.position += len(body)
        return len(body)
