"""Escape attempts against the sandboxed session: every one is contained, reported and logged.

The harness process must survive all of them, and the next cell must still work.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from captain_ros.harness.sandbox.session import PythonSession, SessionConfig

SUBCLASS = "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == {!r}][0]"
OS_GLOBALS = SUBCLASS.format("_wrap_close") + ".__init__.__globals__"


class Handler:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def on_call(self, name, kwargs):
        self.calls.append((name, kwargs))
        return {
            "success": True,
            "executed": False,
            "failure_category": None,
            "message": "",
            "value": None,
            "diagnostics": {},
            "budget": {"physical_actions_left": 150 - len(self.calls)},
            "receipt": "",
        }

    def on_image(self, handle, camera):
        return "no image"


@pytest.fixture(scope="module")
def sess(tmp_path_factory):
    root = tmp_path_factory.mktemp("escape")
    s = PythonSession(
        root / "workspace",
        SessionConfig(cell_timeout_s=3.0, interrupt_grace_s=1.0, memory_limit_bytes=2 << 30),
    )
    os.environ["CAPTAIN_API_KEY"] = "sk-secret-never-visible"
    s.start()
    yield s
    s.close()
    os.environ.pop("CAPTAIN_API_KEY", None)


def blocked(sess, code, *, expect="sandbox:"):
    """Run ``code``; it must fail with a sandbox error (or ``expect``) and leave the session usable."""
    n = len(sess.violations)
    r = sess.run_cell(code, Handler())
    assert r.error is not None and expect in r.error, r.text()
    if expect == "sandbox:":
        assert len(sess.violations) > n  # reported to (and logged by) the harness
    assert sess.run_cell("print(1 + 1)", Handler()).output.strip() == "2"
    return r


# --- files -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "code",
    [
        "open('/tmp/escaped.txt', 'w').write('x')",
        "open('../escaped.txt', 'w').write('x')",
        "import pathlib; pathlib.Path('/tmp/escaped.txt').write_text('x')",
        "np.save('/tmp/escaped.npy', np.zeros(3))",
        "from PIL import Image; Image.fromarray(np.zeros((2, 2, 3), np.uint8)).save('/tmp/escaped.png')",
        "import io; io.FileIO('/tmp/escaped.txt', 'w')",
        OS_GLOBALS + "['open']('/tmp/escaped.txt', 0o101)",
        OS_GLOBALS + "['symlink']('/etc/passwd', 'link')",
        OS_GLOBALS + "['rename']('notes.txt', '/tmp/escaped.txt')",
        OS_GLOBALS + "['chdir']('/')",
        OS_GLOBALS + "['mkdir']('/tmp/escaped_dir')",
    ],
)
def test_writes_outside_the_workspace(sess, code):
    sess.run_cell("open('notes.txt', 'w').write('n')", Handler())
    blocked(sess, code)
    for p in ("/tmp/escaped.txt", "/tmp/escaped.npy", "/tmp/escaped.png", "/tmp/escaped_dir"):
        assert not Path(p).exists()
    assert not (sess.workspace.parent / "escaped.txt").exists()


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "/proc/self/environ", "/proc/1/cmdline", "/root/.bashrc", "/proc/self/status"],
)
def test_reading_outside_the_workspace(sess, path):
    blocked(sess, f"print(open({path!r}).read())")
    blocked(sess, f"import pathlib; pathlib.Path({path!r}).read_bytes()")


def test_parent_environ_via_proc(sess):
    blocked(sess, f"open('/proc/{os.getpid()}/environ').read()")
    blocked(sess, OS_GLOBALS + "['listdir']('/proc')")


# --- imports by any route --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "mod", ["os", "sys", "subprocess", "socket", "ctypes", "importlib", "shutil", "signal"]
)
@pytest.mark.parametrize(
    "route",
    [
        "import {m}",
        "__import__('{m}')",
        "__builtins__['__import__']('{m}')",
        "print.__self__.__import__('{m}')",
        "exec('import {m}', {{}})",
        "exec('import {m}', {{'__builtins__': print.__self__}})",
        "(lambda: 0).__globals__['__builtins__']['__import__']('{m}')",
    ],
)
def test_dangerous_imports(sess, mod, route):
    blocked(sess, route.format(m=mod))


def test_importlib_and_new_module_loads(sess):
    blocked(sess, "import importlib.util")
    blocked(sess, "from importlib import import_module")
    # even from library globals (which pass the import allow-list) a new dangerous module is refused
    blocked(sess, "exec('import multiprocessing', np.__dict__)")
    blocked(sess, "exec('import captain_ros.backends.fake', np.__dict__)")


# --- process creation, signals, network, ctypes via object.__subclasses__() -------------------------
@pytest.mark.parametrize(
    "code",
    [
        OS_GLOBALS + "['system']('touch /tmp/escaped.txt')",
        OS_GLOBALS + "['popen']('id').read()",
        OS_GLOBALS + "['fork']()",
        OS_GLOBALS + "['execv']('/bin/sh', ['sh'])",
        OS_GLOBALS + "['posix_spawn']('/bin/sh', ['sh'], {})",
        OS_GLOBALS + "['kill'](" + OS_GLOBALS + "['getppid'](), 9)",
        SUBCLASS.format("Popen") + "(['id'])",
        SUBCLASS.format("socket") + "()",
        SUBCLASS.format("CDLL") + "(None)",
        "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'socket'][0]().connect(('1.1.1.1', 80))",
    ],
)
def test_processes_signals_network_ctypes(sess, code):
    blocked(sess, code)
    assert not Path("/tmp/escaped.txt").exists()


def test_environment_has_no_harness_secrets(sess):
    r = sess.run_cell("env = dict(" + OS_GLOBALS + "['environ'])\nprint(sorted(env))", Handler())
    assert r.error is None and "CAPTAIN_API_KEY" not in r.output and "sk-secret" not in r.output
    assert "PATH" in r.output


def test_fork_bomb_and_memory_bomb(sess):
    blocked(sess, "f = " + OS_GLOBALS + "['fork']\nwhile True:\n    f()")
    blocked(sess, "x = bytearray(8 << 30)", expect="MemoryError")
    blocked(sess, "x = [0] * (10 ** 10)", expect="MemoryError")
    blocked(sess, "import numpy as np\nx = np.ones((1 << 16, 1 << 16))", expect="MemoryError")


def test_infinite_loops(sess):
    sess.run_cell("kept = 3", Handler())
    t0 = time.monotonic()
    r = sess.run_cell("while True:\n    pass", Handler())
    assert r.timed_out and time.monotonic() - t0 < 6
    assert sess.run_cell("kept", Handler()).output.strip() == "3"
    r = sess.run_cell("def f():\n    return f()\nf()", Handler())
    assert "RecursionError" in r.error


def test_tampering_with_the_robot_client_and_budgets(sess):
    h = Handler()
    # reach the raw pipe through the client's closure: the harness answers and owns the budgets
    raw = sess.run_cell(
        "lam = robot._send.__closure__[0].cell_contents\n"
        "g = lam.__globals__\n"
        "w = g['wire']\n"
        "w.write_bytes(g['_OUT_FD'], w.encode({'type': 'budget', 'physical_actions_left': 10**9}))\n"
        "print(w.read_frame(g['_IN_FD']))\n"
        "print(g['_transport'](w.Call('reset_budget', {})))",
        h,
    )
    assert raw.error is None, raw.text()
    assert "invalid request" in raw.output
    assert h.calls == [("reset_budget", {})]  # went to the harness handler, which validates names
    assert any("invalid frame" in v for v in sess.violations)
    # the child holds no counters: tampering changes only its own client
    r = sess.run_cell(
        "robot._send = lambda n, k: {'success': True, 'budget': {'physical_actions_left': 10**9}}\n"
        "print(robot.move_to([0.3, 0, 0.2])['budget'])",
        h,
    )
    assert "1000000000" in r.output and len(h.calls) == 1  # nothing reached the robot
    # setting a function's code object is refused
    blocked(sess, "def g():\n    pass\ng.__code__ = (lambda: 1).__code__")


def test_gc_and_frame_tricks(sess):
    blocked(sess, "import gc")
    blocked(sess, "print.__self__.__import__('gc')")
    # reaching the child's module globals through a traceback frame gives no new powers
    r = sess.run_cell(
        "try:\n    1/0\nexcept Exception as e:\n    fr = e.__traceback__.tb_frame\n"
        "print(type(fr).__name__)",
        Handler(),
    )
    assert r.output.strip() == "frame"
    blocked(
        sess, "import json\ng = json.__dict__['__builtins__']\ng['__import__']('os').system('id')"
    )


def test_the_harness_survives_a_crash_loop(tmp_path):
    with PythonSession(
        tmp_path / "ws", SessionConfig(cell_timeout_s=1.0, interrupt_grace_s=0.3)
    ) as s:
        for _ in range(2):
            r = s.run_cell(
                "while True:\n    try:\n        sum(range(10**13))\n    except BaseException:\n        pass",
                Handler(),
            )
            assert r.crashed
        assert s.run_cell("print('alive')", Handler()).output.strip() == "alive"
        assert s.restarts == 2


def test_violations_are_logged_by_the_harness(sess, caplog):
    with caplog.at_level("WARNING", logger="captain_ros.harness.sandbox.session"):
        sess.run_cell("import socket", Handler())
    assert "sandbox violation" in caplog.text and "socket" in caplog.text


def test_cpu_limit_kills_and_restarts(tmp_path):
    with PythonSession(tmp_path / "ws", SessionConfig(cell_timeout_s=60.0, cpu_limit_s=1)) as s:
        r = s.run_cell(
            "x = 0\nwhile True:\n    try:\n        x += 1\n    except BaseException:\n        pass",
            Handler(),
        )
        assert r.crashed and "CPU time limit" in r.error
        assert "variables were lost" in s.run_cell("1", Handler()).notice


def test_the_child_runs_unprivileged(sess):
    r = sess.run_cell("g = " + OS_GLOBALS + "\nprint(g['getuid'](), g['getgid']())", Handler())
    if os.getuid() == 0:
        assert r.output.split() == ["65534", "65534"]
    else:
        assert r.output.split()[0] == str(os.getuid())


def test_audit_layer_alone_contains_escapes(tmp_path):
    """Without the uid drop (e.g. a non-root harness), the audit hook still blocks everything."""
    with PythonSession(
        tmp_path / "ws", SessionConfig(cell_timeout_s=5.0, drop_privileges=False)
    ) as s:
        for code in (
            OS_GLOBALS + "['fork']()",
            OS_GLOBALS + "['system']('id')",
            "open('/proc/self/environ').read()",
            SUBCLASS.format("socket") + "()",
        ):
            r = s.run_cell(code, Handler())
            assert r.error and "sandbox:" in r.error, r.text()
