"""Typed, length-prefixed JSON frames over pipes (harness <-> sandbox child).

JSON only (never pickle): the child is untrusted, so nothing it sends can execute code in the
harness. Frames are capped at :data:`MAX_FRAME_BYTES` and nested at most :data:`MAX_FRAME_DEPTH`
deep (deeper data is refused whole, whether the parser's recursion limit or the depth check
stops it);
with a deadline, reading and writing a frame are bounded in time, and a frame that stalls half
way (e.g. a partial header) is a :class:`WireError`, not a hang. Every message is one of the frozen frame
dataclasses below; :func:`send` writes one, :func:`receive` reads and validates one (an unknown
type or a missing/mistyped field is a :class:`WireError`, never a crash).

Harness -> child: :class:`Config` (once), :class:`Exec`, :class:`Exit`, :class:`CallReply`,
:class:`ImageReply`, :class:`ErrorReply`. Child -> harness: :class:`Ready`, :class:`Call`,
:class:`ImageRequest`, :class:`Violation`, :class:`Done`.
"""

from __future__ import annotations

import json
import math
import os
import select
import struct
import time
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

MAX_FRAME_BYTES = 16 << 20
MAX_FRAME_DEPTH = 32
"""Deepest nesting of lists and objects in a frame (robot-call arguments need 4)."""
FRAME_STALL_S = 5.0
"""Once a frame has started, the rest of it must arrive (or be taken) within this time [s]."""


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


