"""Backend-agnostic guarded Cartesian motion: DLS IK, pre-execution checks, force-guarded sweeps."""

from captain_ros.motion.ik import IKResult, solve
from captain_ros.motion.limits import CONTACT_FORCE_N, DEFAULT_FORCE_LIMIT_N, EMERGENCY_FORCE_N
from captain_ros.motion.planner import PlanError
from captain_ros.motion.service import MotionService

__all__ = [
    "CONTACT_FORCE_N",
    "DEFAULT_FORCE_LIMIT_N",
    "EMERGENCY_FORCE_N",
    "IKResult",
    "MotionService",
    "PlanError",
    "solve",
]
