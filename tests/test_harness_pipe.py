"""The harness does not trust the pipe to its sandbox child, and leaves no child behind.

Policy code can reach the child's frame descriptor (``pathlib.os``) and write raw bytes to it: a
partial frame header used to hang ``captain run`` forever, and a deeply nested frame crashed it
without a summary. Robot calls with hostile arguments, made from a real sandboxed cell, come back
as ``invalid_argument`` Results instead of raising in the cell. SIGTERM (and SIGKILL) to
``captain run`` leave no sandbox child running. Real processes throughout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness_helpers import make_stack

from captain_ros.harness.episode.budgets import Budgets, BudgetTracker
from captain_ros.harness.episode.calls import EpisodeCalls
from captain_ros.harness.episode.gate import CompletionGate
from captain_ros.harness.sandbox.session import PythonSession, SessionConfig
from captain_ros.harness.sandbox.wire import FRAME_STALL_S

WRITE_RAW = (
    "import pathlib\n"
    "for fd in range(3, 10):\n"
    "    try:\n"
    "        pathlib.os.write(fd, {data!r})\n"
    "    except OSError:\n"
    "        pass\n"
)
PARTIAL_HEADER = WRITE_RAW.format(data=b"\x00\x00") + "import time\ntime.sleep(60)\n"
DEEP = b"[" * 5000 + b"]" * 5000
DEEP_FRAME = WRITE_RAW.format(data=len(DEEP).to_bytes(4, "big") + DEEP) + "print('wrote')\n"


@pytest.fixture()
def episode(tmp_path: Path):
    backend, svc = make_stack(image_size=(48, 64))
    calls = EpisodeCalls(
        svc, BudgetTracker(Budgets()), CompletionGate(lambda m: (True, "")), tmp_path
    )
    sess = PythonSession(
        tmp_path / "workspace", SessionConfig(cell_timeout_s=20.0, interrupt_grace_s=1.0)
    )
    yield sess, calls
    sess.close()


def test_a_partial_frame_header_ends_the_child_not_the_harness(episode):
    sess, calls = episode
    t0 = time.monotonic()
    r = sess.run_cell(PARTIAL_HEADER, calls)
    assert r.crashed and "stalled after 2 of 4 bytes" in r.error
    assert time.monotonic() - t0 < FRAME_STALL_S + 5  # not the 20 s cell limit, not forever
    assert any(v.startswith("pipe:") for v in sess.violations)
    r = sess.run_cell("print(robot.get_robot_state().success)", calls)
    assert "session restarted" in r.notice and r.output.strip() == "True"


def test_a_deeply_nested_frame_ends_the_child_not_the_harness(episode):
    sess, calls = episode
    r = sess.run_cell(DEEP_FRAME, calls)
    assert r.crashed and "nested deeper than" in r.error
    assert sess.run_cell("print(1 + 1)", calls).output.strip() == "2"


def test_the_wall_budget_bounds_a_cell(episode):
    sess, calls = episode
    t0 = time.monotonic()
    r = sess.run_cell("import time\ntime.sleep(30)", calls, time_left_s=1.0)
    assert r.timed_out and time.monotonic() - t0 < 1.0 + 5


HOSTILE_CELL = """
class EvilTolist:
    def tolist(self):
        raise RuntimeError('evil')
class EvilFloat:
    def __float__(self):
        raise RuntimeError('evil')
deep = {}
d = deep
for _ in range(900):
    d['id'] = {}
    d = d['id']
