"""The rclpy side of the ROS arm bridge: :class:`RclpyArmTransport` implements
:class:`~captain_ros.backends.ros_arm.transport.ArmTransport`.

One node (``captain_arm_bridge``) in its own context (the driver's ``ROS_DOMAIN_ID``, or the
config's ``domain_id``) spun by its own executor thread, so the backend works the same inside the
robot node, ``captain run`` or a test. The executor is single-threaded: no callback here blocks
(the backend waits in its own thread), and rclpy's ``MultiThreadedExecutor`` busy-spins a core
while a 100 Hz subscription is ready (ros2/rclpy#1223, #1452): measured here it took 100 % of a
core and starved an in-process driver's ``/joint_states`` to 8 Hz, latching the stale-feedback
guard mid-move. Subscriptions use the sensor-data QoS (best effort, which
matches reliable and best-effort publishers); one ``FollowJointTrajectory`` client per arm, a
``GripperCommand`` client (or a ``std_msgs/Float64`` publisher) per gripper; colour, depth and
CameraInfo per camera, paired by header stamp.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import rclpy
from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory, GripperCommand
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Float64
from trajectory_msgs.msg import JointTrajectoryPoint

from captain_ros.backends.ros_arm.config import RosArmConfig
from captain_ros.backends.ros_arm.transport import GoalState, ImageSample, JointSample
from captain_ros.core.errors import HardwareError
from captain_ros.ros.action_client import ActionClient

_STATUS = {
    GoalStatus.STATUS_SUCCEEDED: "succeeded",
    GoalStatus.STATUS_CANCELED: "canceled",
    GoalStatus.STATUS_ABORTED: "aborted",
}


def duration_msg(t_s: float) -> Duration:
    sec = int(t_s)
    return Duration(sec=sec, nanosec=int(round((t_s - sec) * 1e9)))


def decode_image(msg: Any) -> np.ndarray:
    """``rgb8``/``bgr8`` -> (H, W, 3) uint8 RGB; ``16UC1`` -> uint16; ``32FC1`` -> float32."""
    buf, h, w = bytes(msg.data), int(msg.height), int(msg.width)
    if msg.encoding in ("rgb8", "bgr8"):
        img = np.frombuffer(buf, np.uint8).reshape(h, int(msg.step))[:, : w * 3].reshape(h, w, 3)
        return np.ascontiguousarray(img[..., ::-1] if msg.encoding == "bgr8" else img)
    if msg.encoding == "16UC1":
        return np.frombuffer(buf, np.uint16).reshape(h, int(msg.step) // 2)[:, :w].copy()
    if msg.encoding == "32FC1":
        return np.frombuffer(buf, np.float32).reshape(h, int(msg.step) // 4)[:, :w].copy()
    raise ValueError(
        f"unsupported image encoding {msg.encoding!r}; supported: rgb8, bgr8, 16UC1, 32FC1"
    )


class _Camera:
    """Colour/depth by stamp + the newest K; a pair with equal stamps is a frame."""

    def __init__(self) -> None:
        self.color: dict[float, np.ndarray] = {}
        self.depth: dict[float, tuple[np.ndarray, str]] = {}
        self.k: np.ndarray | None = None
        self.frame: ImageSample | None = None


class RclpyArmTransport:
    """The bridge's ROS interfaces (see the module docstring)."""

    def __init__(self, config: RosArmConfig, node_name: str = "captain_arm_bridge") -> None:
        self.config = config
        self.context = rclpy.Context()
        if config.domain_id < 0:
            rclpy.init(context=self.context)
        else:
            rclpy.init(context=self.context, domain_id=int(config.domain_id))
        self.node = Node(node_name, context=self.context)
        group = ReentrantCallbackGroup()
        self._cv = threading.Condition()
        self._js: JointSample | None = None
        self._pos: dict[str, float] = {}
        self._vel: dict[str, float] = {}
        self._eff: dict[str, float] = {}
        self.node.create_subscription(
            JointState,
            config.joint_states_topic,
            self._on_joints,
            qos_profile_sensor_data,
            callback_group=group,
        )
        self._traj: dict[str, Any] = {
            a: ActionClient(
                self.node, FollowJointTrajectory, c.trajectory_action, callback_group=group
            )
            for a, c in config.arms.items()
        }
        self._goal: dict[str, Any] = dict.fromkeys(config.arms)
        self._goal_lock = threading.Lock()
        self._seq: dict[str, int] = dict.fromkeys(config.arms, 0)  # number of the latest goal
        self._state: dict[str, GoalState] = {a: GoalState("none") for a in config.arms}
        self._grip_action: dict[str, Any] = {
            a: ActionClient(self.node, GripperCommand, c.gripper.action, callback_group=group)
            for a, c in config.arms.items()
            if c.gripper.action
        }
        self._grip_topic = {
            a: self.node.create_publisher(Float64, c.gripper.topic, 10)
            for a, c in config.arms.items()
            if c.gripper.topic
        }
        self._cams = {n: _Camera() for n in config.cameras}
        for name, c in config.cameras.items():
            for topic, kind, cls in (
                (c.image_topic, "color", Image),
                (c.depth_topic, "depth", Image),
                (c.info_topic, "info", CameraInfo),
            ):
                self.node.create_subscription(
                    cls,
                    topic,
                    lambda m, n=name, k=kind: self._on_camera(n, k, m),
                    qos_profile_sensor_data,
                    callback_group=group,
                )
        self._truth: Any = None
        if config.ground_truth_service:
            from captain_ros_interfaces.srv import PrivilegedState

            self._truth = self.node.create_client(
                PrivilegedState, config.ground_truth_service, callback_group=group
            )
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self._spin, name="arm-bridge", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        with contextlib.suppress(ExternalShutdownException, rclpy.executors.ShutdownException):
            self.executor.spin()

    # --- joint states ---------------------------------------------------------------------------
    def _on_joints(self, msg: JointState) -> None:
        n = len(msg.name)
        with self._cv:
            for field, store in (
                ("position", self._pos),
                ("velocity", self._vel),
                ("effort", self._eff),
            ):
                values = getattr(msg, field)
                if len(values) == n:
                    store.update(zip(msg.name, (float(v) for v in values), strict=True))
            self._js = JointSample(
                dict(self._pos), dict(self._vel), dict(self._eff), time.monotonic()
            )
            self._cv.notify_all()

    def joint_sample(self) -> JointSample | None:
        return self._js

    def wait_joint_sample(self, after_s: float, timeout_s: float) -> JointSample | None:
        with self._cv:
            self._cv.wait_for(
                lambda: self._js is not None and self._js.received_s > after_s, timeout_s
            )
            s = self._js
        return s if s is not None and s.received_s > after_s else None

    # --- trajectories ---------------------------------------------------------------------------
    def server_ready(self, arm: str, timeout_s: float = 0.0) -> bool:
        client = self._traj[arm]
        return client.server_is_ready() or (timeout_s > 0 and client.wait_for_server(timeout_s))

    def send_trajectory(
        self,
        arm: str,
        joints: Sequence[str],
        points: Sequence[tuple[np.ndarray, float]],
        timeout_s: float,
    ) -> GoalState:
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = list(joints)
        goal.trajectory.points = [
            JointTrajectoryPoint(positions=[float(v) for v in q], time_from_start=duration_msg(t))
            for q, t in points
        ]
        answered = threading.Event()
        with self._goal_lock:  # numbered before sending: the goal it preempts reports too late
            self._seq[arm] += 1
            seq = self._seq[arm]
        future = self._traj[arm].send_goal_async(goal)
        future.add_done_callback(lambda _f: answered.set())
        if not answered.wait(timeout_s):
            return GoalState(
                "pending",
                f"no answer from {self.config.arms[arm].trajectory_action}"
                f" within {timeout_s:.2f} s",
            )
        handle = future.result()
        with self._goal_lock:
            if handle is None or not handle.accepted:
                self._goal[arm] = None
                self._state[arm] = GoalState(
                    "rejected",
                    "the driver rejected the goal (see its log: joint names, limits or timing)",
                )
                return self._state[arm]
            self._goal[arm] = handle
            self._state[arm] = GoalState("accepted")
        handle.get_result_async().add_done_callback(lambda f: self._on_result(arm, seq, f))
        return GoalState("accepted")

    def _on_result(self, arm: str, seq: int, future: Any) -> None:
        res = future.result()
        status = _STATUS.get(res.status, "aborted") if res is not None else "aborted"
        error = res.result.error_string if res is not None else "no result"
        with self._goal_lock:
            if self._seq[arm] != seq:
                return  # an older goal (preempted by ours): its end says nothing about ours
            self._state[arm] = GoalState(status, error if status == "aborted" else "")

    def goal_state(self, arm: str) -> GoalState:
        return self._state[arm]

    def cancel(self, arm: str) -> None:
        handle = self._goal[arm]
        if handle is not None and self._state[arm].status == "accepted":
            handle.cancel_goal_async()

    def send_gripper(self, arm: str, opening_m: float, max_effort_n: float) -> None:
        if arm in self._grip_topic:
            self._grip_topic[arm].publish(Float64(data=float(opening_m)))
            return
        client = self._grip_action[arm]
        if not client.server_is_ready():
            raise HardwareError(
                f"{arm}: gripper action {self.config.arms[arm].gripper.action} "
                "is not available; nothing was commanded"
            )
        goal = GripperCommand.Goal()
        goal.command.position, goal.command.max_effort = float(opening_m), float(max_effort_n)
        client.send_goal_async(goal)

    # --- cameras --------------------------------------------------------------------------------
    def _on_camera(self, name: str, kind: str, msg: Any) -> None:
        cam = self._cams[name]
        try:
            if kind == "info":
                cam.k = np.asarray(msg.k, dtype=float).reshape(3, 3)
                return
            data = decode_image(msg)
        except ValueError as exc:
            self.node.get_logger().warning(f"camera {name}: {exc}", throttle_duration_sec=5.0)
            return
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        with self._cv:
            if kind == "color":
                cam.color[stamp] = data
            else:
                cam.depth[stamp] = (data, str(msg.encoding))
            for store in (cam.color, cam.depth):
                while len(store) > 4:
                    store.pop(next(iter(store)))
            if stamp in cam.color and stamp in cam.depth and cam.k is not None:
                depth, enc = cam.depth.pop(stamp)
                cam.frame = ImageSample(
                    cam.color.pop(stamp), depth, enc, cam.k, stamp, time.monotonic()
                )
                self._cv.notify_all()

    def image(self, camera: str) -> ImageSample | None:
        return self._cams[camera].frame

    def wait_image(self, camera: str, after_s: float, timeout_s: float) -> ImageSample | None:
        cam = self._cams[camera]
        with self._cv:
            self._cv.wait_for(
                lambda: cam.frame is not None and cam.frame.received_s > after_s, timeout_s
            )
            f = cam.frame
        return f if f is not None and f.received_s > after_s else None

    # --- simulation ground truth / lifecycle ----------------------------------------------------
    def ground_truth(self) -> Any:
        from captain_ros_interfaces.srv import PrivilegedState

        if self._truth is None or not self._truth.wait_for_service(timeout_sec=2.0):
            raise HardwareError(
                f"ground-truth service {self.config.ground_truth_service} is not "
                "available (simulation drivers only)"
            )
        done = threading.Event()
        future = self._truth.call_async(PrivilegedState.Request())
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(10.0) or future.result() is None:
            raise HardwareError("ground-truth service did not answer")
        resp: Any = future.result()
        if not resp.success:
            raise HardwareError(f"ground truth: {resp.message}")
        return json.loads(resp.state_json)

    def close(self) -> None:
        try:
            self.executor.shutdown(timeout_sec=2.0)
            self._thread.join(timeout=2.0)
            self.node.destroy_node()
        finally:
            self.context.try_shutdown()


__all__ = ["RclpyArmTransport", "decode_image", "duration_msg"]
