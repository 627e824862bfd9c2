"""Typed, length-prefixed JSON frames over pipes (harness <-> sandbox child).

JSON only (never pickle): the child is untrusted, so nothing it sends can execute code in the
harness. Frames are capped at :data:`MAX_FRAME_BYTES`. Every message is one of the frozen frame
dataclasses below; :func:`send` writes one, :func:`receive` reads and validates one (an unknown
type or a missing/mistyped field is a :class:`WireError`, never a crash).

Harness -> child: :class:`Config` (once), :class:`Exec`, :class:`Exit`, :class:`CallReply`,
:class:`ImageReply`, :class:`ErrorReply`. Child -> harness: :class:`Ready`, :class:`Call`,
:class:`ImageRequest`, :class:`Done`.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

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


# --- typed frames ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Frame:
    """Base of every frame; ``kind`` is its ``type`` on the wire."""

    kind: ClassVar[str] = ""

    def to_wire(self) -> dict[str, Any]:
        return {"type": self.kind, **asdict(self)}


@dataclass(frozen=True)
class Config(Frame):
    """Sandbox set-up (limits, workspace, readable library roots, uid to drop to, the seed of
    the session's ``random`` and ``numpy.random`` global generators or None)."""

    kind: ClassVar[str] = "config"
    workspace: str
    read_roots: list[str] = field(default_factory=list)
    max_output_chars: int = 20000
    memory_limit_bytes: int = 0
    cpu_limit_s: int = 0
    file_size_limit_bytes: int = 0
    drop_to_uid: int | None = None
    drop_to_gid: int | None = None
    rng_seed: int | None = None
    clients: dict[str, Any] = field(default_factory=dict)
    """Extra handles of the session's globals: ``{name: "module:function"}`` (CoEvolve)."""
    prelude: str = ""
    """Python run in the session's globals at start-up, before the first cell (the helper library
    of the ``helpers`` prompt profile)."""


@dataclass(frozen=True)
class Ready(Frame):
    kind: ClassVar[str] = "ready"
    pid: int = 0


@dataclass(frozen=True)
class Exec(Frame):
    kind: ClassVar[str] = "exec"
    code: str
    cell: int = 0


@dataclass(frozen=True)
class Exit(Frame):
    kind: ClassVar[str] = "exit"


@dataclass(frozen=True)
class Call(Frame):
    """A robot call from policy code (``kwargs`` plain JSON data)."""

    kind: ClassVar[str] = "call"
    name: str
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CallReply(Frame):
    """The call's ``Result.to_dict()``."""

    kind: ClassVar[str] = "result"
    result: dict[str, Any]


@dataclass(frozen=True)
class ImageRequest(Frame):
    kind: ClassVar[str] = "image"
    handle: str
    camera: str = "head"


@dataclass(frozen=True)
class ImageReply(Frame):
    kind: ClassVar[str] = "image_reply"
    message: str


@dataclass(frozen=True)
class ErrorReply(Frame):
    kind: ClassVar[str] = "error"
    message: str


@dataclass(frozen=True)
class Done(Frame):
    """A cell finished: captured output, error text, interrupted, sandbox violations, and a
    digest of the session's variables after the cell (``""``: not computed)."""

    kind: ClassVar[str] = "done"
    output: str = ""
    error: str | None = None
    interrupted: bool = False
    violations: list[str] = field(default_factory=list)
    ns_digest: str = ""


FRAMES: dict[str, type[Frame]] = {c.kind: c for c in (Config, Ready, Exec, Exit, Call, CallReply,
                                                      ImageRequest, ImageReply, ErrorReply, Done)}
_TYPES: dict[str, Any] = {"str": str, "int": int, "bool": bool, "dict[str, Any]": dict,
                          "list[str]": list, "str | None": (str, type(None)),
                          "int | None": (int, type(None))}


def decode(obj: Any) -> Frame:
    """The typed frame of a decoded JSON object; raises :class:`WireError` when it is not one."""
    if not isinstance(obj, dict) or obj.get("type") not in FRAMES:
        kind = obj.get("type") if isinstance(obj, dict) else type(obj).__name__
        raise WireError(f"unknown frame type {kind!r:.40}")
    cls = FRAMES[obj["type"]]
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in obj:
            continue
        value = obj[f.name]
        want = _TYPES.get(str(f.type))
        if want is not None and not isinstance(value, want) or (
                want is int and isinstance(value, bool)):
            raise WireError(f"{cls.kind} frame: field {f.name!r} has type {type(value).__name__}")
        kwargs[f.name] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field is missing
        raise WireError(f"{cls.kind} frame: {exc}") from exc


def send(fd: int, frame: Frame) -> None:
    """Write one typed frame."""
    write_frame(fd, frame.to_wire())


def encode_frame(frame: Frame) -> bytes:
    return encode(frame.to_wire())


def receive(fd: int) -> Frame:
    """Read and validate one typed frame."""
    return decode(read_frame(fd))
