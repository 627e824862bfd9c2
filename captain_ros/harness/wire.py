"""Length-prefixed JSON frames over pipes (harness <-> sandbox child).

JSON only (never pickle): the child is untrusted, so nothing it sends can execute code in the
harness. Frames are capped at :data:`MAX_FRAME_BYTES`.
"""

from __future__ import annotations

import json
import math
import os
import struct
from typing import Any

MAX_FRAME_BYTES = 16 << 20


class WireError(Exception):
    """A malformed, oversized or truncated frame (or the other side closed the pipe)."""


def _default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON-serialisable")


def encode(obj: Any) -> bytes:
    data = json.dumps(obj, default=_default, allow_nan=True, separators=(",", ":")).encode("utf-8")
    if len(data) > MAX_FRAME_BYTES:
        raise WireError(f"frame of {len(data)} bytes exceeds {MAX_FRAME_BYTES}")
    return struct.pack(">I", len(data)) + data


def write_frame(fd: int, obj: Any) -> None:
    write_bytes(fd, encode(obj))


def write_bytes(fd: int, frame: bytes) -> None:
    """Write an encoded frame completely."""
    data = memoryview(frame)
    while data:
        n = os.write(fd, data)
        data = data[n:]


def read_exact(fd: int, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise WireError("pipe closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> Any:
    (size,) = struct.unpack(">I", read_exact(fd, 4))
    if size > MAX_FRAME_BYTES:
        raise WireError(f"frame of {size} bytes exceeds {MAX_FRAME_BYTES}")
    try:
        return json.loads(read_exact(fd, size).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WireError(f"malformed frame: {exc}") from exc


def finite_or_none(x: Any) -> Any:
    return x if not isinstance(x, float) or math.isfinite(x) else None
