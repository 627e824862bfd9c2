"""The persistent, sandboxed Python session (harness side).

:class:`PythonSession` runs policy cells in a separate child process
(:mod:`captain_ros.harness.sandbox.child`) whose globals persist across cells. While a cell runs,
the child sends robot calls and image requests over the pipe; the harness answers them through
a :class:`CellHandler` (which owns the backend, the budgets and the gate - the child holds none of
them). A per-cell timeout interrupts runaway code (``KeyboardInterrupt`` inside the cell, variables
kept); code that ignores the interrupt, or a child that crashes (memory limit, CPU limit, a
segfault), is killed and restarted, and the next cell's output says that variables were lost.
The harness never crashes because of the child: every failure becomes cell output. The pipe is
untrusted too: frames are read with a size cap, a depth cap and a stall limit
(:mod:`captain_ros.harness.sandbox.wire`), replies are written without blocking on a child that does not
read them, and a frame that breaks off or is malformed ends that child like a crash. A cell's time
is also bounded by the episode's remaining wall time when the caller gives it. The child is
killed by the kernel when the thread that started it dies (``PR_SET_PDEATHSIG``), so no signal
to the harness, SIGKILL included, leaves it running.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from captain_ros.core.failures import failure_from_exception
from captain_ros.harness.sandbox import isolation, wire
from captain_ros.harness.sandbox.contract import (
    CellHandler,
    CellResult,
    SandboxUnavailableError,
    SessionConfig,
)
from captain_ros.harness.sandbox.spawn import NOBODY_UID, read_roots, spawn_child

log = logging.getLogger(__name__)


@dataclass
class _Proc:
    popen: subprocess.Popen[bytes]
    to_child: int
    from_child: int
    started_s: float = field(default_factory=time.monotonic)


def printable(text: str | None) -> str:
    """``text`` with lone surrogates (which no UTF-8 log, bag or model can take) written as
    ``\\udXXX`` escapes; the child's output is untrusted text."""
    if not text:
        return ""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _safe_call(handler: CellHandler, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        return handler.on_call(name, kwargs)
    except Exception as exc:  # noqa: BLE001 - a handler bug becomes a failed Result, not a crash
        log.exception("robot call handler failed for %s", name)
        res = failure_from_exception(
            RuntimeError(f"harness handler: {type(exc).__name__}"), str(name)
        )
        return replace(res, receipt=f"{name}: FAILED internal_error").to_dict()


class PythonSession:
    """A restartable sandboxed Python process with persistent globals.

    Args:
        workspace: The episode's workspace folder (the only place policy code may touch files).
        config: Limits.
        log_path: Where the child's own stderr goes (outside the workspace); None = discarded.
    """

    def __init__(
        self,
        workspace: str | Path,
        config: SessionConfig | None = None,
        log_path: str | Path | None = None,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.config = config or SessionConfig()
        self.log_path = Path(log_path) if log_path else None
        self._proc: _Proc | None = None
        self._pending_notice = ""
        self.cells_run = 0
        self.restarts = 0
        self.violations: list[str] = []
        self.layers: dict[str, str] = {}
        """State of each isolation layer of the running child (``"on ..."``, ``"off: ..."``,
        ``"unavailable: ..."``), as the child reported it at start-up."""

    # --- process management --------------------------------------------------------------------
    @property
    def drop_privileges(self) -> bool:
        want = self.config.drop_privileges
        is_root = hasattr(os, "getuid") and os.getuid() == 0
        return is_root if want is None else (want and is_root)

    def start(self) -> None:
        """Start the child if it is not running (pre-imports take a moment)."""
        if self._proc is not None and self._proc.popen.poll() is None:
            return
        if self.drop_privileges:
            os.chown(self.workspace, NOBODY_UID, NOBODY_UID)
        popen, env = spawn_child(self.workspace, self.config.hash_seed, self.log_path)
        assert popen.stdin is not None and popen.stdout is not None
        proc = _Proc(popen, popen.stdin.fileno(), popen.stdout.fileno())
        os.set_blocking(proc.to_child, False)  # a child that stops reading cannot block the harness
        self._proc = proc
        cfg = wire.Config(
            str(self.workspace),
            read_roots(),
            self.config.max_output_chars,
            int(self.config.memory_limit_bytes),
            int(self.config.cpu_limit_s),
            int(self.config.file_size_limit_bytes),
            NOBODY_UID if self.drop_privileges else None,
            NOBODY_UID if self.drop_privileges else None,
            rng_seed=self.config.rng_seed,
            clients=dict(self.config.clients),
            prelude=self.config.prelude,
            die_with_parent=True,
            os_isolation=self.config.os_isolation,
        )
        deadline = time.monotonic() + self.config.startup_timeout_s
        try:
            wire.send(proc.to_child, cfg, timeout_s=self.config.startup_timeout_s)
            msg = wire.decode(self._recv(proc, deadline))
            while isinstance(msg, wire.Violation):  # denials of the prelude
                self._violation(msg.text)
                msg = wire.decode(self._recv(proc, deadline))
        except (OSError, wire.WireError, TimeoutError, ValueError) as exc:
            self._kill()
            raise RuntimeError(f"the sandboxed session failed to start: {exc}") from exc
        if not isinstance(msg, wire.Ready):
            self._kill()
            raise RuntimeError(f"the sandboxed session sent {msg!r:.100} instead of ready")
        self.layers = {
            "clean_env": f"on ({len(env)} fixed variables)",
            **{str(k): printable(str(v))[:200] for k, v in msg.layers.items()},
        }
        missing = isolation.missing(self.layers)
        if self.config.strict_sandbox and missing:
            self._kill()
            raise SandboxUnavailableError(
                "strict sandbox: refusing to start the policy session: " + "; ".join(missing)
            )

    def _violation(self, text: str) -> None:
        v = printable(str(text))[:300]
        log.warning("sandbox violation: %s", v)
        self.violations.append(v)

    @property
    def pid(self) -> int | None:
        return self._proc.popen.pid if self._proc else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.popen.poll() is None

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.popen.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            proc.popen.kill()
        proc.popen.wait(timeout=10)
        for f in (proc.popen.stdin, proc.popen.stdout):
            with contextlib.suppress(OSError):
                f.close()  # type: ignore[union-attr]

    def close(self) -> None:
        if self._proc is not None and self._proc.popen.poll() is None:
            try:
                wire.send(self._proc.to_child, wire.Exit(), timeout_s=1.0)
                self._proc.popen.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired, wire.WireError):
                pass
        self._kill()

    def __enter__(self) -> PythonSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _recv(proc: _Proc, deadline: float) -> Any:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        ready, _, _ = select.select([proc.from_child], [], [], remaining)
        if not ready:
            raise TimeoutError
        return wire.read_frame(proc.from_child, stall_s=wire.FRAME_STALL_S)

    # --- cells ---------------------------------------------------------------------------------
    def run_cell(
        self, code: str, handler: CellHandler, time_left_s: float | None = None
    ) -> CellResult:
        """Run one cell, answering its robot calls with ``handler``. Never raises.

        Args:
            time_left_s: The episode's remaining wall time [s]; the cell, robot calls included,
                is interrupted when it is spent (None: only the cell timeout applies).
        """
        self.cells_run += 1
        t_begin = time.monotonic()
        notice, self._pending_notice = self._pending_notice, ""
        if self._proc is not None and self._proc.popen.poll() is not None:
            why = self._death_reason(RuntimeError("exited"))
            self._kill()
            self.restarts += 1
            notice = (notice + "\n" if notice else "") + (
                f"[session restarted: {why}. All variables were lost; `robot`, `np`, `scipy`, `math` "
                "and `image` are available again.]"
            )
        try:
            self.start()
        except (RuntimeError, SandboxUnavailableError) as exc:
            self._pending_notice = ""
            return CellResult(
                "",
                f"SessionError: {exc}",
                crashed=True,
                notice=notice,
                duration_s=time.monotonic() - t_begin,
            )
        proc = self._proc
        assert proc is not None
        t0 = time.monotonic()  # the timeout counts from here, not from the (re)start
        call_s = 0.0
        interrupted_at: float | None = None
        images = 0
        cell_violations: list[str] = []
        try:
            wire.send(proc.to_child, wire.Exec(code, self.cells_run), timeout_s=wire.FRAME_STALL_S)
            while True:
                if interrupted_at is None:
                    deadline = t0 + self.config.cell_timeout_s + call_s
                    if time_left_s is not None:
                        deadline = min(deadline, t0 + max(0.0, time_left_s))
                else:
                    deadline = interrupted_at + self.config.interrupt_grace_s
                try:
                    raw = self._recv(proc, deadline)
                except TimeoutError:
                    if interrupted_at is None:
                        interrupted_at = time.monotonic()
                        os.kill(proc.popen.pid, signal.SIGINT)
                        continue
                    return self._crash(
                        t0,
                        call_s,
                        notice,
                        timed_out=True,
                        why=f"the cell ran past its {self.config.cell_timeout_s:g} s limit "
                        "and ignored the interrupt, so the process was killed",
                    )
                try:
                    msg = wire.decode(raw)
                except wire.WireError as exc:  # policy code wrote to the pipe itself
                    log.warning("sandbox sent an invalid frame: %s", exc)
                    self.violations.append(f"invalid frame: {str(exc)[:120]}")
                    wire.send(
                        proc.to_child,
                        wire.ErrorReply("invalid request"),
                        timeout_s=wire.FRAME_STALL_S,
                    )
                    continue
                if isinstance(msg, wire.Violation):  # sent by the audit hook as it denies
                    if len(cell_violations) < 100:
                        self._violation(msg.text)
                        cell_violations.append(self.violations[-1])
                    continue
                if isinstance(msg, wire.Done):
                    violations = tuple(cell_violations)
                    return CellResult(
                        printable(msg.output),
                        printable(msg.error) or None,
                        timed_out=interrupted_at is not None or msg.interrupted,
                        notice=notice,
                        violations=violations,
                        duration_s=time.monotonic() - t0,
                        call_s=call_s,
                        ns_digest=msg.ns_digest,
                    )
                t_call = time.monotonic()
                reply: wire.Frame
                if isinstance(msg, wire.Call):
                    reply = wire.CallReply(_safe_call(handler, msg.name, msg.kwargs))
                elif isinstance(msg, wire.ImageRequest):
                    images += 1
                    try:
                        text = handler.on_image(msg.handle, msg.camera)
                    except Exception as exc:  # noqa: BLE001 - a handler bug must not end the session
                        log.exception("image handler failed")
                        text = f"image not attached: internal error ({type(exc).__name__})"
                    reply = wire.ImageReply(text)
                else:
                    log.warning("sandbox sent an unexpected %r frame", msg.kind)
                    self.violations.append(f"unexpected frame {msg.kind!r:.40}")
                    reply = wire.ErrorReply("unexpected request")
                wire.send(proc.to_child, reply, timeout_s=wire.FRAME_STALL_S)
                call_s += time.monotonic() - t_call
        except (OSError, wire.WireError) as exc:
            if (
                proc.popen.poll() is None
            ):  # alive: it broke the protocol (e.g. policy code wrote raw bytes)
                self.violations.append(f"pipe: {str(exc)[:120]}")
            return self._crash(
                t0,
                call_s,
                notice,
                timed_out=interrupted_at is not None,
                why=self._death_reason(exc),
            )
        except Exception as exc:  # noqa: BLE001 - whatever the child sent, the harness goes on
            log.exception("the session's pipe failed")
            return self._crash(
                t0,
                call_s,
                notice,
                timed_out=interrupted_at is not None,
                why=f"the session's pipe failed ({type(exc).__name__})",
            )

    def _death_reason(self, exc: BaseException) -> str:
        proc = self._proc
        code = proc.popen.poll() if proc else None
        if code is None and proc is not None:
            try:
                code = proc.popen.wait(timeout=1)
            except subprocess.TimeoutExpired:
                code = None
        if code is not None and code < 0:
            name = (
                signal.Signals(-code).name
                if -code in signal.Signals._value2member_map_
                else str(-code)
            )
            hint = {
                "SIGXCPU": " (CPU time limit)",
                "SIGKILL": " (killed, e.g. memory)",
                "SIGSEGV": " (crash)",
            }
            return f"the Python process died from {name}{hint.get(name, '')}"
        if code is not None:
            return f"the Python process exited with code {code}"
        return f"the session pipe broke ({exc})"

    def _crash(
        self, t0: float, call_s: float, notice: str, timed_out: bool, why: str
    ) -> CellResult:
        self._kill()
        self.restarts += 1
        log.warning("sandbox session lost: %s", why)
        self._pending_notice = (
            f"[session restarted: {why}. All variables were lost; `robot`, `np`, "
            "`scipy`, `math` and `image` are available again.]"
        )
        return CellResult(
            "",
            f"SessionError: {why}. The session will be restarted; variables are lost.",
            timed_out=timed_out,
            crashed=True,
            notice=notice,
            duration_s=time.monotonic() - t0,
            call_s=call_s,
        )
