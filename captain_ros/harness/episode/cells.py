"""Running the cells of one reply in the session (one request's execution).

The episode loop hands over the parsed reply; :func:`run_cells` executes its ``python`` cells in
order through the session, stops executing once ``finish()`` was accepted or a budget is spent
(the remaining cells are reported as not executed), and returns what the history and the
trajectory log need, plus whether every executed cell only produced a Python error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from captain_ros.harness.episode.calls import EpisodeCalls
from captain_ros.harness.record.history import ToolCall, ToolOutput
from captain_ros.harness.sandbox.session import PythonSession

MAX_CODE_CHARS = 100_000


@dataclass
class CellsOutcome:
    """The result of executing one reply's cells."""

    tool_calls: list[ToolCall] = field(default_factory=list)
    outputs: list[ToolOutput] = field(default_factory=list)
    logged: list[dict[str, Any]] = field(default_factory=list)
    malformed: int = 0
    executed: int = 0
    errors: int = 0

    @property
    def python_error_only(self) -> bool:
        """At least one cell ran and every executed cell ended in a Python error."""
        return self.executed > 0 and self.errors == self.executed


def precheck(code: str) -> str | None:
    """Reject code that cannot run (too long, syntax error) before it reaches the session."""
    if len(code) > MAX_CODE_CHARS:
        return f"Code rejected: {len(code)} characters is more than the {MAX_CODE_CHARS} allowed per call."
    try:
        compile(code, "<cell>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return (
            f"SyntaxError: {exc.msg} (line {exc.lineno}, column {exc.offset}). "
            f"The cell was not run; fix the code and call python again."
        )
    except (ValueError, OverflowError, RecursionError, MemoryError) as exc:
        return f"Code rejected: {type(exc).__name__}: {exc}"
    return None


def run_cells(
    t: int,
    cells: list[tuple[str, str]],
    session: PythonSession,
    calls: EpisodeCalls,
    end_on_finish: bool,
) -> CellsOutcome:
    """Execute ``cells`` (``(call_id, code)`` pairs) of request ``t``."""
    out = CellsOutcome()
    calls.begin_request(t)
    for k, (call_id, code) in enumerate(cells):
        out.tool_calls.append(ToolCall(call_id, code))
        if calls.exhausted or (calls.finish_accepted and end_on_finish):
            why = (
                "finish() was accepted"
                if calls.finish_accepted
                else f"the {calls.exhausted} budget is spent"
            )
            text = f"[not executed: {why}]"
            out.outputs.append(ToolOutput(call_id, text))
            out.logged.append({"call_id": call_id, "code": code, "output": text, "skipped": True})
            continue
        calls.begin_cell(t, k)
        error = precheck(code)
        if error:
            out.malformed += 1
            text, cres = error, None
        else:
            cres = session.run_cell(code, calls, calls.tracker.wall_left_s())
            text = cres.text()
        out.executed += 1
        if error or (cres is not None and (cres.error or cres.timed_out or cres.crashed)):
            out.errors += 1
        receipts = calls.receipts_block()
        if calls.log.image_messages:
            text = (text + "\n" if text else "") + "\n".join(
                f"[image] {m}" for m in calls.log.image_messages
            )
        full = "\n".join(p for p in (text, receipts) if p) or "(no output)"
        out.outputs.append(ToolOutput(call_id, full, tuple(calls.log.images)))
        out.logged.append(
            {
                "call_id": call_id,
                "code": code,
                "output": full,
                "receipts": list(calls.log.receipts),
                "receipts_total": len(calls.log.receipts),
                "images": [r.to_dict() for r in calls.log.images],
                "robot_calls": calls.log.robot_calls,
                "error": error or (cres.error if cres else None),
                "timed_out": bool(cres and cres.timed_out),
                "crashed": bool(cres and cres.crashed),
                "violations": list(cres.violations) if cres else [],
                "duration_s": cres.duration_s if cres else 0.0,
                "call_s": cres.call_s if cres else 0.0,
                "ns_digest": cres.ns_digest if cres else "",
            }
        )
    return out
