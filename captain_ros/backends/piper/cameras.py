"""Mount a camera source on the rig: world-fixed (head) or on an arm's flange (wrist, hand-eye)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from captain_ros.backends.cameras.frames import RawRGBD, to_camera_frame
from captain_ros.backends.piper.twin import KinematicTwin
from captain_ros.core.types import CameraFrame


class MountedCamera:
    """``grab()`` of a device + its extrinsics -> :class:`CameraFrame` in the world frame.

    A wrist camera's pose is the twin's flange (at the measured joints) times the hand-eye
    ``flange_from_optical``; a fixed camera uses ``world_from_optical`` as calibrated.
    """

    def __init__(
        self,
        name: str,
        grab: Callable[[], RawRGBD],
        mount: str,
        extrinsics: np.ndarray,
        twin: KinematicTwin,
    ) -> None:
        self.name, self.grab, self.mount = name, grab, mount
        self.extrinsics = np.asarray(extrinsics, dtype=float)
        self.twin = twin

    def __call__(self) -> CameraFrame:
        raw = self.grab()
        pose = (
            self.extrinsics
            if self.mount == "world"
            else self.twin.flange_matrix(self.mount) @ self.extrinsics
        )
        return to_camera_frame(self.name, raw, pose)
