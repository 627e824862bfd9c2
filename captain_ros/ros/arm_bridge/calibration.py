"""The simulated cameras' calibration files, as a calibration procedure would give them (no rclpy).

One ``<camera>.yaml`` per camera of the simulated rig, read by the ros_arm backend's config
(:func:`captain_ros.backends.cameras.frames.load_extrinsics`): ``world_from_optical`` for a
camera fixed in the world (the head), ``flange_from_optical`` relative to the arm's ``link6`` for
a wrist camera (what hand-eye calibration gives).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import yaml

if TYPE_CHECKING:
    from captain_ros.backends.ros_arm.simulated import SimulatedArmDriver


def calibration(driver: SimulatedArmDriver, camera: str) -> dict[str, list[list[float]]]:
    """The calibration of the simulated ``camera`` from its current pose (a wrist camera:
    relative to its arm's flange)."""
    t = np.asarray(driver.render(camera).world_from_camera, dtype=float)
    arm = next((a for a, idx in driver.arms.items() if idx.wrist_camera == camera), None)
    if arm is None:
        return {"world_from_optical": t.tolist()}
    flange = driver.body_matrix(f"{driver.arms[arm].prefix}link6")
    return {"flange_from_optical": (np.linalg.inv(flange) @ t).tolist()}


def write_calibration(driver: SimulatedArmDriver, folder: Path) -> list[Path]:
    """Write every camera's ``<camera>.yaml`` into ``folder`` (created); the files."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for camera in driver.sim.spec.cameras:
        path = folder / f"{camera}.yaml"
        path.write_text(yaml.safe_dump(calibration(driver, camera)))
        files.append(path)
    return files
