"""OS-level isolation of the sandbox child (issue 32 item 1), with real sandboxed cells and a real
child process that applies the same kernel layers without the audit hook above them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from captain_ros.harness.sandbox import isolation
from captain_ros.harness.sandbox.session import (
    PythonSession,
    SandboxUnavailableError,
    SessionConfig,
)

linux_only = pytest.mark.skipif(
    sys.platform != "linux", reason="the OS layers are Linux system calls"
)


class _Handler:
    def on_call(self, name, kwargs):
        return {
            "success": True,
            "executed": True,
            "failure_category": None,
            "message": "ok",
            "value": None,
            "diagnostics": {},
            "budget": {},
            "receipt": "",
        }

    def on_image(self, handle, camera):
        return "no image"


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    s = PythonSession(tmp_path_factory.mktemp("iso") / "ws", SessionConfig(cell_timeout_s=20))
    s.start()
    yield s
    s.close()


def _denied(s: PythonSession, code: str) -> str:
    before = len(s.violations)
    r = s.run_cell(code, _Handler())
    assert r.error and "sandbox:" in r.error, r.text()
    assert len(s.violations) > before and r.violations, "the denial was not recorded by the harness"
    return r.error


def test_layers_are_recorded(session):
    assert set(isolation.LAYERS) <= set(session.layers)
    for name, state in session.layers.items():
        assert state.startswith(("on", "off: ", "unavailable: ")), (name, state)


def test_strict_refuses_a_missing_layer_in_one_line(tmp_path):
    s = PythonSession(tmp_path / "ws", SessionConfig(os_isolation=False, strict_sandbox=True))
    with pytest.raises(SandboxUnavailableError) as err:
        s.start()
    assert "\n" not in str(err.value) and "landlock: off" in str(err.value)
    assert not s.alive()
    r = s.run_cell("1", _Handler())  # a cell gets the reason, never an exception
    assert r.crashed and "strict sandbox" in (r.error or "")


@linux_only
def test_strict_starts_where_every_layer_is_on(tmp_path, session):
    if isolation.missing(session.layers):
        with pytest.raises(SandboxUnavailableError):
            PythonSession(tmp_path / "ws", SessionConfig(strict_sandbox=True)).start()
        return
    with PythonSession(tmp_path / "ws", SessionConfig(strict_sandbox=True)) as s:
        assert s.run_cell("6 * 7", _Handler()).output.strip() == "42"


def test_rebinding_os_path_and_builtins_changes_nothing(tmp_path):
    with PythonSession(tmp_path / "ws") as s:  # its builtins are broken after this cell
        _rebind_and_read(s)


def _rebind_and_read(session: PythonSession) -> None:
    err = _denied(
        session,
        "import pathlib\n"
        "pathlib.os.path.abspath = lambda p: '.'\n"
        "pathlib.os.path.realpath = lambda p: pathlib.os.getcwd()\n"
        "g = image.__globals__\n"
        "g['builtins'].any = lambda it: True\n"
        "g['builtins'].isinstance = lambda *a: False\n"
        "open('/etc/passwd').read()",
    )
    assert "/etc/passwd" in err


def test_the_record_of_violations_is_out_of_reach(session):
    before = len(session.violations)
    r = session.run_cell(
        "g = image.__globals__\n"
        "for k in list(g):\n"
        "    if isinstance(g[k], list): g[k].clear()\n"
        "try:\n    open('/etc/hostname')\nexcept PermissionError:\n    pass\n"
        "for k in list(g):\n"
        "    if isinstance(g[k], list): g[k].clear()\n",
        _Handler(),
    )
    assert r.error is None and len(r.violations) == 1 and len(session.violations) == before + 1


def test_fspath_objects_that_change_are_refused(session):
    _denied(
        session,
        "import io, itertools\n"
        "names = itertools.cycle(['ok.txt', '/etc/passwd'])\n"
        "class Flip:\n    def __fspath__(self):\n        return next(names)\n"
        "io.FileIO(Flip()).read()",
    )
    _denied(
        session,
        "import pathlib\n"
        "flip = iter(['/etc/passwd'] + ['ok.txt'] * 9)\n"
        "pathlib.PurePath.__fspath__ = lambda self: next(flip)\n"
        "open(pathlib.Path('x.txt'), 'w')",
    )


def test_pathlib_and_str_subclasses_still_work_and_are_checked(tmp_path):
    with PythonSession(tmp_path / "ws") as s:
        r = s.run_cell(
            "import pathlib\npathlib.Path('a.txt').write_text('hi')\n"
            "sorted(p.name for p in pathlib.Path('.').iterdir()), pathlib.Path('a.txt').read_text()",
            _Handler(),
        )
        assert "'a.txt'" in r.output and "'hi'" in r.output, r.text()
        _denied(
            s,
            "class S(str):\n    def startswith(self, *a):\n        return True\n"
            "    def __str__(self):\n        return 'ok.txt'\n"
            "open(S('/etc/passwd')).read()",
        )


def test_mknod_and_mkfifo_are_out_of_reach(session):
    r = session.run_cell("import pathlib\npathlib.os.mkfifo('/tmp/fifo_from_a_cell')", _Handler())
    assert "AttributeError" in (r.error or "")
    r = session.run_cell("image.__globals__['os'].mknod('x')", _Handler())
    assert "AttributeError" in (r.error or "")
    assert not Path("/tmp/fifo_from_a_cell").exists()


def test_python_layer_cells_for_os_cases(session):
    _denied(session, "import pathlib\nopen(f'/proc/{pathlib.os.getppid()}/environ').read()")
    _denied(session, "import socket")
    _denied(session, "import pathlib\nwhile True:\n    pathlib.os.fork()")
    _denied(session, "image.__globals__['sys'].modules['ctypes'].CDLL(None).posix_spawn")
    _denied(session, "open('/tmp/written_by_a_cell.txt', 'w').write('x')")


_PROBE = r"""
import ctypes, json, os, resource, socket, sys
from captain_ros.harness.sandbox import isolation as I
ws, outside, drop = sys.argv[1], sys.argv[2], sys.argv[3] == "drop"
if not drop:  # an unprivileged harness: the parent runs under the child's own uid
    if os.getuid() == 0:
        os.setgroups([]); os.setgid(65534); os.setuid(65534)
    pid = os.fork()
    if pid:
        sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
