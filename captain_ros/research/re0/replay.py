"""Rehydrating the Python session of a recorded episode by re-executing its cells (RE-0 item 1).

The session's variables cannot be pickled (functions, generators, arbitrary objects), so a
decision point restores them the way they were made: the recorded cells of requests 1..t-1 run
again, in order, in a fresh sandbox with the recorded hash and generator seeds, and every robot
call is answered from the trajectory log instead of the robot (:class:`ReplayCalls`, the
session's cell handler). The replay goes through the real harness pieces (:func:`run_cells`, the
budget tracker, the completion gate), so budgets, gate measurements and decisions come back as
by-products, exactly as the loop built them.

Identity is checked, not assumed: each replayed robot call must have the recorded name and
arguments, and each replayed cell must reproduce the recorded output, receipts, images, error,
sandbox violations and the digest of the session's variables
(:mod:`captain_ros.harness.sandbox.ns_digest`). The first difference stops the replay with a
:class:`~captain_ros.harness.record.robot_state.RestoreRefused` that names the request, the cell and
what differed.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.core.episode_folder import TASK_MD
from captain_ros.core.result import FailureCategory, Result
from captain_ros.harness.episode.budgets import Budgets, BudgetTracker
from captain_ros.harness.episode.calls import EpisodeCalls
from captain_ros.harness.episode.cells import run_cells
from captain_ros.harness.episode.gate import CompletionGate, GateCheck
from captain_ros.harness.record.robot_state import RestoreRefused
from captain_ros.harness.sandbox.session import PythonSession, SessionConfig

TIMING_KEYS = frozenset({"duration_s", "call_s"})
BUDGET_WALL_KEYS = frozenset({"wall_s_used", "wall_s_left"})
COMPARED_CELL_KEYS = (
    "code",
    "output",
    "receipts",
    "receipts_total",
    "images",
    "error",
    "timed_out",
    "crashed",
    "violations",
    "skipped",
)


def normalized(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists, numpy scalars numbers)."""
    return json.loads(
        json.dumps(value, default=lambda o: o.tolist() if hasattr(o, "tolist") else repr(o))
    )


def without_wall(result: dict[str, Any]) -> dict[str, Any]:
    """A Result dict without the wall-clock part of its budget (the one non-reproducible field)."""
    out = dict(result)
    out["budget"] = {
        k: v for k, v in (result.get("budget") or {}).items() if k not in BUDGET_WALL_KEYS
    }
    return out