def json_depth(obj: Any) -> int:
    """Deepest nesting of lists and dicts in parsed JSON data ``obj`` (iterative: any depth)."""
    if not isinstance(obj, (dict, list)):
        return 0
    deepest, stack = 1, [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_FRAME_DEPTH:
            break  # deep enough to refuse; do not walk the rest
        for v in node.values() if isinstance(node, dict) else node:
            if isinstance(v, (dict, list)):
                stack.append((v, depth + 1))
    return deepest


def _parse(data: bytes) -> Any:
    """JSON of a frame body; a body nested deeper than :data:`MAX_FRAME_DEPTH` is a WireError."""
    try:
        obj = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise WireError(f"frame nested deeper than {MAX_FRAME_DEPTH}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WireError(f"malformed frame: {str(exc)[:200]}") from None
    # fewer brackets than the limit cannot nest deeper: the common case costs two counts
    if data.count(b"[") + data.count(b"{") > MAX_FRAME_DEPTH and json_depth(obj) > MAX_FRAME_DEPTH:
        raise WireError(f"frame nested deeper than {MAX_FRAME_DEPTH}")
    return obj


def encode(obj: Any) -> bytes:
    """A length-prefixed frame of ``obj``; :class:`WireError` when it is too large or too deep,
    or when ``obj`` cannot be converted (whatever its own methods raise)."""
    try:
        text = json.dumps(obj, default=_default, allow_nan=True, separators=(",", ":"))
    except (RecursionError, MemoryError):
        raise WireError(f"the data is nested too deep (at most {MAX_FRAME_DEPTH} levels)") from None
    except Exception as exc:  # noqa: BLE001 - tolist/item/__iter__ of untrusted objects
        raise WireError(f"converting it failed ({type(exc).__name__}: {str(exc)[:120]})") from None
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > MAX_FRAME_BYTES:
        raise WireError(f"frame of {len(data)} bytes exceeds {MAX_FRAME_BYTES}")
    if data.count(b"[") + data.count(b"{") > MAX_FRAME_DEPTH:
        _parse(data)  # refuse here what the reader would refuse
    return struct.pack(">I", len(data)) + data


def write_frame(fd: int, obj: Any, timeout_s: float | None = None) -> None:
    write_bytes(fd, encode(obj), timeout_s)


def write_bytes(fd: int, frame: bytes, timeout_s: float | None = None) -> None:
    """Write an encoded frame completely; with ``timeout_s`` [s] (for a non-blocking ``fd``),
    a reader that does not take it in time is a :class:`WireError`."""
    data = memoryview(frame)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while data:
        try:
            n = os.write(fd, data)
        except BlockingIOError:
            left = 0.0 if deadline is None else deadline - time.monotonic()
            if deadline is not None and (left <= 0 or not select.select([], [fd], [], left)[1]):
                raise WireError(f"the reader took no data for {timeout_s:g} s") from None
            if deadline is None:
                select.select([], [fd], [])
            continue
        data = data[n:]


def read_exact(fd: int, n: int, deadline: float | None = None) -> bytes:
    """``n`` bytes from ``fd``; by ``deadline`` (``time.monotonic()``) when given."""
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise WireError(f"the frame stalled after {got} of {n} bytes")
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise WireError("pipe closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, stall_s: float | None = None) -> Any:
    """One frame's JSON data. With ``stall_s`` [s], a frame not complete that long after its
    first byte can be read is a :class:`WireError` (the caller waits for that first byte)."""
    deadline = None if stall_s is None else time.monotonic() + stall_s
    (size,) = struct.unpack(">I", read_exact(fd, 4, deadline))
    if size > MAX_FRAME_BYTES:
        raise WireError(f"frame of {size} bytes exceeds {MAX_FRAME_BYTES}")
    return _parse(read_exact(fd, size, deadline))


def finite_or_none(x: Any) -> Any:
    return x if not isinstance(x, float) or math.isfinite(x) else None


# --- typed frames ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """Base of every frame; ``kind`` is its ``type`` on the wire."""

    kind: ClassVar[str] = ""

    def to_wire(self) -> dict[str, Any]:
        # shallow: the fields are plain data already, and a deep copy of untrusted arguments
        # (asdict) would recurse into them before the encoder could refuse them
        return {"type": self.kind, **{f.name: getattr(self, f.name) for f in fields(self)}}


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
    die_with_parent: bool = False
    """Ask the kernel to SIGKILL the child when the harness thread that started it dies."""
    os_isolation: bool = True
    """Apply the kernel layers of :mod:`captain_ros.harness.sandbox.isolation` where available."""


@dataclass(frozen=True)
class Ready(Frame):
    """The child is set up: its pid and the state of each isolation layer (``"on ..."``,
    ``"off: ..."`` or ``"unavailable: ..."``)."""

    kind: ClassVar[str] = "ready"
    pid: int = 0
    layers: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Violation(Frame):
    """A sandbox denial, sent by the child's audit hook the moment it denies (no reply)."""

    kind: ClassVar[str] = "violation"
    text: str = ""


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


FRAMES: dict[str, type[Frame]] = {
    c.kind: c
    for c in (
        Config,
        Ready,
        Exec,
        Exit,
        Call,
        CallReply,
        ImageRequest,
        ImageReply,
        ErrorReply,
        Done,
        Violation,
    )
}
_TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "bool": bool,
    "dict[str, Any]": dict,
    "list[str]": list,
    "str | None": (str, type(None)),
    "int | None": (int, type(None)),
}


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
        if (
            want is not None
            and not isinstance(value, want)
            or (want is int and isinstance(value, bool))
        ):
            raise WireError(f"{cls.kind} frame: field {f.name!r} has type {type(value).__name__}")
        kwargs[f.name] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field is missing
        raise WireError(f"{cls.kind} frame: {exc}") from exc


def send(fd: int, frame: Frame, timeout_s: float | None = None) -> None:
    """Write one typed frame (within ``timeout_s`` [s] on a non-blocking ``fd``)."""
    write_frame(fd, frame.to_wire(), timeout_s)


def encode_frame(frame: Frame) -> bytes:
    return encode(frame.to_wire())


def receive(fd: int, stall_s: float | None = None) -> Frame:
    """Read and validate one typed frame."""
    return decode(read_frame(fd, stall_s))
