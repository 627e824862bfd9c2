"""Planning kinematics of one robosuite arm over a private ``MjData`` (never the live state).

The tool point is robosuite's own grip site (``gripper0_right_grip_site``, between the finger
pads); the tool frame is that site's frame turned 90 deg about its z axis so that, as on the PiPER
rig, z = approach and y = jaw closing axis (the site's x): a tool pointing straight down is the
quaternion (0, 1, 0, 0) up to a yaw. Everything else (the Jacobian over the arm's joints, the
collision and clearance queries, the cache of the last evaluation) is the MuJoCo backend's
:class:`~captain_ros.backends.mujoco.kinematics.MujocoKinematics`; task objects (free bodies, the
door) are the force guard's business.
"""

from __future__ import annotations

import numpy as np

from captain_ros.backends.mujoco.kinematics import MujocoKinematics
from captain_ros.core.geometry import Pose, matrix_to_quat

SITE_TO_TOOL = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
"""Rotation of the tool frame in the grip-site frame (+90 deg about z: tool x = site y,
tool y = -site x = the closing axis)."""


def tool_pose(site_xpos: np.ndarray, site_xmat: np.ndarray) -> Pose:
    """World pose of the tool frame from the grip site's position and (9,) rotation matrix."""
    r = site_xmat.reshape(3, 3) @ SITE_TO_TOOL
    return Pose.trusted(np.array(site_xpos, dtype=float), matrix_to_quat(r))


class RobosuiteKinematics(MujocoKinematics):
    """:class:`~captain_ros.backends.base.Kinematics` of one arm of a robosuite model: the tool
    frame is :data:`SITE_TO_TOOL` from the grip site, the world origin is ``origin_m`` (robosuite's
    position of the table top, set by the backend)."""

    site_to_tool = SITE_TO_TOOL

    def _pose(self, site_xpos: np.ndarray, site_xmat: np.ndarray) -> Pose:
        return tool_pose(site_xpos - self.origin_m, site_xmat)


__all__ = ["SITE_TO_TOOL", "RobosuiteKinematics", "tool_pose"]
