"""Backend-agnostic guarded Cartesian motion: DLS IK, pre-execution checks, force-guarded sweeps."""

from captain_ros.motion.ik import IKResult, solve
from captain_ros.motion.planner import PlanError
from captain_ros.motion.service import (
    CONTACT_FORCE_N,
    DEFAULT_FORCE_LIMIT_N,
    EMERGENCY_FORCE_N,
    MotionService,
)

__all__ = ["CONTACT_FORCE_N", "DEFAULT_FORCE_LIMIT_N", "EMERGENCY_FORCE_N", "IKResult", "MotionService",
           "PlanError", "solve"]
