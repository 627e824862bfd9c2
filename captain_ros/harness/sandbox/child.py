"""The sandboxed policy Python session (child process side).

Started by :class:`captain_ros.harness.sandbox.session.PythonSession` as ``python -I -m
captain_ros.harness.sandbox.child`` (``-s -P`` instead of ``-I`` when the session fixes the hash
seed) with a fixed minimal environment, its cwd in the episode workspace
and two pipes on fds 0/1 carrying JSON frames. Setup, in order: pre-import the allowed modules,
build the ``robot`` client (its calls go over the pipe; the child holds no backend object, gate
or budget counter), set rlimits (address space, CPU, file size, open files, no core files), drop
to an unprivileged uid when started as root (then ``RLIMIT_NPROC`` forbids new processes and the
harness's ``/proc/<pid>/environ`` is unreadable), ask the kernel to kill it when the harness
thread that started it dies (``PR_SET_PDEATHSIG``, set after the uid change, which clears it),
then install an audit hook
(:func:`sys.addaudithook`, which cannot be removed) that denies process creation, signals,
sockets, ctypes, new imports of dangerous modules, and any file access outside the workspace
except read-only access to the Python library folders. ``import`` in policy code is further
restricted to an allow-list. Each denial raises ``PermissionError("sandbox: ...")`` in the cell and
is reported to the harness, which logs it.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import dataclasses
import os
import signal
import sys
import traceback

from captain_ros.harness.sandbox import hook, isolation, wire
from captain_ros.harness.sandbox.ns_digest import ns_digest
from captain_ros.harness.sandbox.rules import (
    ALLOWED_IMPORTS,
    BLOCKED_ATTR_SET,
    DENY_EVENT_PREFIXES,
    DENY_NEW_IMPORTS,
    PATH_EVENTS,
    PRELOAD,
    READ_ONLY_PATH_EVENTS,
    SAFE_PICKLE_MODULES,
)

_NS: dict = {}
_BASE: dict = {}
_SIG = {"in_cell": False, "pending": False}
_OUT_FD = 1
_IN_FD = 0


class _Capped:
    """A text sink that keeps at most ``cap`` characters (head and tail) and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap, self.dropped = cap, 0
        self.head: list[str] = []
        self.tail: list[str] = []
        self.head_len = self.tail_len = 0

    def write(self, s: object) -> int:
        s = str(s)
        if self.head_len < self.cap // 2:
            take = s[: self.cap // 2 - self.head_len]
            self.head.append(take)
            self.head_len += len(take)
            s = s[len(take) :]
        if s:
            self.tail.append(s)
            self.tail_len += len(s)
            while self.tail_len > self.cap // 2 and len(self.tail) > 1:
                gone = self.tail.pop(0)
                self.tail_len -= len(gone)
                self.dropped += len(gone)
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def getvalue(self) -> str:
        tail = "".join(self.tail)
        if len(tail) > self.cap // 2:
            self.dropped += len(tail) - self.cap // 2
            tail = tail[-(self.cap // 2) :]
        mid = f"\n[... {self.dropped} characters of output truncated ...]\n" if self.dropped else ""
        return "".join(self.head) + mid + tail


def _guarded_import_factory(real_import):
    getframe, audit, deny_event = sys._getframe, sys.audit, hook.DENY_EVENT
    modules = sys.modules
    allowed = ALLOWED_IMPORTS

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
        caller_globals = getframe(1).f_globals
        owner = (
            modules.get(caller_globals.get("__name__", ""))
            if isinstance(caller_globals, dict)
            else None
        )
        if getattr(owner, "__dict__", None) is not caller_globals:  # policy code (cells, exec, ...)
            what, detail = ("relative import", "") if level else ("", "")
            top = str(name).split(".")[0]
            if not what and top not in allowed:
                what, detail = f"import {name}", "allowed: " + ", ".join(sorted(allowed))
            if what:  # the audit hook reports and raises (it holds the record, not this closure)
                audit(deny_event, what, detail)
                raise PermissionError(f"sandbox: {what} is not allowed in the policy session")
        return real_import(name, globals, locals, fromlist, level)

    return guarded_import


def _on_sigint(signum, frame):  # noqa: ARG001
    """Interrupt cell code only; an interrupt during a robot call is deferred until it returns."""
    if _SIG["in_cell"]:
        raise KeyboardInterrupt
    _SIG["pending"] = True


def _transport(msg: wire.Frame) -> wire.Frame:
    """Send one request to the harness and wait for its reply (interrupts deferred meanwhile)."""
    frame = wire.encode_frame(msg)  # raises TypeError/WireError before anything is sent
    was_in_cell, _SIG["in_cell"] = _SIG["in_cell"], False
    try:
        wire.write_bytes(_OUT_FD, frame)
        return wire.receive(_IN_FD)
    finally:
        _SIG["in_cell"] = was_in_cell
        if was_in_cell and _SIG["pending"]:
            _SIG["pending"] = False
            raise KeyboardInterrupt


def _robot_send(name: str, kwargs: dict) -> dict:
    try:
        reply = _transport(wire.Call(str(name), kwargs if isinstance(kwargs, dict) else {}))
    except (TypeError, ValueError, RecursionError, wire.WireError) as exc:
        return {
            "success": False,
            "executed": False,
            "failure_category": "invalid_argument",
            "message": f"{name}: arguments are not plain data ({exc}); pass numbers, lists, strings",
            "value": None,
            "diagnostics": {},
            "budget": {},
            "receipt": "",
        }
    if not isinstance(reply, wire.CallReply):
        return {
            "success": False,
            "executed": False,
            "failure_category": "internal_error",
            "message": f"{name}: the harness answered with {reply.kind!r}",
            "value": None,
            "diagnostics": {},
            "budget": {},
            "receipt": "",
        }
    return reply.result


def _image(handle, camera="head"):
    """Attach an observation's camera image to this cell's output (at most 4 per cell)."""
    reply = _transport(wire.ImageRequest(str(handle)[:200], str(camera)[:200]))
    return reply.message if isinstance(reply, (wire.ImageReply, wire.ErrorReply)) else ""


def _os_layers(cfg: dict) -> dict[str, str]:
    """The kernel layers that need no later set-up step (single-threaded, before pre-imports;
    the uid drop and the rlimits come later)."""
    if not cfg.get("os_isolation", True):
        return {
            k: "off: disabled by the session config"
            for k in ("netns", "no_new_privs", "landlock", "seccomp")
        }
    as_root = os.getuid() == 0
    steps = (
        ("netns", lambda: isolation.enter_netns(as_root)),
        ("no_new_privs", isolation.no_new_privs),
        ("landlock", lambda: isolation.landlock(cfg["workspace"])),
        ("seccomp", isolation.seccomp),
    )  # last: it denies unshare, which the netns needs
    layers = {}
    for name, apply in steps:
        try:
            layers[name] = apply()
        except Exception as exc:  # noqa: BLE001 - a layer this system lacks degrades, never fails
            layers[name] = f"unavailable: {type(exc).__name__}: {exc}"[:200]
    return layers


def _setup(cfg: dict) -> dict[str, str]:
    import importlib
    import resource

    os.chdir(cfg["workspace"])
    layers = _os_layers(cfg)
    for mod in PRELOAD:
        with contextlib.suppress(Exception):  # an optional module may be missing
            importlib.import_module(mod)
    import math

    import numpy
    import scipy

    from captain_ros.api.client import RobotResult, build_client

    robot = build_client(lambda n, k: RobotResult(_robot_send(n, k)))
    safe_builtins = dict(builtins.__dict__)
    guarded = _guarded_import_factory(builtins.__import__)
    safe_builtins["__import__"] = guarded
    for name in ("breakpoint", "input", "help", "exit", "quit", "copyright", "credits", "license"):
        safe_builtins.pop(name, None)
    _NS.update(
        {
            "__name__": "__main__",
            "__builtins__": safe_builtins,
            "robot": robot,
            "np": numpy,
            "numpy": numpy,
            "scipy": scipy,
            "math": math,
            "image": _image,
            "finish": robot.finish,
        }
    )
    for handle, factory in (cfg.get("clients") or {}).items():  # e.g. CoEvolve's robot handles
        module, _, function = str(factory).partition(":")
        build = getattr(importlib.import_module(module), function)
        _NS[str(handle)] = build(
            lambda n, k, _h=str(handle): RobotResult(_robot_send(f"{_h}.{n}", k))
        )
    builtins.__import__ = guarded
    if cfg.get("rng_seed") is not None:  # randomness under the episode's seed (decision points)
        import random

        random.seed(int(cfg["rng_seed"]))
        numpy.random.seed(int(cfg["rng_seed"]))
    _BASE.update(_NS)

    def limit(res: int, value: int) -> bool:
        try:
            resource.setrlimit(res, (value, value))
        except (ValueError, OSError):
            return False
        return True

    limit(resource.RLIMIT_CORE, 0)
    limited = {"AS": limit(resource.RLIMIT_AS, int(cfg["memory_limit_bytes"]))}
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = int(used.ru_utime + used.ru_stime) + int(cfg["cpu_limit_s"])  # start-up does not count
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))  # SIGXCPU, then SIGKILL
    limited["FSIZE"] = limit(resource.RLIMIT_FSIZE, int(cfg["file_size_limit_bytes"]))
    limit(resource.RLIMIT_NOFILE, 64)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGINT, _on_sigint)
    layers["landlock_reads"] = "off: disabled by the session config"
    if cfg.get("os_isolation", True):
        # before the uid drop: nobody may not be able to search the parents of these folders
        roots = (".", *cfg["read_roots"], *isolation.SYSTEM_READ_ROOTS)
        try:
            layers["landlock_reads"] = isolation.landlock_reads(roots)
        except Exception as exc:  # noqa: BLE001 - degrade, never fail
            layers["landlock_reads"] = f"unavailable: {type(exc).__name__}: {exc}"[:200]
    uid = cfg.get("drop_to_uid")
    layers["uid_drop"] = "off: the harness is not root"
    if uid is not None and os.getuid() == 0:
        os.setgroups([])
        os.setgid(int(cfg.get("drop_to_gid", uid)))
        os.setuid(int(uid))
        layers["uid_drop"] = f"on (uid {int(uid)})"
    if cfg.get("die_with_parent"):
        _die_with_parent(int(cfg["parent_pid"]))
    limited["NPROC"] = limit(resource.RLIMIT_NPROC, 0) and os.getuid() != 0  # root is exempt
    failed = [k for k, ok in limited.items() if not ok]
    layers["rlimits"] = (
        "on (AS, FSIZE, NPROC)"
        if not failed
        else (
            "unavailable: RLIMIT_"
            + ", RLIMIT_".join(failed)
            + " not enforced (NPROC does not bind root)"
        )
    )
    hook.install(
        cfg["workspace"],
        tuple(cfg["read_roots"]),
        _OUT_FD,
        {
            "deny_prefixes": DENY_EVENT_PREFIXES,
            "path_events": PATH_EVENTS,
            "read_only_events": READ_ONLY_PATH_EVENTS,
            "deny_imports": DENY_NEW_IMPORTS,
            "blocked_attr": BLOCKED_ATTR_SET,
            "safe_pickle": SAFE_PICKLE_MODULES,
        },
    )
    if cfg.get("prelude"):  # as policy code, under the limits and the hook; its names are base
        exec(compile(str(cfg["prelude"]), "<prelude>", "exec"), _NS)  # noqa: S102 - the sandbox
        _BASE.update(_NS)
    return layers


