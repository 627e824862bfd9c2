"""The graph's messages built as ``rosbags`` objects (no rclpy): what the in-process bag writes.

Field for field the same messages the ROS nodes publish (:mod:`captain_ros.ros.convert`,
:mod:`captain_ros.ros.state_publisher`): ``/joint_states`` with the jaw openings appended as
``<arm>_jaw_opening_m``, ``/tf`` tool and optical frames, ``/captain/wrench/<arm>`` (contact force
magnitude along tool z), camera ``rgb8`` / ``32FC1`` images with ``plumb_bob`` CameraInfo, and the
project's Receipt / EpisodeEvent / ObservationHandle. A bag written in-process therefore reads
exactly like the recorder's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from rosbags.typesys.store import Typestore

from captain_ros.core.geometry import Pose
from captain_ros.core.result import Result, compact_json, stamp_parts
from captain_ros.core.types import CameraFrame, JointState

TRAJECTORY_TOPIC = "/captain/trajectory"
"""The episode's ``trajectory.jsonl`` lines (``std_msgs/String`` JSON), published by the policy
node and the in-process bag: what ``captain learn dataset`` reads from a bag."""

COMMAND_TOPIC = "/captain/joint_commands"
"""What the robot node commands (``sensor_msgs/JointState``, positions only): at each control tick
and each jaw command, every arm's joint targets [rad] then each ``<arm>_jaw_opening_m`` target [m],
stamped when the command was given. The LeRobot export's ``action`` where a bag has it."""


class Messages:
    """Message builders over one typestore (from :func:`captain_ros.bags.make_typestore`)."""

    def __init__(self, store: Typestore) -> None:
        self.store = store
        self.t = store.types

    def time(self, stamp_s: float) -> Any:
        sec, nanosec = stamp_parts(stamp_s)
        return self.t["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec)

    def header(self, stamp_s: float, frame_id: str = "") -> Any:
        return self.t["std_msgs/msg/Header"](stamp=self.time(stamp_s), frame_id=frame_id)

    def string(self, data: str) -> Any:
        return self.t["std_msgs/msg/String"](data=data)

    def joint_states(
        self, states: Iterable[JointState], stamp_s: float, extra: Mapping[str, float] | None = None
    ) -> Any:
        names: list[str] = []
        pos: list[float] = []
        vel: list[float] = []
        eff: list[float] = []
        for s in states:
            names += list(s.names)
            pos += [float(v) for v in s.position_rad]
            vel += [float(v) for v in s.velocity_rad_s]
            eff += [float(v) for v in s.effort_nm]
        for name, value in (extra or {}).items():
            names.append(name)
            pos.append(float(value))
            vel.append(0.0)
            eff.append(0.0)
        return self.t["sensor_msgs/msg/JointState"](
            header=self.header(stamp_s),
            name=names,
            position=np.array(pos, dtype=np.float64),
            velocity=np.array(vel, dtype=np.float64),
            effort=np.array(eff, dtype=np.float64),
        )

    def transform(self, parent: str, child: str, pose: Pose, stamp_s: float) -> Any:
        p, q = pose.position_m, pose.quat_wxyz
        tt = self.t
        return tt["geometry_msgs/msg/TransformStamped"](
            header=self.header(stamp_s, parent),
            child_frame_id=child,
            transform=tt["geometry_msgs/msg/Transform"](
                translation=tt["geometry_msgs/msg/Vector3"](
                    x=float(p[0]), y=float(p[1]), z=float(p[2])
                ),
                rotation=tt["geometry_msgs/msg/Quaternion"](
                    x=float(q[1]), y=float(q[2]), z=float(q[3]), w=float(q[0])
                ),
            ),
        )

    def tf(self, transforms: list[Any]) -> Any:
        return self.t["tf2_msgs/msg/TFMessage"](transforms=transforms)

    def wrench(self, arm: str, force_n: float, stamp_s: float) -> Any:
        tt = self.t
        v = tt["geometry_msgs/msg/Vector3"]
        return tt["geometry_msgs/msg/WrenchStamped"](
            header=self.header(stamp_s, f"{arm}_tcp"),
            wrench=tt["geometry_msgs/msg/Wrench"](
                force=v(x=0.0, y=0.0, z=float(force_n)), torque=v(x=0.0, y=0.0, z=0.0)
            ),
        )

    def image(self, array: np.ndarray, stamp_s: float, frame_id: str) -> Any:
        if array.ndim == 3:
            data = np.ascontiguousarray(array, dtype=np.uint8)
            encoding, step = "rgb8", int(array.shape[1]) * 3
        else:
            data = np.ascontiguousarray(array, dtype=np.float32)
            encoding, step = "32FC1", int(array.shape[1]) * 4
        return self.t["sensor_msgs/msg/Image"](
            header=self.header(stamp_s, frame_id),
            height=int(array.shape[0]),
            width=int(array.shape[1]),
            encoding=encoding,
            is_bigendian=0,
            step=step,
            data=np.frombuffer(data.tobytes(), dtype=np.uint8),
        )

    def camera_info(self, frame: CameraFrame, stamp_s: float) -> Any:
        k = np.asarray(frame.intrinsics, dtype=float)
        tt = self.t
        return tt["sensor_msgs/msg/CameraInfo"](
            header=self.header(stamp_s, optical_frame(frame.camera)),
            height=frame.height,
            width=frame.width,
            distortion_model="plumb_bob",
            d=np.zeros(5),
            k=k.reshape(-1).astype(np.float64),
            r=np.eye(3).reshape(-1),
            p=np.array(
                [k[0, 0], k[0, 1], k[0, 2], 0.0, k[1, 0], k[1, 1], k[1, 2], 0.0, 0.0, 0.0, 1.0, 0.0]
            ),
            binning_x=0,
            binning_y=0,
            roi=tt["sensor_msgs/msg/RegionOfInterest"](
                x_offset=0, y_offset=0, height=0, width=0, do_rectify=False
            ),
        )

    def receipt(
        self,
        result: Result,
        capability: str,
        *,
        episode_id: str,
        request_index: int,
        call_index: int,
        stamp_s: float,
        duration_s: float,
    ) -> Any:
        return self.t["captain_ros_interfaces/msg/Receipt"](
            stamp=self.time(stamp_s),
            episode_id=episode_id,
            request_index=int(request_index),
            call_index=int(call_index),
            capability=capability,
            success=bool(result.success),
            executed=bool(result.executed),
            failure_category=result.failure_category.value if result.failure_category else "",
            message=result.message,
            receipt=result.receipt,
            value_json=compact_json(result.value),
            diagnostics_json=compact_json(result.diagnostics),
            budget_json=compact_json(result.budget),
            duration_s=float(duration_s),
        )

    def episode_event(
        self, episode_id: str, event: str, detail: Mapping[str, Any], stamp_s: float
    ) -> Any:
        return self.t["captain_ros_interfaces/msg/EpisodeEvent"](
            stamp=self.time(stamp_s),
            episode_id=episode_id,
            event=event,
            detail_json=json.dumps(dict(detail), default=str),
        )

    def observation(
        self, handle: str, cameras: list[str], backend_stamp_s: float, stamp_s: float
    ) -> Any:
        return self.t["captain_ros_interfaces/msg/ObservationHandle"](
            stamp=self.time(stamp_s),
            handle=handle,
            cameras=list(cameras),
            stamp_s=float(backend_stamp_s),
        )


def optical_frame(camera: str) -> str:
    """REP 103 optical frame name of a camera (x right, y down, z forward)."""
    return f"{camera}_optical_frame"
