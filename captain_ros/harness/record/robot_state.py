"""The robot side of a decision point: everything below the API that shapes what happens next.

A :class:`RobotSideSnapshot` holds, for an in-process :class:`~captain_ros.api.RobotService`:

- the backend's own snapshot (MuJoCo: integration state, controller targets, gripper commands,
  the backend RNG and the stochastic-mode noise streams; see
  :mod:`captain_ros.backends.mujoco.snapshot`);
- the safety layer's memory of the last applied targets and velocities (the next tick's rate
  limits start from them) and whether its e-stop latch was tripped;
- the perception service's observations, detections, recorded measurements and caches
  (handles and ids continue from the same counters);
- the motion service's executed-trajectory history (``recover``, ``read_motion_trajectory``).

Restoring never clears a latched e-stop: a tripped latch must be reset explicitly first. The
harness side (history, budgets, gate, session variables) is rebuilt from the episode's log by
:mod:`captain_ros.research.re0.decision_points`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from captain_ros.core.errors import CaptainError


class RestoreRefused(CaptainError):
    """A decision point cannot be restored with a guarantee of identity (the message says why)."""


@dataclass(frozen=True)
class RobotSideSnapshot:
    """The robot side of one decision point (in memory; the backend part pickles, the rest
    shares frozen observation data with the live stores).

    Attributes:
        backend: The backend's own snapshot.
        guards: The safety layer's :meth:`guard_state` (``None`` without a safety layer).
        estopped: The e-stop was latched.
        perception: The perception service's :meth:`memory_state` (``None``: no such service).
        motion: The motion service's :meth:`history_state` (``None``: no such service).
        time_s: Backend clock at the snapshot [s].
    """

    backend: Any
    guards: dict[str, Any] | None
    estopped: bool
    perception: dict[str, Any] | None
    motion: dict[str, Any] | None
    time_s: float


def _method(obj: Any, name: str) -> Any:
    fn = getattr(obj, name, None) if obj is not None else None
    return fn if callable(fn) else None


def capture_robot_side(service: Any) -> RobotSideSnapshot:
    """Snapshot the robot side of ``service`` (``backend``, ``perception``, ``motion``
    attributes, as :class:`~captain_ros.api.RobotService` has them).

    Raises :class:`~captain_ros.core.errors.NotSupportedError` on a backend without snapshots
    (hardware)."""
    backend = service.backend
    guards = _method(backend, "guard_state")
    memory = _method(getattr(service, "perception", None), "memory_state")
    history = _method(getattr(service, "motion", None), "history_state")
    return RobotSideSnapshot(
        backend=backend.snapshot(),
        guards=guards() if guards else None,
        estopped=bool(backend.estopped),
        perception=memory() if memory else None,
        motion=history() if history else None,
        time_s=float(backend.time_s()),
    )


def restore_robot_side(service: Any, snap: RobotSideSnapshot) -> None:
    """Put ``service``'s robot side back to ``snap`` (bit-identical continuation afterwards).

    Raises :class:`RestoreRefused` while the e-stop is latched and the snapshot was taken
    without it (only an explicit reset clears a latch), or when ``service`` lacks a memory the
    snapshot holds; the backend's own refusals (another scene or model) pass through as
    :class:`RestoreRefused` with their message."""
    backend = service.backend
    if backend.estopped and not snap.estopped:
        raise RestoreRefused(
            "the e-stop is latched; reset it explicitly before restoring a "
            "decision point taken without it"
        )
    memory = _method(getattr(service, "perception", None), "restore_memory_state")
    history = _method(getattr(service, "motion", None), "restore_history_state")
    guards = _method(backend, "restore_guard_state")
    for what, have, need in (
        ("perception", memory, snap.perception),
        ("motion", history, snap.motion),
        ("safety layer", guards, snap.guards),
    ):
        if need is not None and have is None:
            raise RestoreRefused(
                f"the snapshot holds {what} memory but this robot has no {what} "
                "service that can take it"
            )
    try:
        backend.restore(snap.backend)
    except CaptainError as exc:
        raise RestoreRefused(f"the backend refused the snapshot: {exc}") from exc
    if guards is not None and snap.guards is not None:
        guards(snap.guards)
    if snap.estopped and not backend.estopped:
        backend.estop("restored a decision point taken with the e-stop latched")
    if memory is not None and snap.perception is not None:
        memory(snap.perception)
    if history is not None and snap.motion is not None:
        history(snap.motion)
