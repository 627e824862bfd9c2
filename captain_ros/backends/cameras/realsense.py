"""Intel RealSense RGB-D through ``pyrealsense2``: depth aligned to colour, intrinsics, depth scale.

:class:`RealSenseCamera` starts a pipeline (colour rgb8 + depth z16), aligns depth to colour with
``rs.align`` and returns :class:`RawRGBD` frames; :func:`raw_from_frameset` is the conversion on
its own so that it runs on any ``rs.composite_frame`` (a live pipeline or a software device with
injected frames, which is how the tests exercise it).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from captain_ros.backends.cameras.frames import Intrinsics, RawRGBD
from captain_ros.core.errors import HardwareError


def _rs() -> Any:
    try:
        import pyrealsense2 as rs
    except ImportError as exc:  # missing wheel or libusb-1.0
        raise HardwareError(
            f"pyrealsense2 is not usable here ({exc}); install it and libusb-1.0-0"
        ) from exc
    return rs


def intrinsics_of(profile: Any) -> Intrinsics:
    """``rs.video_stream_profile`` -> :class:`Intrinsics`."""
    i = profile.as_video_stream_profile().get_intrinsics()
    return Intrinsics(
        int(i.width), int(i.height), float(i.fx), float(i.fy), float(i.ppx), float(i.ppy)
    )


def raw_from_frameset(frames: Any, align: Any, depth_scale_m: float, stamp_s: float) -> RawRGBD:
    """Align a colour+depth frameset to colour and copy it out as :class:`RawRGBD`."""
    aligned = align.process(frames)
    color, depth = aligned.get_color_frame(), aligned.get_depth_frame()
    if not color or not depth:
        raise HardwareError("RealSense frameset is missing its colour or depth frame")
    rgb = np.asanyarray(color.get_data()).copy()
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise HardwareError(f"RealSense colour must be rgb8, got shape {rgb.shape}")
    d = np.asanyarray(depth.get_data()).astype(np.uint16, copy=True)
    return RawRGBD(
        rgb.astype(np.uint8), d, depth_scale_m, intrinsics_of(color.get_profile()), stamp_s
    )


class RealSenseCamera:
    """One RealSense device (``serial`` or the first found) streaming colour + depth."""

    def __init__(
        self,
        serial: str = "",
        width_px: int = 640,
        height_px: int = 480,
        fps: int = 30,
        clock: Any = time.monotonic,
    ) -> None:
        rs = _rs()
        self._clock = clock
        self.pipeline = rs.pipeline()
        cfg = rs.config()
        if serial:
            cfg.enable_device(serial)
        cfg.enable_stream(rs.stream.color, width_px, height_px, rs.format.rgb8, fps)
        cfg.enable_stream(rs.stream.depth, width_px, height_px, rs.format.z16, fps)
        try:
            profile = self.pipeline.start(cfg)
        except RuntimeError as exc:
            raise HardwareError(f"RealSense {serial or '(any)'} did not start: {exc}") from exc
        self.depth_scale_m = float(profile.get_device().first_depth_sensor().get_depth_scale())
        self.align = rs.align(rs.stream.color)

    def grab(self, timeout_s: float = 1.0) -> RawRGBD:
        try:
            frames = self.pipeline.wait_for_frames(int(timeout_s * 1000))
        except RuntimeError as exc:
            raise HardwareError(f"RealSense delivered no frame within {timeout_s} s") from exc
        return raw_from_frameset(frames, self.align, self.depth_scale_m, self._clock())

    def close(self) -> None:
        self.pipeline.stop()
