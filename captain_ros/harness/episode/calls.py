"""The harness side of robot calls during one episode.

:class:`EpisodeCalls` answers the sandbox's requests (it is the session's
:class:`~captain_ros.harness.sandbox.session.CellHandler`): it checks budgets before physical actions,
routes ``finish`` to the completion gate, validates every other call's arguments and forwards it
to the swappable :class:`~captain_ros.api.service.RobotCaller` under the episode's remaining
wall-time budget (:mod:`captain_ros.core.deadline`), counts physical actions, records measurements for
the gate, attaches the budget snapshot and a receipt to every Result, saves attached images,
and logs each call. It never raises.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.api import registry
from captain_ros.api.service import RobotCaller, default_receipt, exception_to_result
from captain_ros.api.validation import validate_call
from captain_ros.core import deadline
from captain_ros.core.episode_folder import IMAGES
from captain_ros.core.errors import CaptainError
from captain_ros.core.result import FailureCategory, Result
from captain_ros.harness.episode.budgets import BudgetTracker
from captain_ros.harness.episode.gate import CompletionGate
from captain_ros.harness.episode.observers import CallEvent
from captain_ros.harness.record.history import ImageRef

log = logging.getLogger(__name__)

MAX_RECEIPTS_SHOWN = 20
CallObserver = Callable[[CallEvent], None]
"""Sees every call's final Result (budget attached), ``finish`` included."""
NOT_COUNTED = (
    FailureCategory.INVALID_ARGUMENT,
    FailureCategory.UNKNOWN_ID,
    FailureCategory.BUDGET_EXHAUSTED,
)


@dataclass
class CellLog:
    """Everything one cell did through the robot API."""

    receipts: list[str] = field(default_factory=list)
    robot_calls: list[dict[str, Any]] = field(default_factory=list)
    images: list[ImageRef] = field(default_factory=list)
    image_messages: list[str] = field(default_factory=list)


@dataclass
class RequestTally:
    """What one request did through the robot API (for its privileged request record)."""

    physical_actions: int = 0
    failed_physical: int = 0
    perception_calls: int = 0
    successful_calls: int = 0
    capabilities: list[str] = field(default_factory=list)


def save_png(img: np.ndarray, path: Path) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.ascontiguousarray(img, dtype=np.uint8)).save(path)


def observe_initial(robot: RobotCaller, out_dir: Path) -> tuple[ImageRef, ...]:
    """The scene's first camera images, saved under ``out_dir/images`` (none when it fails: a
    broken caller must not stop the episode)."""
    try:
        res = robot.call("observe", {})
        if not res.success or not isinstance(res.value, dict):
            log.warning("initial observe failed: %s", res.message)
            return ()
        handle = str(res.value.get("handle", ""))
        refs = []
        for cam in res.value.get("cameras") or []:
            img = robot.image(handle, str(cam))
            if img is not None:
                rel = f"{IMAGES}/r000_initial_{cam}.png"
                save_png(img, out_dir / rel)
                refs.append(ImageRef(rel, str(cam), handle))
        return tuple(refs)
    except Exception:  # noqa: BLE001
        log.exception("initial observation failed")
        return ()


