"""The topics of a RealSense ROS driver named ``<camera>``, fed with the simulated camera's frames.

Per camera: ``/<camera>/color/image_raw`` (``rgb8``), ``/<camera>/aligned_depth_to_color/
image_raw`` (``16UC1`` in millimetres, 0 = no depth, as the RealSense driver publishes it) and
``/<camera>/color/camera_info``, all three with the frame's one stamp and the camera's optical
frame (:func:`captain_ros.ros.convert.optical_frame`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image

from captain_ros.backends.cameras.frames import encode_depth
from captain_ros.core.types import CameraFrame
from captain_ros.ros import convert

DEPTH_SCALE_M = 0.001
"""One unit of the ``16UC1`` depth image [m]."""


def depth_msg(depth_m: np.ndarray, stamp: Time, frame_id: str) -> Image:
    """A RealSense-style ``16UC1`` depth image (units of :data:`DEPTH_SCALE_M`) of metric depth."""
    depth = encode_depth(depth_m, DEPTH_SCALE_M)
    msg = Image(
        height=depth.shape[0],
        width=depth.shape[1],
        encoding="16UC1",
        is_bigendian=0,
        step=depth.shape[1] * 2,
        data=depth.tobytes(),
    )
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    return msg


class CameraTopics:
    """The publishers of one camera (queues of ``depth`` messages)."""

    def __init__(self, node: Node, camera: str, depth: int = 5) -> None:
        self.camera = camera
        self.color: Any = node.create_publisher(Image, f"/{camera}/color/image_raw", depth)
        self.depth: Any = node.create_publisher(
            Image, f"/{camera}/aligned_depth_to_color/image_raw", depth
        )
        self.info: Any = node.create_publisher(CameraInfo, f"/{camera}/color/camera_info", depth)

    def publish(self, frame: CameraFrame, stamp: Time) -> None:
        """Publish one frame on the three topics, stamped ``stamp``."""
        frame_id = convert.optical_frame(self.camera)
        self.color.publish(convert.image_msg(frame.rgb, stamp, frame_id))
        self.depth.publish(depth_msg(frame.depth_m, stamp, frame_id))
        self.info.publish(convert.camera_info_msg(frame, stamp))