class _Clock:
    """The replay's clock: set to the recorded wall time of each call, so the tracker's view of
    the wall budget follows the record."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _RecordedRobot:
    """A :class:`~captain_ros.api.service.RobotCaller` that answers with the recorded Result."""

    def __init__(self) -> None:
        self.pending: dict[str, Any] | None = None
        self.image_ok = False

    def call(self, name: str, kwargs: dict[str, Any]) -> Result:
        rec, self.pending = self.pending, None
        if rec is None:
            return Result.fail(
                FailureCategory.INTERNAL_ERROR, f"replay: no recorded result for {name}"
            )
        return Result.from_dict(rec)

    def image(self, handle: str, camera: str) -> np.ndarray | None:
        return np.zeros((1, 1, 3), dtype=np.uint8) if self.image_ok else None


class ReplayCalls(EpisodeCalls):
    """The cell handler of a replayed session: robot calls and images come from the record.

    Args:
        requests: The recorded ``request`` lines, by request index.
        tracker / gate: The budget tracker and completion gate being rebuilt.
        scratch: A folder for the placeholder image files of the replay (thrown away).
    """

    def __init__(
        self,
        requests: dict[int, dict[str, Any]],
        tracker: BudgetTracker,
        gate: CompletionGate,
        clock: _Clock,
        scratch: Path,
    ) -> None:
        self.recorded = _RecordedRobot()
        super().__init__(self.recorded, tracker, gate, scratch)
        self.requests = requests
        self.clock = clock
        self.divergence: str | None = None
        self._queue: list[dict[str, Any]] = []
        self._images: list[dict[str, Any]] = []

    def _diverge(self, what: str) -> None:
        if self.divergence is None:
            self.divergence = f"request {self.request}, cell {self.cell + 1}: {what}"

    def end_cell(self) -> None:
        """The cell is over: every recorded call of it must have been made."""
        if self._queue:
            self._diverge(
                f"the replayed cell made {len(self._queue)} fewer robot calls than recorded"
            )
            self._queue = []

    def begin_cell(self, request: int, cell: int) -> None:
        self.end_cell()
        super().begin_cell(request, cell)
        cells = self.requests[request].get("calls") or []
        entry = cells[cell] if cell < len(cells) else {}
        self._queue = list(entry.get("robot_calls") or [])
        self._images = list(entry.get("images") or [])

    def on_call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        if not self._queue:
            self._diverge(f"the replayed cell called {str(name)[:60]} beyond the recorded calls")
            return Result.fail(FailureCategory.INTERNAL_ERROR, "replay diverged").to_dict()
        rec = self._queue.pop(0)
        if rec.get("name") != name or normalized(rec.get("kwargs")) != normalized(kwargs):
            self._diverge(
                f"robot call {str(name)[:60]}({normalized(kwargs)!s:.120}) differs from "
                f"the recorded {rec.get('name')}({rec.get('kwargs')!s:.120})"
            )
        result = rec.get("result") or {}
        self.clock.now = float((result.get("budget") or {}).get("wall_s_used", self.clock.now))
        self.recorded.pending = result
        self.execute(name, kwargs)
        self.recorded.pending = None
        if normalized(without_wall(self.last_dict)) != normalized(without_wall(result)):
            self._diverge(f"the harness accounting of {name} differs from the record")
        self.log.robot_calls[-1] = {"name": str(name)[:60], "kwargs": kwargs, "result": result}
        self.last_dict = result
        return result

    def on_image(self, handle: str, camera: str) -> str:
        nxt = self._images[0] if self._images else None
        self.recorded.image_ok = bool(
            nxt
            and nxt.get("handle") == handle
            and nxt.get("camera") == camera
            and len(self.log.images) < self.max_images_per_cell
        )
        if self.recorded.image_ok:
            self._images.pop(0)
        return super().on_image(handle, camera)

    def check_cell(self, logged: dict[str, Any], recorded: dict[str, Any]) -> None:
        """Compare one replayed cell's log entry with the recorded one."""
        for key in COMPARED_CELL_KEYS:
            if normalized(logged.get(key)) != normalized(recorded.get(key)):
                self._diverge(
                    f"its {key} differs from the record ({str(logged.get(key))[:100]!r} vs "
                    f"{str(recorded.get(key))[:100]!r})"
                )
        want = recorded.get("ns_digest") or ""
        if want and logged.get("ns_digest") != want:
            self._diverge("the session's variables differ from the record (variable digest)")


@dataclass
class ReplayedHarness:
    """The harness side of a decision point after the replay of requests 1..t-1."""

    session: PythonSession
    tracker: BudgetTracker
    gate: CompletionGate
    calls: ReplayCalls
    malformed: int
    tallies: list[tuple[int, int]]
    """(physical actions, failed physical actions) of each replayed request."""


def replay_session(
    requests: Sequence[dict[str, Any]],
    t: int,
    workspace: Path,
    task_md: str,
    gate_check: GateCheck,
    budgets: Budgets,
    session_config: SessionConfig,
    end_on_finish: bool = True,
    log_path: Path | None = None,
) -> ReplayedHarness:
    """Re-execute the cells of requests 1..t-1 in a fresh session in ``workspace``.

    Raises :class:`RestoreRefused` at the first difference from the record (the session is
    closed then)."""
    by_t = {int(r["t"]): r for r in requests}
    clock = _Clock()
    tracker = BudgetTracker(budgets, clock)
    gate = CompletionGate(gate_check)
    scratch = Path(tempfile.mkdtemp(prefix="replay_"))
    calls = ReplayCalls(by_t, tracker, gate, clock, scratch)
    session = PythonSession(workspace, session_config, log_path=log_path)
    (session.workspace / TASK_MD).write_text(task_md)
    malformed = 0
    tallies: list[tuple[int, int]] = []
    try:
        session.start()
        for k in range(1, t):
            rec = by_t.get(k)
            if rec is None:
                raise RestoreRefused(f"the record has no request {k}")
            cells = [(str(c["call_id"]), str(c["code"])) for c in rec.get("calls") or []]
            tracker.requests += 1  # as in the loop: request k counts while its cells run
            done = run_cells(k, cells, session, calls, end_on_finish)
            calls.end_cell()
            tallies.append((calls.tally.physical_actions, calls.tally.failed_physical))
            malformed += bool(rec.get("malformed")) + done.malformed
            for i, (logged, recorded) in enumerate(
                zip(done.logged, rec.get("calls") or [], strict=True)
            ):
                calls.cell = i
                calls.check_cell(logged, recorded)
            if calls.divergence:
                raise RestoreRefused(f"the session does not replay identically: {calls.divergence}")
    except BaseException:
        session.close()
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return ReplayedHarness(session, tracker, gate, calls, malformed, tallies)
