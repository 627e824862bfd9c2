"""Conversions between core dataclasses and ROS messages (the only place that knows both).

Quaternions: core uses ``(w, x, y, z)``, ROS messages ``(x, y, z, w)``. Times: core uses seconds
as floats, ROS ``builtin_interfaces/Time``. Images: ``rgb8`` and ``32FC1`` depth in metres.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from captain_ros_interfaces.msg import Detection, Receipt
from captain_ros_interfaces.srv import RobotCall
from geometry_msgs.msg import Point, Pose, Quaternion, Transform, TransformStamped, Vector3
from sensor_msgs.msg import CameraInfo, Image, JointState

from captain_ros.core.geometry import Pose as CorePose
from captain_ros.core.result import FailureCategory, Result, compact_json, stamp_parts
from captain_ros.core.types import CameraFrame
from captain_ros.core.types import JointState as CoreJointState


def to_time(stamp_s: float) -> Time:
    """``builtin_interfaces/Time`` of a time in seconds (non-negative)."""
    sec, nanosec = stamp_parts(stamp_s)
    return Time(sec=sec, nanosec=nanosec)


def from_time(t: Time) -> float:
    return t.sec + t.nanosec * 1e-9


def dumps(value: Any) -> str:
    """Compact JSON of any Result payload (numpy and dataclasses converted, NaN -> null)."""
    return compact_json(value)


# --- results and robot calls ------------------------------------------------------------------


def result_to_receipt(
    result: Result,
    capability: str,
    *,
    episode_id: str = "",
    request_index: int = 0,
    call_index: int = 0,
    stamp_s: float = 0.0,
    duration_s: float = 0.0,
) -> Receipt:
    """A Receipt message carrying every field of ``result``."""
    return Receipt(
        stamp=to_time(stamp_s),
        episode_id=episode_id,
        request_index=int(request_index),
        call_index=int(call_index),
        capability=capability,
        success=bool(result.success),
        executed=bool(result.executed),
        failure_category=result.failure_category.value if result.failure_category else "",
        message=result.message,
        receipt=result.receipt,
        value_json=dumps(result.value),
        diagnostics_json=dumps(result.diagnostics),
        budget_json=dumps(result.budget),
        duration_s=float(duration_s),
    )


def receipt_to_result(msg: Any) -> Result:
    """Inverse of :func:`result_to_receipt` (works on rclpy and rosbags-decoded messages)."""
    return Result.from_dict(
        {
            "success": msg.success,
            "executed": msg.executed,
            "failure_category": msg.failure_category or None,
            "message": msg.message,
            "value": json.loads(msg.value_json or "null"),
            "diagnostics": json.loads(msg.diagnostics_json or "{}"),
            "budget": json.loads(msg.budget_json or "{}"),
            "receipt": msg.receipt,
        }
    )


def make_call_request(
    capability: str, kwargs: Mapping[str, Any], *, episode_id: str = "", request_index: int = 0
) -> RobotCall.Request:
    return RobotCall.Request(
        capability=capability,
        kwargs_json=dumps(dict(kwargs)),
        episode_id=episode_id,
        request_index=int(request_index),
    )


def parse_call_request(req: RobotCall.Request) -> tuple[str, dict[str, Any]]:
    """``(capability, kwargs)``; raises ValueError when ``kwargs_json`` is not a JSON object."""
    kwargs = json.loads(req.kwargs_json or "{}")
    if not isinstance(kwargs, dict):
        raise ValueError("kwargs_json must encode a JSON object")
    return req.capability, kwargs


def fill_call_response(resp: RobotCall.Response, result: Result) -> RobotCall.Response:
    resp.success = bool(result.success)
    resp.failure_category = result.failure_category.value if result.failure_category else ""
    resp.result_json = json.dumps(result.to_dict(), separators=(",", ":"))
    return resp


def call_response_to_result(resp: RobotCall.Response) -> Result:
    try:
        return Result.from_dict(json.loads(resp.result_json))
    except (ValueError, KeyError, TypeError) as exc:
        return Result.fail(
            FailureCategory.INTERNAL_ERROR,
            f"malformed RobotCall response ({exc}); the call may have executed",
        )


# --- perception ---------------------------------------------------------------------------------


def detection_to_msg(det: Mapping[str, Any]) -> Detection:
    """A Detection message of a perception-contract detection dict."""
    c = [float(v) for v in det.get("centroid_m", (0.0, 0.0, 0.0))]
    e = [float(v) for v in det.get("extents_m", (0.0, 0.0, 0.0))]
    uv = [float(v) for v in det.get("pixel_uv", (0.0, 0.0))]
    return Detection(
        id=str(det.get("id", "")),
        label=str(det.get("label", "")),
        score=float(det.get("score", 0.0)),
        centroid=Point(x=c[0], y=c[1], z=c[2]),
        extents=Vector3(x=e[0], y=e[1], z=e[2]),
        pixel_u=uv[0],
        pixel_v=uv[1],
        area_px=int(det.get("area_px", 0)),
        handle=str(det.get("handle", "")),
        camera=str(det.get("camera", "")),
    )


def msg_to_detection(msg: Detection) -> dict[str, Any]:
    return {
        "id": msg.id,
        "label": msg.label,
        "score": float(msg.score),
        "centroid_m": [msg.centroid.x, msg.centroid.y, msg.centroid.z],
        "extents_m": [msg.extents.x, msg.extents.y, msg.extents.z],
        "pixel_uv": [float(msg.pixel_u), float(msg.pixel_v)],
        "area_px": int(msg.area_px),
        "handle": msg.handle,
        "camera": msg.camera,
    }


# --- geometry, joints, cameras ---------------------------------------------------------------------


def pose_to_msg(pose: CorePose) -> Pose:
    p, q = pose.position_m, pose.quat_wxyz
    return Pose(
        position=Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
        orientation=Quaternion(x=float(q[1]), y=float(q[2]), z=float(q[3]), w=float(q[0])),
    )


def msg_to_pose(msg: Pose, frame: str = "world") -> CorePose:
    o = msg.orientation
    return CorePose(
        np.array([msg.position.x, msg.position.y, msg.position.z], dtype=float),
        np.array([o.w, o.x, o.y, o.z], dtype=float),
        frame,
    )


def transform_msg(parent: str, child: str, pose: CorePose, stamp: Time) -> TransformStamped:
    """TF ``parent -> child`` where ``pose`` is the child frame expressed in the parent frame."""
    p, q = pose.position_m, pose.quat_wxyz
    t = TransformStamped()
    t.header.stamp = stamp
    t.header.frame_id = parent
    t.child_frame_id = child
    t.transform = Transform(
        translation=Vector3(x=float(p[0]), y=float(p[1]), z=float(p[2])),
        rotation=Quaternion(x=float(q[1]), y=float(q[2]), z=float(q[3]), w=float(q[0])),
    )
    return t


def joint_states_msg(
    states: Iterable[CoreJointState], stamp: Time, extra: Mapping[str, float] | None = None
) -> JointState:
    """One ``sensor_msgs/JointState`` of several arms (+ e.g. gripper openings in ``extra``)."""
    msg = JointState()
    msg.header.stamp = stamp
    for s in states:
        msg.name.extend(s.names)
        msg.position.extend(float(v) for v in s.position_rad)
        msg.velocity.extend(float(v) for v in s.velocity_rad_s)
        msg.effort.extend(float(v) for v in s.effort_nm)
    for name, value in (extra or {}).items():
        msg.name.append(name)
        msg.position.append(float(value))
        msg.velocity.append(0.0)
        msg.effort.append(0.0)
    return msg


def optical_frame(camera: str) -> str:
    """REP 103 optical frame name of a camera (x right, y down, z forward)."""
    return f"{camera}_optical_frame"


def image_msg(array: np.ndarray, stamp: Time, frame_id: str) -> Image:
    """``rgb8`` for (H, W, 3) uint8, ``32FC1`` for (H, W) float depth [m]."""
    msg = Image()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.height, msg.width = int(array.shape[0]), int(array.shape[1])
    if array.ndim == 3:
        data = np.ascontiguousarray(array, dtype=np.uint8)
        msg.encoding, msg.step = "rgb8", msg.width * 3
    else:
        data = np.ascontiguousarray(array, dtype=np.float32)
        msg.encoding, msg.step = "32FC1", msg.width * 4
    msg.is_bigendian = 0
    msg.data = data.tobytes()
    return msg


def image_to_array(msg: Any) -> np.ndarray:
    """Inverse of :func:`image_msg` for ``rgb8`` and ``32FC1``."""
    buf = bytes(msg.data)
    if msg.encoding == "rgb8":
        return np.frombuffer(buf, np.uint8).reshape(msg.height, msg.width, 3)
    if msg.encoding == "32FC1":
        return np.frombuffer(buf, np.float32).reshape(msg.height, msg.width)
    raise ValueError(f"unsupported encoding {msg.encoding!r}; supported: rgb8, 32FC1")


def camera_info_msg(frame: CameraFrame, stamp: Time) -> CameraInfo:
    """Pinhole CameraInfo (no distortion) of a rendered frame."""
    k = np.asarray(frame.intrinsics, dtype=float)
    info = CameraInfo()
    info.header.stamp = stamp
    info.header.frame_id = optical_frame(frame.camera)
    info.height, info.width = frame.height, frame.width
    info.distortion_model = "plumb_bob"
    info.d = [0.0] * 5
    info.k = [float(v) for v in k.reshape(-1)]
    info.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    info.p = [k[0, 0], k[0, 1], k[0, 2], 0.0, k[1, 0], k[1, 1], k[1, 2], 0.0, 0.0, 0.0, 1.0, 0.0]
    return info
