"""The sandboxed session's contract: its limits (:class:`SessionConfig`), what one cell gives back
(:class:`CellResult`), who answers the child's requests during a cell (:class:`CellHandler`), and
its refusal to start without the isolation asked for (:class:`SandboxUnavailableError`).

:class:`captain_ros.harness.sandbox.session.PythonSession` runs the session; these names are also
importable from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from captain_ros.core.errors import CaptainError


class SandboxUnavailableError(CaptainError):
    """``strict_sandbox`` is set and an isolation layer is not available here."""


class CellHandler(Protocol):
    """Answers the child's requests during a cell (implemented by the episode)."""

    def on_call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Execute a robot call; return ``Result.to_dict()``."""

    def on_image(self, handle: str, camera: str) -> str:
        """Attach an image; return the message shown to the policy."""


@dataclass(frozen=True)
class SessionConfig:
    """Limits of the sandboxed session.

    Attributes:
        cell_timeout_s: Wall time a cell may run, not counting time spent in robot calls [s].
        interrupt_grace_s: Time given to an interrupted cell before the process is killed [s].
        startup_timeout_s: Time allowed for the child to start and pre-import [s].
        max_output_chars: Captured stdout/stderr kept per cell (head and tail) [characters].
        memory_limit_bytes: Address-space limit of the child (RLIMIT_AS) [bytes].
        cpu_limit_s: CPU time of one child process before it is killed (RLIMIT_CPU) [s].
        file_size_limit_bytes: Largest file the child may write (RLIMIT_FSIZE) [bytes].
        drop_privileges: Run the child as ``nobody`` (None = when the harness runs as root).
        hash_seed: ``PYTHONHASHSEED`` of the child (``None``: random per process, Python's
            default). Fixed by default so that set and dict-of-str orders, hence a replayed
            session, are the same in every process (decision points, RE-0).
        rng_seed: Seed of the child's ``random`` and ``numpy.random`` global generators
            (``None``: unseeded, as Python starts them).
        clients: Extra handles in the session's globals, as ``(name, "module:function")`` pairs;
            the child calls ``function(transport)`` at start-up, and calls made through the handle
            reach :meth:`CellHandler.on_call` named ``"<name>.<method>"`` (e.g. CoEvolve's robot
            handles, :func:`captain_ros.research.coevolve.skills.build_client`).
        prelude: Python run in the session's globals at every start-up (restarts included),
            before the first cell, as policy code (the ``helpers`` profile's library); a prelude
            that fails makes the start fail.
        os_isolation: Apply the kernel layers of :mod:`captain_ros.harness.sandbox.isolation` (network
            namespace, no_new_privs, Landlock, seccomp) where available.
        strict_sandbox: Refuse to start (:class:`SandboxUnavailableError`) unless every layer
            of :data:`captain_ros.harness.sandbox.isolation.REQUIRED` is on.
    """

    cell_timeout_s: float = 60.0
    interrupt_grace_s: float = 2.0
    startup_timeout_s: float = 120.0
    max_output_chars: int = 20000
    memory_limit_bytes: int = 4 << 30
    cpu_limit_s: int = 3600
    file_size_limit_bytes: int = 64 << 20
    drop_privileges: bool | None = None
    hash_seed: int | None = 0
    rng_seed: int | None = None
    clients: tuple[tuple[str, str], ...] = ()
    prelude: str = ""
    os_isolation: bool = True
    strict_sandbox: bool = False

    def __post_init__(self) -> None:
        for name in ("hash_seed", "rng_seed"):
            v = getattr(self, name)
            if v is not None and (
                isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**32
            ):
                raise ValueError(
                    f"SessionConfig.{name} must be None or an integer in [0, 2**32), got {v!r}"
                )


@dataclass(frozen=True)
class CellResult:
    """What one cell produced.

    Attributes:
        output: Captured stdout+stderr (truncated), including the traceback of an error.
        error: The error text (traceback limited to cell frames), or None.
        timed_out: The cell hit its time limit.
        crashed: The process died or was killed during this cell (variables are lost).
        notice: A harness notice shown before the output (e.g. the session was restarted).
        violations: Sandbox denials raised during the cell.
        duration_s: Wall time of the cell [s].
        call_s: Part of it spent answering robot calls/images in the harness [s].
        ns_digest: The child's digest of the session variables after the cell (``""``: none);
            untrusted data, used only to check that a replayed session matches its record.
    """

    output: str
    error: str | None = None
    timed_out: bool = False
    crashed: bool = False
    notice: str = ""
    violations: tuple[str, ...] = ()
    duration_s: float = 0.0
    call_s: float = 0.0
    ns_digest: str = ""

    def text(self) -> str:
        parts = [p for p in (self.notice, self.output.rstrip("\n"), self.error or "") if p]
        return "\n".join(parts)
