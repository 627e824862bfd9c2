"""What issue 32's bounds cost per call, and how fast hostile calls are now refused.

Run from the repository root: ``.venv/bin/python benchmarks/bench_trust.py``. With
``PYTHONPATH=<an older checkout>`` the same script times that version's code (the parts it lacks
are printed as ``-``), which is how the before/after rows of benchmarks/results/trust.md were made.

Rows (medians over repeated calls, milliseconds):
- ``validate_call``: argument validation of typical calls (the harness now runs it once more,
  before forwarding);
- ``RobotService.call``: a cheap call end to end (validation, deadline scope, dispatch, receipt)
  on the fake backend;
- ``wire``: encoding and parsing a typical call frame, and the depth check of large frames;
- ``session round trip``: one robot call from a real sandboxed cell to the harness and back;
- hostile calls: the time until the answer (before: 9.2 s for x = 1000 m, never for 1e12).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness_helpers import make_stack  # noqa: E402

from captain_ros.api import registry  # noqa: E402
from captain_ros.api.validation import validate_call  # noqa: E402
from captain_ros.harness.sandbox import wire  # noqa: E402


def median_ms(fn: Any, n: int) -> float:
    fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def once_s(fn: Any, limit_s: float = 30.0) -> str:
    import signal

    def stop(*_: Any) -> None:
        raise TimeoutError

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(int(limit_s))
    t0 = time.perf_counter()
    try:
        res = fn()
        dt = time.perf_counter() - t0
        cat = res.failure_category.value if res.failure_category else "ok"
        if res.success and isinstance(res.value, dict) and res.value.get("category"):
            cat += f", verdict {res.value['category']}"
        return f"{dt * 1e3:.2f} ms ({cat})"
    except TimeoutError:
        return f"> {limit_s:.0f} s (stopped)"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def main() -> None:
    rows: list[tuple[str, str]] = []
    move = {"position": [0.3, 0.0, 0.25], "orientation": [0, 1, 0, 0], "speed_m_s": 0.1}
    rows.append(
        (
            "validate_call move_to (typical)",
            f"{median_ms(lambda: validate_call(registry.get('move_to'), move), 2000):.4f} ms",
        )
    )
    seg = {"text": "red block on the left", "camera": "head"}
    rows.append(
        (
            "validate_call segment (text)",
            f"{median_ms(lambda: validate_call(registry.get('segment'), seg), 2000):.4f} ms",
        )
    )
    pts = {
        "handle": "obs_1",
        "camera": "head",
        "points": [[float(i), float(i)] for i in range(256)],
    }
    rows.append(
        (
            "validate_call measure_image_points (256 points)",
            f"{median_ms(lambda: validate_call(registry.get('measure_image_points'), pts), 300):.3f} ms",
        )
    )
    _, svc = make_stack(image_size=(48, 64))
    rows.append(
        (
            "RobotService.call get_robot_state",
            f"{median_ms(lambda: svc.call('get_robot_state', {}), 1000):.3f} ms",
        )
    )
    frame = wire.Call("move_to", move)
    rows.append(("wire encode + parse, move_to call frame", _parse_row(frame)))
    parse = getattr(wire, "_parse", None)
    big = (
        b'{"type":"call","name":"segment","kwargs":{"text":[' + b",".join([b"0.1"] * 10**6) + b"]}}"
    )
    rows.append(
        (
            "wire parse, 10**6-element list (depth checked)",
            f"{median_ms(lambda: parse(big), 5):.1f} ms" if parse else "-",
        )
    )
    # the child is started from the installed package, not from PYTHONPATH: only time our own
    rows.append(
        (
            "session round trip, one robot call",
            "-" if os.environ.get("PYTHONPATH") else _round_trip(),
        )
    )
    _, fresh = make_stack(image_size=(48, 64))
    for label, name, kwargs in (
        ("check_motion x = 1000 m", "check_motion", {"position": [1000.0, 0.0, 0.2]}),
        ("check_motion x = 1e12 m", "check_motion", {"position": [1e12, 0.0, 0.2]}),
        (
            "check_motion x = 1.5 m (outside the workspace)",
            "check_motion",
            {"position": [1.5, 0.0, 0.2]},
        ),
        (
            "preview_motion speed 1e-300",
            "preview_motion",
            {"position": [0.3, 0.1, 0.2], "speed_m_s": 1e-300},
        ),
        ("move_to speed 1e-9", "move_to", {"position": [0.3, 0.1, 0.2], "speed_m_s": 1e-9}),
        ("move_to x = 1e308", "move_to", {"position": [1e308, 0.0, 0.2]}),
    ):
        rows.append((label, once_s(lambda n=name, k=kwargs: fresh.call(n, k))))
    print("| measurement | value |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")


def _parse_row(frame: wire.Frame) -> str:
    def trip() -> None:
        data = wire.encode_frame(frame)
        parse = getattr(wire, "_parse", None)
        if parse is not None:
            parse(data[4:])
        else:
            import json

            json.loads(data[4:].decode())

    return f"{median_ms(trip, 2000):.4f} ms"


def _round_trip() -> str:
    import tempfile

    from captain_ros.harness.episode.budgets import Budgets, BudgetTracker
    from captain_ros.harness.episode.calls import EpisodeCalls
    from captain_ros.harness.episode.gate import CompletionGate
    from captain_ros.harness.sandbox.session import PythonSession, SessionConfig

    root = Path(tempfile.mkdtemp(prefix="bench_trust_"))
    _, svc = make_stack(image_size=(48, 64))
    calls = EpisodeCalls(svc, BudgetTracker(Budgets()), CompletionGate(lambda m: (True, "")), root)
    with PythonSession(root / "workspace", SessionConfig()) as sess:
        sess.start()
        n = 300
        sess.run_cell("for _ in range(20): robot.gripper_state()", calls)
        r = sess.run_cell(
            f"import time\nt0 = time.perf_counter()\nfor _ in range({n}): "
            "robot.gripper_state()\nprint((time.perf_counter() - t0) / "
            f"{n} * 1e3)",
            calls,
        )
    return f"{float(r.output.strip()):.2f} ms per call ({n} calls)"


if __name__ == "__main__":
    main()
