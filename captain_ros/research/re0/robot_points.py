"""The robot side of decision points: kept in memory, rebuilt in another process, or restored by
handle from the store that recorded them (see :mod:`captain_ros.research.re0.decision_points`)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from typing import Any, Protocol

from captain_ros.api import registry
from captain_ros.core.errors import NotSupportedError
from captain_ros.core.privileged import PrivilegedState
from captain_ros.harness.episode.observers import EpisodeObserver
from captain_ros.harness.record.episode_record import EpisodeRecord
from captain_ros.harness.record.recorded import EXTRA_KEY, RecordedEpisode
from captain_ros.harness.record.robot_state import (
    RestoreRefused,
    RobotSideSnapshot,
    capture_robot_side,
)
from captain_ros.research.re0.determinism import check_restorable
from captain_ros.research.re0.replay import normalized


class DecisionPointSource(EpisodeObserver):
    """The privileged source of an in-process episode that snapshots the whole robot side before
    every request (in memory, the newest ``keep``), and notes the scene model key and noise draw
    in the record. Pass it as ``privileged=`` AND as an observer."""

    def __init__(self, service: Any, keep: int = 256) -> None:
        self.service = service
        self.keep = keep
        self.points: dict[str, tuple[RobotSideSnapshot, PrivilegedState]] = {}
        self._n = 0

    def state(self) -> PrivilegedState:
        return self.service.backend.privileged_state()

    def snapshot(self) -> str | None:
        try:
            snap = capture_robot_side(self.service)
        except NotSupportedError:
            return None
        self._n += 1
        handle = f"dp_{self._n:04d}"
        self.points[handle] = (snap, self.service.backend.privileged_state())
        while len(self.points) > self.keep:
            self.points.pop(next(iter(self.points)))
        return handle

    def amend(self, record: EpisodeRecord) -> EpisodeRecord:
        return replace(record, extra={**record.extra, EXTRA_KEY: robot_identity(self.service)})


def robot_identity(service: Any) -> dict[str, Any]:
    """The scene model key and noise draw of ``service``'s backend (what a rebuild must match)."""
    backend = service.backend
    key = None
    with contextlib.suppress(NotSupportedError):
        key = getattr(backend.snapshot(), "model_key", None)
    noise = getattr(backend, "noise_draw", None)
    return {"model_key": key, "noise": noise.to_dict() if noise is not None else None}


@dataclass(frozen=True)
class RobotPoint:
    """The robot side at s_t plus the ground truth of s_1..s_{t-1} (the task tracker's input)."""

    t: int
    snapshot: RobotSideSnapshot
    prefix_states: tuple[PrivilegedState, ...]


def point_from_source(
    rec: RecordedEpisode, t: int, source: DecisionPointSource
) -> RobotPoint | None:
    """The in-memory decision point t of an episode recorded with ``source`` (None: not kept)."""
    if len(rec.states) < t:
        return None
    handles = [s.snapshot for s in rec.states[:t]]
    if any(h not in source.points for h in handles):
        return None
    snap = source.points[str(handles[-1])][0]
    return RobotPoint(t, snap, tuple(source.points[str(h)][1] for h in handles[:-1]))


class HandleRestorer(Protocol):
    """Restores the robot side from the snapshot store that recorded the episode, by the handles
    of ``privileged.jsonl`` (the robot node's services on the ROS graph:
    :class:`captain_ros.ros.decision_points.ServiceRestorer`)."""

    def restore(self, handle: str) -> None:
        """Restore snapshot ``handle``; raises :class:`RestoreRefused` with the store's reason."""

    def state(self) -> PrivilegedState:
        """The ground truth of the restored state."""


def via_handles(
    rec: RecordedEpisode, t: int, restorer: HandleRestorer
) -> tuple[PrivilegedState, ...]:
    """Visit s_1..s_{t-1} (their ground truth feeds the task tracker), then restore s_t."""
    handles = [s.snapshot for s in rec.states[:t]]
    if len(handles) < t or any(not h for h in handles):
        raise RestoreRefused(f"privileged.jsonl has no snapshot handle for every state s_1..s_{t}")
    states = []
    for h in handles[:-1]:
        restorer.restore(str(h))
        states.append(restorer.state())
    restorer.restore(str(handles[-1]))
    return tuple(states)


def check_identity(rec: RecordedEpisode, service: Any) -> None:
    want, have = rec.noted, robot_identity(service)
    if want.get("model_key") and have.get("model_key") != want["model_key"]:
        raise RestoreRefused(
            "the robot's scene model differs from the recorded one (another model key)"
        )
    if "noise" in want and normalized(have.get("noise")) != normalized(want.get("noise")):
        raise RestoreRefused(
            f"the robot's noise draw {have.get('noise')} differs from the recorded "
            f"{want.get('noise')}"
        )


def rebuild_robot_side(rec: RecordedEpisode, t: int, service: Any, task: Any) -> RobotPoint:
    """Rebuild s_t on a fresh robot of the recorded scene by re-executing the recorded robot calls
    of requests 1..t-1 (the initial observation first), each checked against its recorded Result;
    s_t's features are checked against ``privileged.jsonl`` when it has them."""
    v = check_restorable(rec, t)
    if not v.ok:
        raise RestoreRefused(v.reason)
    backend = service.backend
    perception = getattr(service, "perception", None)
    if backend.time_s() != 0.0 or (perception is not None and len(perception.observations)):
        raise RestoreRefused(
            "rebuilding needs a robot at the start of its scene (fresh backend and services)"
        )
    check_identity(rec, service)
    first = service.call("observe", {})
    want_handle = next((i.get("handle") for i in rec.start.get("initial_images") or []), None)
    if want_handle and (not first.success or (first.value or {}).get("handle") != want_handle):
        raise RestoreRefused("the initial observation does not reproduce the recorded one")
    states: list[PrivilegedState] = []
    for req in rec.requests[: t - 1]:
        states.append(backend.privileged_state())
        for cell in req.get("calls") or []:
            for call in cell.get("robot_calls") or []:
                cap = registry.CAPABILITY_BY_NAME.get(call.get("name"))
                result = call.get("result") or {}
                if (
                    cap is None
                    or cap.service == "harness"
                    or result.get("failure_category") == "budget_exhausted"
                ):
                    continue  # answered by the harness, never reached the robot
                got = service.call(call["name"], dict(call.get("kwargs") or {})).to_dict()
                got.pop("budget", None)
                want = {k: v for k, v in result.items() if k != "budget"}
                if normalized(got) != normalized(want):
                    raise RestoreRefused(
                        f"request {req['t']}: {call['name']} returned another Result than "
                        f"recorded ({str(got.get('receipt'))[:120]!r} vs "
                        f"{str(want.get('receipt'))[:120]!r})"
                    )
    if len(rec.states) >= t:
        tracker = task.tracker()
        for s in states:
            tracker.update(s)
        now = backend.privileged_state()
        tracker.update(now)
        feats = task.features(now, tracker)
        if feats.tobytes() != rec.states[t - 1].features.tobytes():
            raise RestoreRefused(
                f"the rebuilt state s_{t} differs from the recorded one (features)"
            )
    return RobotPoint(t, capture_robot_side(service), tuple(states))