class EpisodeCalls:
    """Per-episode robot-call handling (budgets, gate, receipts, images, logs)."""

    def __init__(
        self,
        robot: RobotCaller,
        tracker: BudgetTracker,
        gate: CompletionGate,
        episode_dir: Path,
        max_images_per_cell: int = 4,
        observer: CallObserver | None = None,
    ) -> None:
        self.robot = robot
        self.observer = observer
        self.tracker = tracker
        self.gate = gate
        self.episode_dir = Path(episode_dir)
        self.max_images_per_cell = max_images_per_cell
        self.backend_s = 0.0
        self.calls = 0
        self.exhausted: str | None = None
        self.finish_accepted = False
        self.request = 0
        self.cell = 0
        self.last_dict: dict[str, Any] = {}
        self.log = CellLog()
        self.tally = RequestTally()
        self.failed_physical = 0

    def begin_request(self, request: int) -> None:
        self.request, self.tally = request, RequestTally()

    def begin_cell(self, request: int, cell: int) -> None:
        if request != self.request:
            self.begin_request(request)
        self.cell, self.log = cell, CellLog()

    def _fail(self, name: str, category: FailureCategory, message: str) -> Result:
        res = Result.fail(category, message)
        return replace(res, receipt=default_receipt(name, res))

    def execute(self, name: str, kwargs: dict[str, Any]) -> Result:
        """Run one call with budget/gate accounting. Never raises."""
        self.calls += 1
        t_call = time.perf_counter()
        try:
            cap = registry.CAPABILITY_BY_NAME.get(name) if isinstance(name, str) else None
            if cap is None:
                result = self._fail(
                    str(name)[:60],
                    FailureCategory.UNKNOWN_ID,
                    f"unknown capability {str(name)[:60]!r}; valid: "
                    + ", ".join(registry.CAPABILITY_BY_NAME),
                )
            elif self.tracker.wall_left_s() <= 0:
                self.exhausted = self.exhausted or "wall_time"
                result = self._fail(
                    name,
                    FailureCategory.BUDGET_EXHAUSTED,
                    "the wall-time budget is spent; the episode is ending",
                )
            elif cap.physical and self.tracker.physical_left() <= 0:
                self.exhausted = self.exhausted or "physical_actions"
                result = self._fail(
                    name,
                    FailureCategory.BUDGET_EXHAUSTED,
                    "the physical-action budget is spent; the episode is ending",
                )
            elif cap.service == "harness":
                try:
                    args = validate_call(cap, kwargs)
                    result = self.gate.finish(str(args.get("summary", "")))
                except CaptainError as exc:
                    result = self._fail(name, FailureCategory.INVALID_ARGUMENT, f"finish: {exc}")
                if result.success:
                    self.finish_accepted = True
            else:
                result = self._forward(cap, name, kwargs)
                if not isinstance(result, Result):
                    result = self._fail(
                        name, FailureCategory.INTERNAL_ERROR, "the robot returned no Result"
                    )
                if cap.physical and result.failure_category not in NOT_COUNTED:
                    self.tracker.physical_actions += 1
                    self.tally.physical_actions += 1
                self.gate.record(name, result)
            if cap is not None:
                self.tally.capabilities.append(name)
                self.tally.successful_calls += int(result.success)
                if (
                    cap.physical
                    and not result.success
                    and result.failure_category != FailureCategory.BUDGET_EXHAUSTED
                ):
                    self.tally.failed_physical += 1
                    self.failed_physical += 1
                elif not cap.physical and cap.service != "harness":
                    self.tally.perception_calls += 1
        except Exception as exc:  # noqa: BLE001 - the harness must not crash on a call
            log.exception("robot call %s failed in the harness", name)
            result = self._fail(
                str(name)[:60],
                FailureCategory.INTERNAL_ERROR,
                f"internal harness error ({type(exc).__name__}); it was logged",
            )
        if not result.receipt:
            result = replace(result, receipt=default_receipt(str(name)[:60], result))
        result = result.with_budget(self.tracker.snapshot())
        self.last_dict = result.to_dict()
        self.log.receipts.append(result.receipt)
        self.log.robot_calls.append(
            {"name": str(name)[:60], "kwargs": kwargs, "result": self.last_dict}
        )
        if self.observer is not None:
            try:
                self.observer(
                    CallEvent(
                        self.request,
                        self.cell,
                        self.calls,
                        str(name)[:60],
                        dict(kwargs) if isinstance(kwargs, dict) else {},
                        result,
                        time.perf_counter() - t_call,
                    )
                )
            except Exception:  # noqa: BLE001 - an observer must not break the episode
                log.exception("call observer failed for %s", name)
        return result

    def _forward(self, cap: registry.Capability, name: str, kwargs: dict[str, Any]) -> Result:
        """Validate here (so that no robot node, in-process or over ROS, sees arguments that
        fail validation), then run the call inside the episode's remaining wall time."""
        try:
            validate_call(cap, kwargs)
        except Exception as exc:  # noqa: BLE001 - any bad argument is the policy's, never a crash
            return exception_to_result(name, exc)
        t0 = time.perf_counter()
        try:
            with deadline.scope(self.tracker.wall_left_s(), "the episode's wall-time budget"):
                return self.robot.call(name, dict(kwargs))
        finally:
            self.backend_s += time.perf_counter() - t0

    # --- CellHandler ---------------------------------------------------------------------------
    def on_call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        self.execute(name, kwargs)
        return self.last_dict

    def on_image(self, handle: str, camera: str) -> str:
        if len(self.log.images) >= self.max_images_per_cell:
            msg = f"image not attached: at most {self.max_images_per_cell} images per cell"
        else:
            t0 = time.perf_counter()
            try:
                img = self.robot.image(handle, camera)
            except Exception:  # noqa: BLE001
                img = None
            self.backend_s += time.perf_counter() - t0
            if img is None:
                msg = f"image not attached: no image for handle {handle!r} camera {camera!r} (call robot.observe() first)"
            else:
                rel = (
                    f"{IMAGES}/r{self.request:03d}_c{self.cell}_{len(self.log.images)}_{camera}.png"
                )
                save_png(img, self.episode_dir / rel)
                self.log.images.append(ImageRef(rel, camera, handle))
                msg = f"attached image {len(self.log.images)}/{self.max_images_per_cell}: {camera} of {handle}"
        self.log.image_messages.append(msg)
        return msg

    def receipts_block(self) -> str:
        """The receipts of the current cell as printed (at most 20 lines, the rest counted)."""
        rec = self.log.receipts
        if not rec:
            return ""
        shown = [f"[receipt] {r}" for r in rec[:MAX_RECEIPTS_SHOWN]]
        if len(rec) > MAX_RECEIPTS_SHOWN:
            shown.append(f"[... {len(rec) - MAX_RECEIPTS_SHOWN} more receipts not shown]")
        return "\n".join(shown)
