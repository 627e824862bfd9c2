"""What a task hands a simulation backend to build a scene.

A task samples a :class:`SceneSpec` from a seed; the MuJoCo backend composes it with the robot rig
(table, arms, cameras) into one model. Objects are given as MJCF fragments so tasks can author
anything MuJoCo can express (free bodies, articulated drawers and doors, pegs and holes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class SceneSpec:
    """A sampled scene.

    Attributes:
        rig: ``"piper"`` (single arm) or ``"piper_dual"`` (two PiPERs facing the table).
        worldbody_xml: MJCF elements inserted into ``<worldbody>`` (bodies with named geoms; free
            objects carry a ``<freejoint name="...">``).
        asset_xml: MJCF elements inserted into ``<asset>`` (materials, textures).
        object_bodies: Names of the task bodies (in order); segmentation ids follow this order.
        light_diffuse: RGB diffuse of the main light (lighting randomisation).
        light_pos_m: Position of the main light [m].
        camera_jitter_m: Head-camera position offset [m] (camera-pose randomisation).
        camera_jitter_rad: Head-camera (roll, pitch, yaw) offset [rad].
        seed: The seed it was sampled from (the backend seeds its RNG with it).
    """

    rig: str
    worldbody_xml: str
    asset_xml: str = ""
    object_bodies: tuple[str, ...] = ()
    light_diffuse: tuple[float, float, float] = (0.8, 0.8, 0.8)
    light_pos_m: tuple[float, float, float] = (0.0, 0.0, 2.0)
    camera_jitter_m: np.ndarray = field(default_factory=lambda: np.zeros(3))
    camera_jitter_rad: np.ndarray = field(default_factory=lambda: np.zeros(3))
    seed: int = 0

    def __post_init__(self) -> None:
        if self.rig not in ("piper", "piper_dual"):
            raise ValueError(f"unknown rig {self.rig!r}; valid: piper, piper_dual")
