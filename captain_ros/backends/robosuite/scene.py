"""What a robosuite task hands the robosuite backend: which environment, robots and objects.

The scene itself (table, objects, their placement and randomisation) is robosuite's, built by
``robosuite.make`` and seeded from :attr:`RobosuiteScene.seed`; this spec only names it. It is a
:class:`~captain_ros.core.scene.SceneSpec` (``rig="robosuite"``, no MJCF fragments) so it travels
the same way from ``task.sample(seed)`` to ``make_backend``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from captain_ros.core.scene import SceneSpec

RIG = "robosuite"


@dataclass(frozen=True)
class RobosuiteScene(SceneSpec):
    """A robosuite environment for one seed.

    Attributes:
        env_name: robosuite environment class name (``"Lift"``, ``"Stack"``, ``"Door"``, ...).
        robots: Robot names, one per arm (``("Panda",)``; two for two-arm tasks).
        objects: Our object name -> robosuite body name (``{"red_cube": "cube_main"}``); their
            order is the segmentation id order, as ``object_bodies`` of other scenes.
        env_kwargs: Extra keyword arguments of ``robosuite.make`` (e.g. ``env_configuration``).
    """

    rig: str = RIG
    worldbody_xml: str = ""
    env_name: str = "Lift"
    robots: tuple[str, ...] = ("Panda",)
    objects: Mapping[str, str] = field(default_factory=dict)
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.rig != RIG:
            raise ValueError(f"a RobosuiteScene has rig {RIG!r}, got {self.rig!r}")
        if not self.robots:
            raise ValueError("a RobosuiteScene needs at least one robot")
        object.__setattr__(self, "object_bodies", tuple(self.objects))