root = os.getuid() == 0
layers = {"netns": I.enter_netns(root), "no_new_privs": I.no_new_privs(), "landlock": I.landlock(ws),
          "seccomp": I.seccomp()}
layers["landlock_reads"] = I.landlock_reads((ws, *I.SYSTEM_READ_ROOTS))
if drop and root:
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
out = {"layers": layers}
def probe(name, f):
    try:
        out[name] = "allowed: %r" % (f(),)
    except OSError as exc:
        out[name] = "denied: " + type(exc).__name__
probe("socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
probe("unix_socket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
probe("parent_environ", lambda: open("/proc/%d/environ" % os.getppid(), "rb").read(10))
probe("write_outside", lambda: open(os.path.join(outside, "x.txt"), "w").write("x"))
probe("read_outside", lambda: open(os.path.join(outside, "secret.txt")).read())
probe("read_workspace", lambda: open(os.path.join(ws, "mine.txt")).read())
probe("write_workspace", lambda: open(os.path.join(ws, "ok.txt"), "w").write("x"))
probe("mkfifo_outside", lambda: os.mkfifo(os.path.join(outside, "fifo")))
probe("execv", lambda: os.execv("/bin/true", ["true"]))
if not root:
    probe("fork", lambda: [os.fork() for _ in range(50)])
pid = ctypes.c_int()
argv = (ctypes.c_char_p * 2)(b"/bin/true", None)
rc = ctypes.CDLL(None).posix_spawn(ctypes.byref(pid), b"/bin/true", None, None, argv, None)
out["posix_spawn"] = "denied: errno %d" % rc if rc else "allowed"
print(json.dumps(out))
"""


@linux_only
@pytest.mark.parametrize("mode", ["drop", "same_uid"])
def test_kernel_layers_hold_without_the_audit_hook(mode):
    """The same calls the child makes, then the attacks the Python layer also stops: as a
    root harness (uid drop) and as an unprivileged one (the parent shares the child's uid, the
    network namespace needs a user namespace)."""
    top = Path(tempfile.mkdtemp(prefix="captain_iso_", dir="/tmp"))
    ws, outside = top / "ws", top / "outside"
    ws.mkdir()
    outside.mkdir()
    for d in (top, ws, outside):
        d.chmod(0o777)  # writable by anyone: only the sandbox may refuse
    for f in (outside / "secret.txt", ws / "mine.txt"):
        f.write_text("x")
        f.chmod(0o644)
    try:
        _probe(ws, outside, mode)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _probe(ws: Path, outside: Path, mode: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1", "SECRET_OF_THE_HARNESS": "x"}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, str(ws), str(outside), mode],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    on = {k for k, v in out["layers"].items() if v.startswith("on")}
    assert out["write_workspace"].startswith("allowed")
    if "seccomp" in on:
        for k in ("socket", "unix_socket", "execv", "mkfifo_outside"):
            assert out[k].startswith("denied"), (k, out)
        assert out["posix_spawn"].startswith("denied")
    if "landlock" in on:
        for k in ("write_outside", "mkfifo_outside", "parent_environ"):
            assert out[k].startswith("denied"), (k, out)
    assert out["read_workspace"].startswith("allowed"), out
    if "landlock_reads" in on:
        assert out["read_outside"].startswith("denied"), out
    if "fork" in out:
        assert out["fork"].startswith("denied"), out
    assert not (outside / "x.txt").exists() or "landlock" not in on


def test_the_episode_records_its_layers_and_strict_refuses_before_it_starts(tmp_path):
    from harness_helpers import SOLVE_RED_ON_BLUE, RedOnBlueTask, make_stack

    from captain_ros.harness import Budgets, read_records, run_episode
    from captain_ros.policy.replay import ReplayPolicy

    _backend, robot = make_stack()
    s = run_episode(
        RedOnBlueTask(), 0, robot, ReplayPolicy(SOLVE_RED_ON_BLUE), Budgets(), tmp_path / "ep"
    )
    assert s.outcome == "success_with_finish" and s.sandbox_violations == 0
    layers = read_records(tmp_path / "ep" / "trajectory.jsonl")[0]["session"]["layers"]
    assert set(isolation.LAYERS) <= set(layers) and layers["clean_env"].startswith("on")
    _backend, robot = make_stack()
    with pytest.raises(SandboxUnavailableError, match="strict sandbox"):
        run_episode(
            RedOnBlueTask(),
            0,
            robot,
            ReplayPolicy(SOLVE_RED_ON_BLUE),
            Budgets(),
            tmp_path / "ep2",
            session_config=SessionConfig(os_isolation=False, strict_sandbox=True),
        )


def test_cli_strict_sandbox(tmp_path, capsys, session):
    from captain_ros.cli.main import main

    replay = tmp_path / "r.jsonl"
    replay.write_text(json.dumps({"code": "x = 1"}) + "\n")
    rc = main(
        [
            "run",
            "--task",
            "stack",
            "--seed",
            "1002",
            "--backend",
            "fake",
            "--policy",
            f"replay:{replay}",
            "--out",
            str(tmp_path / "ep"),
            "--no-bag",
            "--strict-sandbox",
        ]
    )
    captured = capsys.readouterr()
    if isolation.missing(session.layers):  # this machine lacks a layer: one line, non-zero
        assert rc != 0 and "strict sandbox" in captured.err and "Traceback" not in captured.err
    else:
        assert rc == 0, captured.err
        start = json.loads((tmp_path / "ep" / "trajectory.jsonl").read_text().splitlines()[0])
        assert not isolation.missing(start["session"]["layers"])


def test_a_system_without_the_syscalls_degrades_to_unavailable(monkeypatch):
    """On an architecture without a syscall table each kernel layer says why it is not on (and
    ``--strict-sandbox`` would name it); nothing raises."""
    monkeypatch.setattr(isolation.platform, "machine", lambda: "riscv64")
    assert isolation.seccomp().startswith("unavailable: no seccomp syscall table for riscv64")
    assert isolation.landlock("/tmp").startswith("unavailable: no Landlock syscall numbers")
    layers = {
        "clean_env": "on",
        "rlimits": "on",
        "no_new_privs": "on",
        "landlock": isolation.landlock("/tmp"),
        "seccomp": isolation.seccomp(),
    }
    assert [m.split(":")[0] for m in isolation.missing(layers)] == ["landlock", "seccomp"]
