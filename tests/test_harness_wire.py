"""Typed pipe frames between the harness and the sandbox child: round trip and validation."""

from __future__ import annotations

import os
import time

import pytest

from captain_ros.harness.sandbox import wire

FRAMES = [
    wire.Config("/tmp/ws", ["/usr/lib"], 100, 1 << 30, 60, 1 << 20, 65534, 65534),
    wire.Ready(12),
    wire.Exec("print(1)", 3),
    wire.Exit(),
    wire.Call("move_to", {"jaw": 0.01}),
    wire.CallReply({"success": True}),
    wire.ImageRequest("obs_1", "wrist"),
    wire.ImageReply("attached"),
    wire.ErrorReply("no"),
    wire.Done("out", "Traceback", True, ["sandbox: open"]),
]


@pytest.mark.parametrize("frame", FRAMES, ids=lambda f: f.kind)
def test_every_frame_round_trips_through_a_pipe(frame: wire.Frame) -> None:
    r, w = os.pipe()
    try:
        wire.send(w, frame)
        assert wire.receive(r) == frame
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize(
    "obj, why",
    [
        ({"type": "budget", "left": 10}, "unknown frame type"),
        ([1, 2], "unknown frame type"),
        ({"type": "call"}, "missing"),
        ({"type": "call", "name": 3}, "field 'name'"),
        ({"type": "exec", "code": "x", "cell": True}, "field 'cell'"),
        ({"type": "done", "violations": "not a list"}, "field 'violations'"),
    ],
)
def test_malformed_frames_are_wire_errors(obj: object, why: str) -> None:
    with pytest.raises(wire.WireError, match=why):
        wire.decode(obj)


# --- bounds: depth, size, stalls, untrusted objects (issue 32) ------------------------------------
def _raw(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


def _nested(depth: int) -> bytes:
    return (
        b'{"type":"call","name":"segment","kwargs":{"text":' + b"[" * depth + b"]" * depth + b"}}"
    )


@pytest.mark.parametrize("depth", [wire.MAX_FRAME_DEPTH + 1, 900, 100_000])
def test_deeply_nested_frames_are_refused_whole(depth: int) -> None:
    """900 deep passes json's recursion limit in the harness (then crashed it later); 100,000
    deep trips it (RecursionError). Both are WireErrors; 32 levels in all are accepted."""
    body = _nested(depth)
    r, w = os.pipe()
    try:
        if len(body) < 60_000:  # fits the pipe: through the reader itself
            os.write(w, _raw(body))
            with pytest.raises(wire.WireError, match="nested deeper"):
                wire.receive(r)
        with pytest.raises(wire.WireError, match="nested deeper"):
            wire._parse(body)
    finally:
        os.close(r)
        os.close(w)
    assert wire.decode(wire._parse(_nested(wire.MAX_FRAME_DEPTH - 3))).name == "segment"


def test_encoding_refuses_what_the_reader_would() -> None:
    class EvilTolist:
        def tolist(self) -> list[float]:
            raise RuntimeError("evil")

    def nested(n: int) -> object:
        out: object = 0.1
        for _ in range(n):
            out = [out]
        return out

    for bad, why in (
        (EvilTolist(), "converting it failed"),
        (nested(5000), "nested too deep"),
        (nested(wire.MAX_FRAME_DEPTH), "nested deeper"),
    ):
        with pytest.raises(wire.WireError, match=why):
            wire.encode_frame(wire.Call("move_to", {"position": bad}))
    assert wire.encode_frame(wire.Call("move_to", {"position": nested(wire.MAX_FRAME_DEPTH - 2)}))


def test_a_frame_that_stalls_half_way_is_an_error_not_a_hang() -> None:
    r, w = os.pipe()
    try:
        os.write(w, b"\x00\x00")  # half a header, then nothing
        t0 = time.monotonic()
        with pytest.raises(wire.WireError, match="stalled after 2 of 4 bytes"):
            wire.receive(r, stall_s=0.3)
        assert 0.25 < time.monotonic() - t0 < 2.0
        os.write(w, b"\x00\x00\x00\x10{}")  # a header promising 16 bytes, then 2
        with pytest.raises(wire.WireError, match="stalled after 2 of 16 bytes"):
            wire.receive(r, stall_s=0.3)
    finally:
        os.close(r)
        os.close(w)


def test_a_reader_that_takes_nothing_cannot_block_the_writer() -> None:
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        t0 = time.monotonic()
        with pytest.raises(wire.WireError, match="took no data"):
            wire.send(w, wire.CallReply({"value": "x" * (1 << 20)}), timeout_s=0.3)
        assert time.monotonic() - t0 < 2.0
    finally:
        os.close(r)
        os.close(w)