calls = [
    robot.move_to(position=EvilTolist()),
    robot.move_to(position=[EvilFloat(), 0.0, 0.2]),
    robot.move_to(position=[1e308, 0.0, 0.2]),
    robot.check_motion([1e12, 0.0, 0.2]),
    robot.check_motion([2**64, 0.0, 0.2]),
    robot.preview_motion([0.3, 0.1, 0.2], speed_m_s=1e-300),
    robot.move_to([0.3, 0.1, 0.2], speed_m_s=1e-9),
    robot.segment('red', colour='red'),
    robot.hold(1.0, None, 'surplus'),
    robot.segment(deep),
    robot.measure_object_geometry(deep),
    robot.segment('\\ud800 block'),
    robot.segment('red\\x00block'),
    robot.segment('x' * 10**6),
    robot.select_detection([0.1] * 10**6),
    robot.inspect_contact_geometry('det_1', [1e308, 0.0, 0.2]),
    robot.transform_pose([1e308, 0.0, 0.2]),
]
print([c.failure_category for c in calls])
"""


def test_hostile_arguments_from_a_real_cell_are_results(episode):
    sess, calls = episode
    t0 = time.monotonic()
    r = sess.run_cell(HOSTILE_CELL, calls)
    assert r.error is None, r.text()
    cats = eval(r.output.strip())  # noqa: S307 - a printed list of strings
    assert cats == ["invalid_argument"] * len(cats) and len(cats) == 17, r.output
    assert time.monotonic() - t0 < 15
    assert calls.tracker.physical_actions == 0


CAPTAIN = [sys.executable, "-m", "captain_ros.cli.main"]


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def _start_run(tmp_path: Path, code: str, *extra: str) -> tuple[subprocess.Popen[str], Path]:
    replay = tmp_path / "cells.jsonl"
    replay.write_text(json.dumps({"code": code}) + "\n")
    out = tmp_path / "ep"
    env = {**os.environ, "MUJOCO_GL": "egl"}
    cmd = [
        *CAPTAIN,
        "run",
        "--backend",
        "fake",
        "--policy",
        f"replay:{replay}",
        "--no-bag",
        "--out",
        str(out),
        *extra,
    ]
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return proc, out


def _wait_for_child(proc: subprocess.Popen[str], timeout_s: float = 120.0) -> int:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        kids = _children(proc.pid)
        if kids:
            time.sleep(3.0)  # the child is running the sleeping cell by now
            return kids[0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    raise AssertionError("no sandbox child started")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_signal_to_captain_run_leaves_no_child(tmp_path: Path, sig: signal.Signals):
    proc, _ = _start_run(tmp_path, "import time\ntime.sleep(55)")
    child = _wait_for_child(proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    deadline = time.monotonic() + 5.0
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child), f"sandbox child {child} outlived captain run ({sig.name})"
    if sig == signal.SIGTERM:
        assert proc.returncode == 143 and err.strip().endswith("terminated by SIGTERM"), err
        assert "Traceback" not in err
    else:
        assert proc.returncode == -signal.SIGKILL


def test_a_stuck_child_ends_the_episode_with_a_summary(tmp_path: Path):
    proc, out = _start_run(tmp_path, PARTIAL_HEADER, "--max-requests", "2")
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["session_restarts"] >= 1 and summary["sandbox_violations"] >= 1


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:  # gone meanwhile
        return ""


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        kids = _children(todo.pop())
        out += kids
        todo += kids
    return out


def test_sigterm_to_captain_eval_leaves_no_worker_or_child(tmp_path: Path):
    """eval keeps SIGTERM's default: its workers watch their parent, and their sandbox children
    die with them (PR_SET_PDEATHSIG)."""
    replay = tmp_path / "cells.jsonl"
    replay.write_text(json.dumps({"code": "import time\ntime.sleep(55)"}) + "\n")
    cmd = [
        *CAPTAIN,
        "eval",
        "--backend",
        "fake",
        "--policy",
        f"replay:{replay}",
        "--no-bag",
        "--seeds",
        "1-2",
        "--workers",
        "2",
        "--out",
        str(tmp_path / "ev"),
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=tmp_path,
        env={**os.environ, "MUJOCO_GL": "egl"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    end = time.monotonic() + 180
    tree: list[int] = []
    while time.monotonic() < end:
        tree = _descendants(proc.pid)
        sandboxes = [p for p in tree if "captain_ros.harness.sandbox.child" in _cmdline(p)]
        if len(sandboxes) >= 2:
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.5)
    else:
        raise AssertionError("the workers' sandbox children did not start")
    time.sleep(2.0)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 10.0
    while any(_alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in tree if _alive(p)], "a worker or sandbox child outlived captain eval"
