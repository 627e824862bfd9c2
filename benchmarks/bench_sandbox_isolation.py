"""What the sandbox child's OS layers cost (issue 32 item 1): session start, robot calls, files.

Run from the repository root: ``.venv/bin/python benchmarks/bench_sandbox_isolation.py [rounds]``.
Each round starts one session with the OS layers (network namespace, no_new_privs, Landlock,
seccomp) and one without (``SessionConfig(os_isolation=False)``; the audit hook, rlimits and uid
drop stay), interleaved so that machine load hits both alike, and times in each:

- ``start``: ``PythonSession.start()`` until the child is ready (pre-imports included) [s];
- ``robot call``: one robot call from a cell to the harness and back, over 500 calls in one cell
  (the harness answers at once: this is the sandbox's share of a call) [ms];
- ``file open+write``: one ``open``/``write``/``close`` in the workspace, over 500 (the audit hook
  resolves each path; Landlock checks each open) [ms];
- ``numpy cell``: a 200x200 matrix product loop (syscall-free work: seccomp costs nothing) [ms].
Medians over the rounds; the layers reported by the first isolated session are printed.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from typing import Any

from captain_ros.harness.sandbox.session import PythonSession, SessionConfig

_RESULT: dict[str, Any] = {
    "success": True,
    "executed": True,
    "failure_category": None,
    "message": "ok",
    "value": None,
    "diagnostics": {},
    "budget": {},
    "receipt": "",
}


class _Handler:
    def on_call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        return _RESULT

    def on_image(self, handle: str, camera: str) -> str:
        return ""


CELLS = {
    "robot call": ("for _ in range(500):\n    robot.observe()", 500),
    "file open+write": (
        "for i in range(500):\n    with open(f'f{i % 10}.txt', 'w') as f:\n        f.write('x')",
        500,
    ),
    "numpy cell": ("a = np.ones((200, 200))\nfor _ in range(50):\n    a = (a @ a) / 200.0", 1),
}


def one_round(isolated: bool, root: str) -> dict[str, float]:
    ws = tempfile.mkdtemp(dir=root)
    s = PythonSession(ws, SessionConfig(os_isolation=isolated, cell_timeout_s=120))
    t0 = time.perf_counter()
    s.start()
    out = {"start": time.perf_counter() - t0}
    try:
        for name, (code, n) in CELLS.items():
            r = s.run_cell(code, _Handler())
            assert r.error is None, r.text()
            out[name] = r.duration_s / n * 1000.0
        out["_layers"] = s.layers  # type: ignore[assignment]
    finally:
        s.close()
    return out


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    root = tempfile.mkdtemp(prefix="bench_iso_")
    runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for _ in range(rounds):
        for isolated in (True, False):
            runs[isolated].append(one_round(isolated, root))
    print(f"load average at the end: {os.getloadavg()}, rounds: {rounds}, uid {os.getuid()}")
    print("layers:", runs[True][0]["_layers"])
    print("| measure | OS layers off | OS layers on | difference |")
    print("|---|---|---|---|")
    for key in ("start", *CELLS):
        off = statistics.median(r[key] for r in runs[False])
        on = statistics.median(r[key] for r in runs[True])
        unit = "s" if key == "start" else "ms"
        print(f"| {key} [{unit}] | {off:.4g} | {on:.4g} | {on - off:+.3g} |")


if __name__ == "__main__":
    main()
