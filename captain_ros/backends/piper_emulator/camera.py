"""The emulator's cameras stand in for RealSense devices: they render the emulated scene and hand
out the same :class:`RawRGBD` (uint16 depth at 1 mm per unit, aligned to colour) a D4xx
delivers, plus the calibration a hand-eye procedure would produce."""

from __future__ import annotations

import time

import numpy as np

from captain_ros.backends.cameras.frames import Intrinsics, RawRGBD, encode_depth
from captain_ros.backends.piper_emulator.emulator import PiperEmulator

DEPTH_SCALE_M = 0.001


class EmulatedCamera:
    """Camera ``name`` of the emulated rig (``head``, ``wrist``, ``left_wrist``, ...)."""

    def __init__(self, emulator: PiperEmulator, name: str, clock: object = time.monotonic) -> None:
        self.emulator = emulator
        self.name = name
        self._clock = clock

    def grab(self) -> RawRGBD:
        f = self.emulator.render(self.name)
        k = Intrinsics.from_matrix(f.intrinsics, f.width, f.height)
        depth = encode_depth(f.depth_m, DEPTH_SCALE_M)
        stamp = float(self._clock())  # type: ignore[operator]
        return RawRGBD(f.rgb, depth, DEPTH_SCALE_M, k, stamp)

    def calibration(self, mount: str) -> np.ndarray:
        """``world_from_optical`` (mount ``world``) or ``flange_from_optical`` (an arm name)."""
        t = np.asarray(self.emulator.render(self.name).world_from_camera, dtype=float)
        if mount == "world":
            return t
        return np.linalg.inv(self.emulator.flange_pose_m(mount)) @ t
