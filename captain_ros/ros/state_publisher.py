"""The robot node's state topics: joint states, TF, wrench estimates, camera streams and, on
hardware, the link health of each arm.

Frames (REP 103/105): ``world`` (fixed, z up) -> ``<arm>_base_link`` (static, ``/tf_static``),
``world`` -> ``<arm>_tcp`` (tool centre point) and ``world`` -> ``<camera>_optical_frame``
(x right, y down, z forward) on ``/tf``. Units: rad, m, N. Gripper openings are appended to
``/joint_states`` as ``<arm>_jaw_opening_m`` [m]; a simulation standing still between robot calls
(its clock not advancing) reports zero joint velocities. The wrench topic carries the magnitude of the
external contact force [N] along the tool z axis (the backends estimate a magnitude only).
``/captain/robot/link`` (``std_msgs/String``, JSON, hardware backends only, at the joint-state
rate) carries each arm's :class:`~captain_ros.backends.safety.link.LinkStatus`: connected,
enabled, ``feedback_age_s`` (what the stale-feedback guard compares with its limit),
``disabled_motors`` (1-based joints), the controller's stop and faults. It is for operators and
measurements, not recorded in episode bags (a hardware bag keeps the simulation's topic set).
``/captain/joint_commands`` (:data:`~captain_ros.bags.messages.COMMAND_TOPIC`) carries what the
node commanded, one message per control tick and per jaw command (sent with the next state
sample, each stamped when its command was given): every arm's applied joint targets, then each
``<arm>_jaw_opening_m`` target.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from captain_ros.bags.messages import COMMAND_TOPIC
from captain_ros.core.geometry import Pose
from captain_ros.core.result import compact_json
from captain_ros.core.types import JointState as CoreJointState
from captain_ros.ros import convert
from captain_ros.ros.estop import LATCHED_QOS
from captain_ros.ros.publish_log import create_publisher

IMAGE_DEPTH = 30
LINK_TOPIC = "/captain/robot/link"


class CameraPublisher:
    """``/camera/<c>/image_raw`` (rgb8), ``.../depth/image_raw`` (32FC1 [m]), ``.../camera_info``
    and the optical frame on ``/tf``, for frames captured elsewhere (observations) or here."""

    def __init__(self, node: Node, cameras: tuple[str, ...]) -> None:
        self.node = node
        self.cameras = cameras
        self.tf_pub = create_publisher(node, TFMessage, "/tf", 100)
        # images: reliable, deep enough that a subscriber's flush stall drops nothing
        self.image_pubs = {
            c: (
                create_publisher(node, Image, f"/camera/{c}/image_raw", IMAGE_DEPTH),
                create_publisher(node, Image, f"/camera/{c}/depth/image_raw", IMAGE_DEPTH),
                create_publisher(node, CameraInfo, f"/camera/{c}/camera_info", IMAGE_DEPTH),
            )
            for c in cameras
        }

    def publish_frames(self, frames: dict[str, Any], depth: bool = True) -> None:
        stamp = self.node.get_clock().now().to_msg()
        tfs = []
        for name, fr in frames.items():
            if name not in self.image_pubs:
                continue
            rgb_pub, depth_pub, info_pub = self.image_pubs[name]
            frame_id = convert.optical_frame(name)
            rgb_pub.publish(convert.image_msg(fr.rgb, stamp, frame_id))
            if depth:
                depth_pub.publish(convert.image_msg(fr.depth_m, stamp, frame_id))
            info_pub.publish(convert.camera_info_msg(fr, stamp))
            tfs.append(
                convert.transform_msg(
                    "world", frame_id, Pose.from_matrix(fr.world_from_camera), stamp
                )
            )
        self.tf_pub.publish(TFMessage(transforms=tfs))


class StatePublisher:
    """Publishers for one rig with ``arms`` and ``cameras`` on ``node``."""

    def __init__(self, node: Node, arms: tuple[str, ...], cameras: tuple[str, ...]) -> None:
        self.node = node
        self.joint_pub = create_publisher(node, JointState, "/joint_states", 100)
        self.tf_pub = create_publisher(node, TFMessage, "/tf", 100)
        self.tf_static_pub = create_publisher(node, TFMessage, "/tf_static", LATCHED_QOS)
        self.wrench_pubs = {
            a: create_publisher(node, WrenchStamped, f"/captain/wrench/{a}", 100) for a in arms
        }
        self.camera_pub = CameraPublisher(node, cameras)
        self.cameras = cameras
        self.link_pub = node.create_publisher(String, LINK_TOPIC, 10)  # not a recorded topic
        # every command of a control tick is one message and a state tick publishes them in a
        # burst (tens at a time): a deep history, so a recorder that lags under load loses none
        self.command_pub = create_publisher(node, JointState, COMMAND_TOPIC, 2000)
        self._clock_s: dict[str, float] = {}  # arm -> backend clock of its last joint sample

    def _stamp(self) -> Any:
        return self.node.get_clock().now().to_msg()

    def publish_static(self, spec: Any) -> None:
        stamp = self._stamp()
        self.tf_static_pub.publish(
            TFMessage(
                transforms=[
                    convert.transform_msg("world", f"{a.name}_base_link", a.base_pose, stamp)
                    for a in spec.arms
                ]
            )
        )

    def publish_state(self, backend: Any) -> None:
        """One consistent sample (taken between two control ticks under the backend lock)."""
        stamp = self._stamp()
        with backend.lock:
            arms = backend.spec.arm_names
            joints = [self.at_rest_if_paused(a, backend.joint_state(a)) for a in arms]
            jaws = {f"{a}_jaw_opening_m": backend.gripper(a).opening_m for a in arms}
            tcps = [
                convert.transform_msg("world", f"{a}_tcp", backend.ee_pose(a), stamp) for a in arms
            ]
            forces = {a: backend.contact_force_n(a) for a in arms}
            links = (
                {a: backend.link_status(a) for a in arms} if hasattr(backend, "link_status") else {}
            )
        if any(st is not None for st in links.values()):
            self.link_pub.publish(
                String(
                    data=compact_json({"stamp_s": stamp.sec + stamp.nanosec * 1e-9, "arms": links})
                )
            )
        self.joint_pub.publish(convert.joint_states_msg(joints, stamp, jaws))
        if hasattr(backend, "drain_commands"):
            self.publish_commands(backend)
        self.tf_pub.publish(TFMessage(transforms=tcps))
        for a, f in forces.items():
            w = WrenchStamped()
            w.header.stamp, w.header.frame_id = stamp, f"{a}_tcp"
            w.wrench.force.z = float(f)
            self.wrench_pubs[a].publish(w)

    def publish_commands(self, backend: Any) -> None:
        """One message per command queued since the last call (``backend.drain_commands``, a
        :class:`~captain_ros.ros.locked_backend.LockedBackend`), each with its own stamp."""
        for cmd in backend.drain_commands():
            msg = JointState()
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(cmd.stamp_ns, 1_000_000_000)
            msg.name, msg.position = list(cmd.names), list(cmd.positions)
            self.command_pub.publish(msg)

    def at_rest_if_paused(self, arm: str, state: CoreJointState) -> CoreJointState:
        """``state`` with zero velocities when the backend's clock has not advanced since the
        arm's previous sample: a simulation stands still between robot calls, and the velocity it
        holds is that of its last control tick (it read +-0.17 rad/s on /joint_states while the
        joints were still). A real rig's clock always advances: its velocities pass unchanged."""
        last = self._clock_s.get(arm)
        self._clock_s[arm] = state.stamp_s
        if last is None or state.stamp_s != last:
            return state
        return replace(state, velocity_rad_s=np.zeros_like(state.velocity_rad_s))

    def publish_cameras(self, backend: Any, depth: bool = True) -> None:
        """Capture every camera now (live preview) and publish the frames."""
        try:
            frames = backend.capture(list(self.cameras))
        except Exception as exc:  # noqa: BLE001 - a render failure must not kill the node
            self.node.get_logger().warning(
                f"camera capture failed: {exc}", throttle_duration_sec=10.0
            )
            return
        self.camera_pub.publish_frames(frames, depth)