def _die_with_parent(parent_pid: int) -> None:
    """SIGKILL this process when the harness thread that started it dies (Linux; elsewhere the
    closed pipe ends an idle child)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:  # the harness died before the request took effect
        os._exit(1)


def _format_error(exc: BaseException) -> str:
    tb = traceback.TracebackException.from_exception(exc)
    tb.stack = traceback.StackSummary.from_list(
        [f for f in tb.stack if f.filename.startswith("<cell")]
    )
    return "".join(tb.format()).strip()


def _run_cell(code: str, cell_no: int, cap: int) -> wire.Done:
    out = _Capped(cap)
    old = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = out
    error = None
    interrupted = False
    fname = f"<cell {cell_no}>"
    try:
        tree = ast.parse(code, fname)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        assert last is None or isinstance(last, ast.Expr)
        _SIG["pending"], _SIG["in_cell"] = False, True
        try:
            exec(compile(tree, fname, "exec"), _NS)  # noqa: S102 - this is the sandbox
            if last is not None:
                value = eval(compile(ast.Expression(last.value), fname, "eval"), _NS)  # noqa: S307
                if value is not None:
                    print(repr(value)[:cap])
        finally:
            _SIG["in_cell"] = False
    except KeyboardInterrupt:
        interrupted = True
        error = "TimeoutError: the cell ran past its time limit and was interrupted (variables are kept)"
    except SystemExit:
        error = (
            "SystemExit: exit() is not available; the session keeps running (variables are kept)"
        )
    except BaseException as exc:  # noqa: BLE001 - every policy error becomes output
        try:
            error = _format_error(exc)
        except BaseException:  # noqa: BLE001
            error = f"{type(exc).__name__}: {exc}"
    finally:
        sys.stdout, sys.stderr = old
    if error is not None and len(error) > cap:  # an exception's text is as untrusted as output
        error = (
            error[: cap // 2]
            + f"\n[... {len(error) - cap} characters of the error truncated ...]\n"
            + error[-cap // 2 :]
        )
    try:
        digest = ns_digest(_NS, _BASE)
    except BaseException:  # noqa: BLE001 - a digest is optional; never lose the cell's result
        digest = ""
    return wire.Done(out.getvalue(), error, interrupted, [], digest)  # violations: sent by the hook


def main() -> None:
    global _IN_FD, _OUT_FD
    _IN_FD, _OUT_FD = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    parent_pid = os.getppid()
    cfg = wire.receive(_IN_FD)
    if not isinstance(cfg, wire.Config):
        return
    layers = _setup({**dataclasses.asdict(cfg), "parent_pid": parent_pid})
    wire.send(_OUT_FD, wire.Ready(os.getpid(), layers))
    while True:
        try:
            msg = wire.receive(_IN_FD)
        except KeyboardInterrupt:
            continue
        except wire.WireError:
            return
        if isinstance(msg, wire.Exec):
            wire.send(_OUT_FD, _run_cell(msg.code, msg.cell, cfg.max_output_chars))
        elif isinstance(msg, wire.Exit):
            return


if __name__ == "__main__":
    main()
