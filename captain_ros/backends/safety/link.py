"""What the safety layer reads from a hardware backend (optional; simulators have no link)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class LinkStatus:
    """Health of one arm's link to its controller.

    Attributes:
        connected: The bus/driver is up and frames arrive.
        enabled: Every motor of the arm reports enabled.
        feedback_age_s: Age of the newest joint feedback [s] (``inf`` when none ever arrived).
        hardware_estop: The controller's own stop/fault, e.g. ``"EMERGENCY_STOP"`` or
            ``"COLLISION_OCCURRED"``; ``""`` when none.
        twin_error_m: Distance between the kinematic twin's flange at the measured joints and the
            controller's reported flange pose [m] (``0`` when the controller reports no pose).
        joint_disagreement_rad: Largest difference between two joint measurements (joint
            feedback vs motor encoders) [rad].
        faults: Human-readable device faults (over-current, disabled motor, ...).
        disabled_motors: Joints (1-based) whose motor reports disabled (a motor that dropped out).
    """

    connected: bool
    enabled: bool
    feedback_age_s: float
    hardware_estop: str = ""
    twin_error_m: float = 0.0
    joint_disagreement_rad: float = 0.0
    faults: tuple[str, ...] = ()
    disabled_motors: tuple[int, ...] = ()


@runtime_checkable
class HardwareLink(Protocol):
    """Implemented by hardware backends (PiPER over CAN, the ROS arm bridge)."""

    def link_status(self, arm: str) -> LinkStatus:
        """Current link health of ``arm`` (non-blocking)."""

    def enable(self, arm: str) -> None:
        """Enable the motors of ``arm`` (blocks until enabled or raises HardwareError)."""

    def disable(self, arm: str) -> None:
        """Disable the motors of ``arm``."""

    def hold(self) -> None:
        """Command every arm to hold its measured position now (non-blocking)."""
