"""The simulated arm driver's message side (captain_ros.ros.arm_bridge): a real
``JointTrajectory`` read as the driver checks it, the RealSense-style depth image the bridge
decodes back to millimetres, and the controllers' names."""

from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Time
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from captain_ros.ros.arm_bridge.camera_topics import DEPTH_SCALE_M, depth_msg
from captain_ros.ros.arm_bridge.driver_params import controller_prefix
from captain_ros.ros.arm_bridge.trajectory_goal import TrajectoryGoal
from captain_ros.ros.arm_bridge.transport import decode_image, duration_msg


def test_a_joint_trajectory_message_is_read_as_sent() -> None:
    traj = JointTrajectory(joint_names=["joint2", "joint1"])
    traj.points = [
        JointTrajectoryPoint(positions=[0.5, -0.25], time_from_start=duration_msg(0.25)),
        JointTrajectoryPoint(positions=[0.75, -0.5], time_from_start=duration_msg(1.5)),
    ]
    goal = TrajectoryGoal.from_msg(traj)
    assert goal.joint_names == ("joint2", "joint1") and goal.times_s == (0.25, 1.5)
    assert goal.positions == ((0.5, -0.25), (0.75, -0.5))
    lower, upper = np.array([-1.0, 0.0]), np.array([0.0, 1.0])
    assert goal.problem(("joint1", "joint2"), lower, upper) == ""
    assert goal.ordered(("joint1", "joint2")).tolist() == [[-0.25, 0.5], [-0.5, 0.75]]


def test_depth_is_published_in_millimetres_and_decodes_back() -> None:
    depth_m = np.array([[0.5, 1.2345, np.nan], [0.0, 70.0, 0.0014]])
    stamp = Time(sec=12, nanosec=34)
    msg = depth_msg(depth_m, stamp, "wrist_optical_frame")
    assert (msg.encoding, msg.height, msg.width, msg.step) == ("16UC1", 2, 3, 6)
    assert msg.header.stamp == stamp and msg.header.frame_id == "wrist_optical_frame"
    # no depth (NaN) is 0, beyond the 16-bit range saturates (65.535 m), rounding to the unit
    assert decode_image(msg).tolist() == [[500, 1234, 0], [0, 65535, 1]]
    assert DEPTH_SCALE_M == 0.001


def test_the_controller_names_of_the_single_and_the_dual_rig() -> None:
    assert controller_prefix("arm") == "" and controller_prefix("left") == "left_"
