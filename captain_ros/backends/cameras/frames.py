"""RGB-D frame -> :class:`~captain_ros.core.types.CameraFrame` (the observation path).

Every camera source (a RealSense, the emulator's rendered camera, a recorded array) produces a
:class:`RawRGBD`: colour, depth in the device's integer units with its depth scale, already
aligned to the colour image, and the colour stream's pinhole intrinsics. :func:`to_camera_frame`
converts it with the camera's extrinsics (a hand-eye calibration) into the frame perception
reads: metric z-depth [m] (0 = no depth), K, and the optical frame's world pose.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.types import CameraFrame


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics of the colour stream [px] (``rs.intrinsics``: fx, fy, ppx, ppy)."""

    width: int
    height: int
    fx: float
    fy: float
    ppx: float
    ppy: float

    def __post_init__(self) -> None:
        if not (self.width > 0 and self.height > 0 and self.fx > 0 and self.fy > 0):
            raise InvalidArgumentError("Intrinsics: width, height, fx, fy must be positive")

    def matrix(self) -> np.ndarray:
        return np.array([[self.fx, 0.0, self.ppx], [0.0, self.fy, self.ppy], [0.0, 0.0, 1.0]])

    @classmethod
    def from_matrix(cls, k: np.ndarray, width: int, height: int) -> Intrinsics:
        return cls(width, height, float(k[0, 0]), float(k[1, 1]), float(k[0, 2]), float(k[1, 2]))


@dataclass(frozen=True)
class RawRGBD:
    """One aligned RGB-D capture as a device delivers it.

    Attributes:
        color: (H, W, 3) uint8 RGB.
        depth: (H, W) uint16 depth in device units, aligned to ``color`` (0 = no depth).
        depth_scale_m: Metres per depth unit (RealSense D4xx: 0.001).
        intrinsics: Of the colour stream.
        stamp_s: Capture time [s] on the backend clock.
    """

    color: np.ndarray
    depth: np.ndarray
    depth_scale_m: float
    intrinsics: Intrinsics
    stamp_s: float

    def __post_init__(self) -> None:
        if self.color.ndim != 3 or self.color.shape[2] != 3 or self.color.dtype != np.uint8:
            raise InvalidArgumentError("RawRGBD.color must be (H, W, 3) uint8")
        if self.depth.shape != self.color.shape[:2] or self.depth.dtype != np.uint16:
            raise InvalidArgumentError("RawRGBD.depth must be (H, W) uint16 aligned to color")
        if (self.intrinsics.height, self.intrinsics.width) != self.color.shape[:2]:
            raise InvalidArgumentError("RawRGBD.intrinsics do not match the image size")
        if not self.depth_scale_m > 0:
            raise InvalidArgumentError("RawRGBD.depth_scale_m must be positive")


def to_camera_frame(name: str, raw: RawRGBD, world_from_optical: np.ndarray) -> CameraFrame:
    """Convert a device capture into the observation frame (metric depth, K, optical pose)."""
    t = np.asarray(world_from_optical, dtype=float)
    if t.shape != (4, 4) or not np.allclose(t[3], [0, 0, 0, 1]):
        raise InvalidArgumentError(f"camera {name}: world_from_optical must be a 4x4 transform")
    depth = raw.depth.astype(np.float32) * np.float32(raw.depth_scale_m)
    return CameraFrame(
        name, np.ascontiguousarray(raw.color), depth, raw.intrinsics.matrix(), t, raw.stamp_s
    )


def encode_depth(depth_m: np.ndarray, depth_scale_m: float = 0.001) -> np.ndarray:
    """Metric depth [m] (0/NaN = none) -> uint16 device units (what a RealSense delivers)."""
    d = np.nan_to_num(np.asarray(depth_m, dtype=np.float64), nan=0.0, posinf=0.0)
    return np.clip(np.round(d / depth_scale_m), 0, 65535).astype(np.uint16)


def load_extrinsics(path: str | Path, key: str) -> np.ndarray:
    """A 4x4 transform ``key`` (``world_from_optical`` or ``flange_from_optical``) from a YAML
    hand-eye calibration file (row-major list of 16 numbers or 4 rows of 4)."""
    p = Path(path)
    if not p.is_file():
        raise InvalidArgumentError(f"camera calibration {p} does not exist")
    data = yaml.safe_load(p.read_text()) or {}
    if not isinstance(data, dict) or key not in data:
        raise InvalidArgumentError(f"{p}: expected a key {key!r} with a 4x4 transform")
    t = np.asarray(data[key], dtype=float).reshape(4, 4)
    if not np.allclose(t[3], [0, 0, 0, 1]) or not np.allclose(
        t[:3, :3] @ t[:3, :3].T, np.eye(3), atol=1e-4
    ):
        raise InvalidArgumentError(f"{p}: {key} is not a rigid transform")
    return t
