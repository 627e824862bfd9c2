"""Run generated robot policies in the project's sandboxed session and record their calls.

Each robot's program runs as one cell of a :class:`~captain_ros.harness.sandbox.session.PythonSession`
whose globals hold two robot handles, ``robot_a`` and ``robot_b``
(:func:`captain_ros.research.coevolve.skills.build_client`). A handle call only crosses the pipe to this
host, which *records* it and answers "queued"; nothing moves while the programs run. The host then
validates the recorded effective arguments and, if the pair is valid, dispatches both robots'
commands together as one physical transaction (:mod:`captain_ros.research.coevolve.motor`). The child
process holds no bridge, verifier, checkpoint or controller object, and its audit hook blocks
processes, sockets, ctypes, and file access outside its workspace.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captain_ros.harness.sandbox.session import PythonSession, SessionConfig
from captain_ros.research.coevolve.skills import SKILLS, STOP
from captain_ros.research.coevolve.strategy import ROBOTS
from captain_ros.research.coevolve.validation import Call

CLIENT_FACTORY = "captain_ros.research.coevolve.skills:build_client"


@dataclass(frozen=True)
class ProgramRun:
    """What the programs did in the sandbox.

    Attributes:
        calls: Recorded calls per robot, in order.
        errors: Per-robot error text (exception, timeout, sandbox denial), if any.
    """

    calls: dict[str, list[Call]]
    errors: dict[str, str]


class _Recorder:
    """The cell handler: records calls of the expected handle, refuses everything else."""

    def __init__(self, handle: str) -> None:
        self.handle = handle
        self.calls: list[Call] = []
        self.refused: list[str] = []

    def on_call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        handle, _, method = name.partition(".")
        if handle != self.handle or (method not in SKILLS and method != STOP):
            self.refused.append(name)
            return {
                "success": False,
                "executed": False,
                "failure_category": "invalid_argument",
                "message": f"{name}: not an allowed call of {self.handle}",
                "value": None,
                "diagnostics": {},
                "budget": {},
                "receipt": f"{name}: refused",
            }
        self.calls.append(Call(method, dict(kwargs)))
        return {
            "success": True,
            "executed": False,
            "failure_category": None,
            "message": f"{method} queued for joint dispatch",
            "value": None,
            "diagnostics": {},
            "budget": {},
            "receipt": f"{self.handle}.{method}: queued",
        }

    def on_image(self, handle: str, camera: str) -> str:
        return "images are not available to robot policies"


class ProgramSandbox:
    """A sandboxed session for one run's robot programs.

    Args:
        workspace: Folder the session may use (created).
        cell_timeout_s: Wall-time limit of one program [s].
    """

    def __init__(self, workspace: str | Path, cell_timeout_s: float = 5.0) -> None:
        cfg = SessionConfig(
            cell_timeout_s=cell_timeout_s,
            max_output_chars=4000,
            memory_limit_bytes=2 << 30,
            clients=tuple((r, CLIENT_FACTORY) for r in ROBOTS),
        )
        self.session = PythonSession(workspace, cfg)

    def run(self, programs: dict[str, str]) -> ProgramRun:
        """Run each robot's program (never raises)."""
        calls: dict[str, list[Call]] = {}
        errors: dict[str, str] = {}
        for robot in ROBOTS:
            rec = _Recorder(robot)
            out = self.session.run_cell(programs.get(robot, ""), rec)
            calls[robot] = rec.calls
            problems = []
            if out.error:
                problems.append(out.error.strip().splitlines()[-1][:300])
            if out.violations:
                problems.append("sandbox: " + "; ".join(out.violations)[:300])
            if rec.refused:
                problems.append("refused calls: " + ", ".join(rec.refused)[:200])
            if problems:
                errors[robot] = " | ".join(problems)
        return ProgramRun(calls, errors)

    def close(self) -> None:
        self.session.close()
