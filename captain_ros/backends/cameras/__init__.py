"""Cameras for hardware backends: RealSense (pyrealsense2), emulated, frame -> observation."""

from captain_ros.backends.cameras.frames import (
    Intrinsics,
    RawRGBD,
    encode_depth,
    load_extrinsics,
    to_camera_frame,
)

__all__ = ["Intrinsics", "RawRGBD", "encode_depth", "load_extrinsics", "to_camera_frame"]
