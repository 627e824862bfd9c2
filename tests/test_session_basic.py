"""The persistent sandboxed session: globals persist, output capture/truncation, images, timeouts, restarts."""

from __future__ import annotations

import os
import signal
import time

import pytest

from captain_ros.harness.sandbox.session import PythonSession, SessionConfig


class Recorder:
    """A CellHandler that echoes robot calls and records images."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.images: list[tuple[str, str]] = []

    def on_call(self, name, kwargs):
        self.calls.append((name, kwargs))
        return {
            "success": True,
            "executed": False,
            "failure_category": None,
            "message": f"did {name}",
            "value": {"echo": kwargs},
            "diagnostics": {},
            "budget": {"requests_left": 7},
            "receipt": f"{name}: ok",
        }

    def on_image(self, handle, camera):
        self.images.append((handle, camera))
        return f"attached {camera} of {handle}"


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    s = PythonSession(
        tmp_path_factory.mktemp("ep") / "workspace",
        SessionConfig(cell_timeout_s=2.0, max_output_chars=2000),
    )
    yield s
    s.close()


def test_globals_persist_and_last_expression_is_shown(session):
    h = Recorder()
    assert session.run_cell("x = 20\ndef f(a):\n    return a + x", h).text() == ""
    assert session.run_cell("f(22)", h).text() == "42"
    assert session.run_cell("print('a'); import sys as _s", h).error  # sys is not importable
    assert session.run_cell("x", h).text() == "20"


def test_preimported_modules(session):
    r = session.run_cell(
        "print(np.linalg.norm(np.ones(4)), math.pi > 3, scipy.__name__)\n"
        "from scipy.spatial.transform import Rotation\nimport json, itertools, collections\n"
        "print(Rotation.from_euler('z', 0.5).as_quat().round(3).tolist())",
        Recorder(),
    )
    assert r.error is None, r.text()
    assert r.output.startswith("2.0 True scipy") and "0.247" in r.output


def test_robot_calls_cross_the_pipe(session):
    h = Recorder()
    r = session.run_cell(
        "res = robot.move_to([0.3, 0.0, 0.2], mode='manipulation')\n"
        "print(res.success, res['message'], res.value['echo']['mode'], res.budget)",
        h,
    )
    assert r.output.strip() == "True did move_to manipulation {'requests_left': 7}"
    assert h.calls[0][0] == "move_to" and h.calls[0][1]["position"] == [0.3, 0.0, 0.2]
    # numpy arguments are converted to plain data
    session.run_cell("robot.check_motion(np.array([0.1, 0.2, 0.3]))", h)
    assert h.calls[-1][1]["position"] == [0.1, 0.2, 0.3]
    # arguments that are not plain data fail locally as invalid_argument, without a call
    n = len(h.calls)
    r = session.run_cell("print(robot.segment(text=object()).failure_category)", h)
    assert r.output.strip() == "invalid_argument" and len(h.calls) == n
    # finish is available as a global too
    session.run_cell("finish('done')", h)
    assert h.calls[-1] == ("finish", {"summary": "done"})


def test_images_are_requested_from_the_harness(session):
    h = Recorder()
    r = session.run_cell("m = image('obs_3', 'wrist'); print(m)", h)
    assert r.output.strip() == "attached wrist of obs_3" and h.images == [("obs_3", "wrist")]


def test_output_is_captured_and_truncated(session):
    r = session.run_cell(
        "import warnings\nprint('start')\nfor i in range(5000): print(i)\nprint('end')", Recorder()
    )
    assert r.output.startswith("start") and r.output.rstrip().endswith("end")
    assert "characters of output truncated" in r.output and len(r.output) < 2200
    r = session.run_cell("1/0", Recorder())
    assert (
        "ZeroDivisionError" in r.error
        and 'File "<cell' in r.error
        and "sandbox/child.py" not in r.error
    )


def test_timeout_interrupts_and_keeps_variables(session):
    session.run_cell("kept = 'yes'", Recorder())
    t0 = time.monotonic()
    r = session.run_cell("while True:\n    pass", Recorder())
    assert r.timed_out and not r.crashed and "time limit" in r.error
    assert time.monotonic() - t0 < 5
    assert session.run_cell("kept", Recorder()).text() == "'yes'"


def test_time_in_robot_calls_does_not_count_against_the_cell(tmp_path):
    class Slow(Recorder):
        def on_call(self, name, kwargs):
            time.sleep(0.4)
            return super().on_call(name, kwargs)

    with PythonSession(tmp_path / "ws", SessionConfig(cell_timeout_s=1.0)) as s:
        r = s.run_cell("for _ in range(5): robot.hold()", Slow())
        assert not r.timed_out and r.call_s >= 1.9


def test_code_that_ignores_the_interrupt_is_killed_and_restarted(tmp_path):
    with PythonSession(
        tmp_path / "ws", SessionConfig(cell_timeout_s=1.0, interrupt_grace_s=0.5)
    ) as s:
        s.run_cell("v = 1", Recorder())
        pid = s.pid
        r = s.run_cell("sum(range(10**13))", Recorder())  # C loop: the interrupt is never seen
        assert r.crashed and r.timed_out and "killed" in r.error
        r = s.run_cell("print('v' in globals())", Recorder())
        assert "session restarted" in r.notice and "variables were lost" in r.notice
        assert r.output.strip() == "False" and s.pid != pid and s.restarts == 1


def test_a_killed_process_is_restarted_with_a_notice(tmp_path):
    with PythonSession(tmp_path / "ws", SessionConfig(cell_timeout_s=5.0)) as s:
        s.run_cell("v = 1", Recorder())
        os.kill(s.pid, signal.SIGKILL)
        time.sleep(0.1)
        r = s.run_cell("print(robot is not None)", Recorder())
        assert "session restarted" in r.text() and "SIGKILL" in r.notice
        assert r.output.strip() == "True"


def test_workspace_is_the_cwd_and_writable(session):
    r = session.run_cell(
        "open('notes.txt', 'w').write('remember')\nprint(open('notes.txt').read())\n"
        "import pathlib\nprint(sorted(p.name for p in pathlib.Path('.').iterdir()))",
        Recorder(),
    )
    assert r.error is None, r.text()
    assert "remember" in r.output and "notes.txt" in r.output
    assert (session.workspace / "notes.txt").read_text() == "remember"


def test_a_failing_handler_becomes_a_failed_result(session):
    class Broken(Recorder):
        def on_call(self, name, kwargs):
            raise RuntimeError("bug in the harness side")

        def on_image(self, handle, camera):
            raise RuntimeError("bug")

    r = session.run_cell("print(robot.observe().failure_category)\nprint(image('obs_1'))", Broken())
    assert r.output.splitlines() == [
        "internal_error",
        "image not attached: internal error (RuntimeError)",
    ]
