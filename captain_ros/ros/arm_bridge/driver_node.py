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
"""

from __future__ import annotations

import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from control_msgs.action import FollowJointTrajectory, GripperCommand
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image, JointState

from captain_ros.backends.cameras.frames import encode_depth
from captain_ros.ros import convert
from captain_ros.ros.params import Param, declare

WAIT_S = 0.004
PARAMS = (
    Param("task", "pick_place", "Task whose scene the simulated world holds."),
    Param("seed", 3, "Scene seed.", min_value=0),
    Param("image_size_px", 256, "Camera resolution [px].", 16, 1024),
    Param("joint_state_rate_hz", 100.0, "Rate of /joint_states [Hz].", 1.0, 1000.0),
    Param("camera_rate_hz", 5.0, "Rate of the camera topics [Hz]; 0: no cameras.", 0.0, 30.0),
    Param("calibration_dir", "", "Write the cameras' calibration files here at start ('': no)."),
    Param(
        "ground_truth_service",
        "/arm_driver/privileged_state",
        "Simulation-only ground-truth service ('': none).",
    ),
)


def controller_prefix(arm: str) -> str:
    return "" if arm == "arm" else f"{arm}_"


class ArmDriverNode(Node):
    """The simulated arm(s) behind ros2_control-style interfaces (see the module docstring)."""

    executor_threads = 6  # concurrent goals (a preempted one finishing), gripper, timers

    def __init__(self, driver: Any = None, **kwargs: Any) -> None:
        super().__init__("captain_arm_driver", **kwargs)
        self.p = declare(self, PARAMS)
        if driver is None:
            from captain_ros.backends.ros_arm.simulated import SimulatedArmDriver
            from captain_ros.tasks import get_task

            driver = SimulatedArmDriver(
                get_task(self.p["task"]).sample(int(self.p["seed"])),
                image_size_px=int(self.p["image_size_px"]),
            )
        self.driver = driver
        self._grip_token: dict[str, int] = {}
        self._order = threading.Lock()
        self._accepted: dict[str, int] = dict.fromkeys(driver.arms, 0)
        self._goal_seq: dict[int, int] = {}  # id(goal request) -> acceptance number
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
            ActionServer(
                self,
                GripperCommand,
                f"/{pre}gripper_controller/gripper_cmd",
                execute_callback=partial(self._grip, arm),
                cancel_callback=lambda _r: CancelResponse.ACCEPT,
                callback_group=group,
            )
        self.js_pub = self.create_publisher(JointState, "/joint_states", 10)
        self.create_timer(
            1.0 / self.p["joint_state_rate_hz"],
            self._publish_joints,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )
        cams = tuple(driver.sim.spec.cameras)
        self.cam_pubs = {
            c: (
                self.create_publisher(Image, f"/{c}/color/image_raw", 5),
                self.create_publisher(Image, f"/{c}/aligned_depth_to_color/image_raw", 5),
                self.create_publisher(CameraInfo, f"/{c}/color/camera_info", 5),
            )
            for c in cams
        }
        if self.p["camera_rate_hz"] > 0:
            self.create_timer(
                1.0 / self.p["camera_rate_hz"],
                self._publish_cameras,
                callback_group=MutuallyExclusiveCallbackGroup(),
            )
        if self.p["calibration_dir"]:
            self.write_calibration(Path(self.p["calibration_dir"]))
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
        why = self._invalid(arm, goal.trajectory)
        if why:
            self.get_logger().warning(f"{arm}: trajectory rejected: {why}")
            return GoalResponse.REJECT
        with self._order:  # runs before the client hears "accepted": numbers follow send order
            self._accepted[arm] += 1
            self._goal_seq[id(goal)] = self._accepted[arm]
        return GoalResponse.ACCEPT

    def _invalid(self, arm: str, traj: Any) -> str:
        joints = self.driver.joint_names(arm)
        if sorted(traj.joint_names) != sorted(joints):
            return f"joints {list(traj.joint_names)} are not {list(joints)}"
        if not traj.points:
            return "no points"
        lo, hi = self.driver.limits(arm)
        t_prev = 0.0
        for p in traj.points:
            q = np.asarray(p.positions, dtype=float)
            t = p.time_from_start.sec + p.time_from_start.nanosec * 1e-9
            if q.shape != (len(joints),) or not np.all(np.isfinite(q)):
                return "each point needs one finite position per joint"
            if np.any(q < lo - 1e-3) or np.any(q > hi + 1e-3):
                return f"positions {np.round(q, 3).tolist()} outside the joint limits"
            if t < t_prev:
                return "time_from_start must not decrease"
            t_prev = t
        return "" if t_prev > 0 else "the last point needs time_from_start > 0"

    def _execute(self, arm: str, handle: Any) -> Any:
        traj = handle.request.trajectory
        order = [list(traj.joint_names).index(j) for j in self.driver.joint_names(arm)]
        points = np.array([[p.positions[i] for i in order] for p in traj.points])
        times = [p.time_from_start.sec + p.time_from_start.nanosec * 1e-9 for p in traj.points]
        result = FollowJointTrajectory.Result()
        with self._order:
            seq = self._goal_seq.pop(id(handle.request), 0)
            superseded = seq < self._accepted[arm]
            token = -1 if superseded else self.driver.follow(arm, times, points)
        if superseded:  # a newer goal was accepted before this one started: it never runs
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

    # --- gripper --------------------------------------------------------------------------------
    def _grip(self, arm: str, handle: Any) -> Any:
        cmd = handle.request.command
        token = self._grip_token.get(arm, 0) + 1
        self._grip_token[arm] = token
        self.driver.command_gripper(arm, float(cmd.position), float(cmd.max_effort))
        result = GripperCommand.Result()
        t0, last, still_since = time.monotonic(), self.driver.opening_m(arm), time.monotonic()
        while True:
            time.sleep(WAIT_S * 5)
            now, opening = time.monotonic(), self.driver.opening_m(arm)
            if abs(opening - last) > 2e-4:
                still_since, last = now, opening
            result.position = opening
            result.reached_goal = abs(opening - cmd.position) < 1e-3
            result.stalled = not result.reached_goal and now - still_since > 0.2
            if handle.is_cancel_requested:
                handle.canceled()
                return result
            if self._grip_token[arm] != token:  # preempted by a newer command
                handle.abort()
                return result
            if result.reached_goal or result.stalled or now - t0 > 5.0:
                handle.succeed()
                return result

    # --- state and cameras ----------------------------------------------------------------------
    def _publish_joints(self) -> None:
        names, pos, vel, eff = self.driver.joint_states()
        msg = JointState(
            name=names, position=pos.tolist(), velocity=vel.tolist(), effort=eff.tolist()
        )
        msg.header.stamp = self.get_clock().now().to_msg()
        self.js_pub.publish(msg)

    def _publish_cameras(self) -> None:
        for cam, (color_pub, depth_pub, info_pub) in self.cam_pubs.items():
            frame = self.driver.render(cam)
            stamp = self.get_clock().now().to_msg()
            frame_id = convert.optical_frame(cam)
            color_pub.publish(convert.image_msg(frame.rgb, stamp, frame_id))
            depth = encode_depth(frame.depth_m, 0.001)
            msg = Image(
                height=depth.shape[0],
                width=depth.shape[1],
                encoding="16UC1",
                is_bigendian=0,
                step=depth.shape[1] * 2,
                data=depth.tobytes(),
            )
            msg.header.stamp, msg.header.frame_id = stamp, frame_id
            depth_pub.publish(msg)
            info_pub.publish(convert.camera_info_msg(frame, stamp))

    def write_calibration(self, folder: Path) -> None:
        """What a calibration procedure would give: head ``world_from_optical``, wrist cameras
        ``flange_from_optical`` relative to the arm's link6."""
        folder.mkdir(parents=True, exist_ok=True)
        for cam in self.cam_pubs:
            t = np.asarray(self.driver.render(cam).world_from_camera, dtype=float)
            arm = next((a for a, idx in self.driver.arms.items() if idx.wrist_camera == cam), None)
            if arm is None:
                data = {"world_from_optical": t.tolist()}
            else:
                flange = self.driver.body_matrix(f"{self.driver.arms[arm].prefix}link6")
                data = {"flange_from_optical": (np.linalg.inv(flange) @ t).tolist()}
            (folder / f"{cam}.yaml").write_text(yaml.safe_dump(data))

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
