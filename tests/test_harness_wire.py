"""Typed pipe frames between the harness and the sandbox child: round trip and validation."""

from __future__ import annotations

import os

import pytest

from captain_ros.harness import wire

FRAMES = [wire.Config("/tmp/ws", ["/usr/lib"], 100, 1 << 30, 60, 1 << 20, 65534, 65534),
          wire.Ready(12), wire.Exec("print(1)", 3), wire.Exit(), wire.Call("move_to", {"jaw": 0.01}),
          wire.CallReply({"success": True}), wire.ImageRequest("obs_1", "wrist"),
          wire.ImageReply("attached"), wire.ErrorReply("no"),
          wire.Done("out", "Traceback", True, ["sandbox: open"])]


@pytest.mark.parametrize("frame", FRAMES, ids=lambda f: f.kind)
def test_every_frame_round_trips_through_a_pipe(frame: wire.Frame) -> None:
    r, w = os.pipe()
    try:
        wire.send(w, frame)
        assert wire.receive(r) == frame
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("obj, why", [
    ({"type": "budget", "left": 10}, "unknown frame type"),
    ([1, 2], "unknown frame type"),
    ({"type": "call"}, "missing"),
    ({"type": "call", "name": 3}, "field 'name'"),
    ({"type": "exec", "code": "x", "cell": True}, "field 'cell'"),
    ({"type": "done", "violations": "not a list"}, "field 'violations'"),
])
def test_malformed_frames_are_wire_errors(obj: object, why: str) -> None:
    with pytest.raises(wire.WireError, match=why):
        wire.decode(obj)
