"""MuJoCo-backed arm driver node: the PiPER model exposed the way a ros2_control driver would.

Interfaces (exactly what the ROS arm bridge speaks, nothing more on hardware):
- ``/arm_controller/follow_joint_trajectory`` (``control_msgs/FollowJointTrajectory``): goals are
  validated like a driver does (joint names, finite positions within the joint limits, increasing
  times); a new goal preempts the active one (aborted, "preempted"), cancel holds the arm. Goals
  take effect in the order they were accepted: the executor may run two goals' execute callbacks
  out of order under load, and an older goal never preempts a newer one;
- ``/gripper_controller/gripper_cmd`` (``control_msgs/GripperCommand``): jaw gap [m] with a force
  limit [N]; succeeds when reached or stalled;
- ``/joint_states`` (arm and finger joints, effort = motor torque) at ``joint_state_rate_hz``;
- per camera ``/<camera>/color/image_raw`` (rgb8), ``/<camera>/aligned_depth_to_color/image_raw``
  (16UC1, mm) and ``/<camera>/color/camera_info``, one stamp per frame, at ``camera_rate_hz``
  (the topics of a RealSense ROS driver named ``<camera>``).
Simulation only: ``/arm_driver/privileged_state`` (the task predicate's ground truth) and, with
``calibration_dir``, the cameras' calibration files (``<camera>.yaml``: what hand-eye calibration
gives: ``world_from_optical`` for the head, ``flange_from_optical`` for a wrist camera).
Dual rig: ``/<arm>_arm_controller/...``, ``/<arm>_gripper_controller/...``.

Parts of their own (in this package): the goal checks (``trajectory_goal``) and order
(``goal_order``), the gripper action (``gripper_server``; its progress, ROS-free:
``gripper_watch``), the camera topics (``camera_topics``), the calibration files
(``calibration``), the parameters (``driver_params``).
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any

from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import JointState

from captain_ros.ros import convert
from captain_ros.ros.arm_bridge.calibration import write_calibration
from captain_ros.ros.arm_bridge.camera_topics import CameraTopics
from captain_ros.ros.arm_bridge.driver_params import PARAMS, controller_prefix, simulated_driver
from captain_ros.ros.arm_bridge.goal_order import GoalOrder
from captain_ros.ros.arm_bridge.gripper_server import GripperServer
from captain_ros.ros.arm_bridge.trajectory_goal import TrajectoryGoal
from captain_ros.ros.params import declare

WAIT_S = 0.004


class ArmDriverNode(Node):
    """The simulated arm(s) behind ros2_control-style interfaces (see the module docstring)."""

    executor_threads = 6  # concurrent goals (a preempted one finishing), gripper, timers

    def __init__(self, driver: Any = None, **kwargs: Any) -> None:
        super().__init__("captain_arm_driver", **kwargs)
        self.p = declare(self, PARAMS)
        self.driver = driver = simulated_driver(self.p) if driver is None else driver
        self._goal_order = GoalOrder(driver.arms)
        self.grippers: dict[str, GripperServer] = {}
        group = ReentrantCallbackGroup()
        for arm in driver.arms:
            pre = controller_prefix(arm)
            ActionServer(
                self,
                FollowJointTrajectory,
                f"/{pre}arm_controller/follow_joint_trajectory",
                execute_callback=partial(self._execute, arm),
                goal_callback=partial(self._check_goal, arm),
                cancel_callback=lambda _r: CancelResponse.ACCEPT,
                callback_group=group,
            )
            self.grippers[arm] = GripperServer(self, driver, arm, group)
        self.js_pub = self.create_publisher(JointState, "/joint_states", 10)
        self.create_timer(
            1.0 / self.p["joint_state_rate_hz"],
            self._publish_joints,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )
        cams = tuple(driver.sim.spec.cameras)
        self.cameras = [CameraTopics(self, c) for c in cams]
        if self.p["camera_rate_hz"] > 0:
            self.create_timer(
                1.0 / self.p["camera_rate_hz"],
                self._publish_cameras,
                callback_group=MutuallyExclusiveCallbackGroup(),
            )
        if self.p["calibration_dir"]:
            write_calibration(driver, Path(self.p["calibration_dir"]))
        if self.p["ground_truth_service"]:
            from captain_ros_interfaces.srv import PrivilegedState

            self.create_service(
                PrivilegedState, self.p["ground_truth_service"], self._truth, callback_group=group
            )
        self.get_logger().info(
            f"simulated arm driver: {self.p['task']} seed {self.p['seed']}, "
            f"arms {list(driver.arms)}, cameras {list(cams)}"
        )

    # --- trajectories ---------------------------------------------------------------------------
    def _check_goal(self, arm: str, goal: Any) -> GoalResponse:
        lower, upper = self.driver.limits(arm)
        why = TrajectoryGoal.from_msg(goal.trajectory).problem(
            self.driver.joint_names(arm), lower, upper
        )
        if why:
            self.get_logger().warning(f"{arm}: trajectory rejected: {why}")
            return GoalResponse.REJECT
        # runs before the client hears "accepted": the numbers follow the send order
        self._goal_order.accept(arm, id(goal))
        return GoalResponse.ACCEPT

    def _execute(self, arm: str, handle: Any) -> Any:
        goal = TrajectoryGoal.from_msg(handle.request.trajectory)
        points = goal.ordered(self.driver.joint_names(arm))
        result = FollowJointTrajectory.Result()
        token = self._goal_order.start(
            arm, id(handle.request), partial(self.driver.follow, arm, list(goal.times_s), points)
        )
        if token is None:  # a newer goal was accepted before this one started: it never runs
            result.error_code = FollowJointTrajectory.Result.INVALID_GOAL
            result.error_string = "preempted by a newer goal"
            handle.abort()
            return result
        while True:
            status = self.driver.status(token)
            if handle.is_cancel_requested:
                self.driver.cancel(arm, token)
                handle.canceled()
                return result
            if status == "succeeded":
                handle.succeed()
                return result
            if status != "active":
                result.error_code = FollowJointTrajectory.Result.INVALID_GOAL
                result.error_string = (
                    f"{status} by a newer goal" if status == "preempted" else f"trajectory {status}"
                )
                handle.abort()
                return result
            time.sleep(WAIT_S)

    # --- state and cameras ----------------------------------------------------------------------
    def _publish_joints(self) -> None:
        names, pos, vel, eff = self.driver.joint_states()
        msg = JointState(
            name=names, position=pos.tolist(), velocity=vel.tolist(), effort=eff.tolist()
        )
        msg.header.stamp = self.get_clock().now().to_msg()
        self.js_pub.publish(msg)

    def _publish_cameras(self) -> None:
        for cam in self.cameras:
            frame = self.driver.render(cam.camera)
            cam.publish(frame, self.get_clock().now().to_msg())

    def _truth(self, _req: Any, resp: Any) -> Any:
        try:
            resp.state_json = convert.dumps(self.driver.privileged_state().to_dict())
            resp.success, resp.message = True, ""
        except Exception as exc:  # noqa: BLE001 - answered, never raised
            resp.success, resp.message = False, str(exc)
        return resp

    def destroy_node(self) -> None:
        self.driver.close()
        super().destroy_node()


def main(argv: list[str] | None = None) -> int:
    from captain_ros.ros.runner import run_nodes

    return run_nodes(argv, lambda: [ArmDriverNode()])


if __name__ == "__main__":
    raise SystemExit(main())
