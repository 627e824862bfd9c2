"""Shared helpers for the harness/api/session tests: a small contract-satisfying task and the stack."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.api.service import RobotService
from captain_ros.backends.fake import FakeBackend
from captain_ros.core.privileged import PrivilegedState
from captain_ros.motion.service import MotionService
from captain_ros.perception.service import PerceptionService


class RedOnBlueTask:
    """Put the red box on the blue box (the docs/contracts.md Task surface the harness uses)."""

    name = "red_on_blue"
    rig = "piper"
    tolerances = {"max_offset_xy_m": 0.02}

    def instruction(self, seed: int) -> str:
        return "Put the red box on top of the blue box."

    def success(self, state: PrivilegedState) -> bool:
        red = state.object("red_box").position_m
        blue = state.object("blue_box").position_m
        return bool(
            np.linalg.norm(red[:2] - blue[:2]) < 0.02
            and red[2] > blue[2] + 0.02
            and state.object("red_box").held_by is None
        )

    def gate_check(self, measurements: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
        if not measurements:
            return False, "no measure_object_geometry record yet"
        last = measurements[-1]
        dest = last.get("destination")
        if not dest:
            return False, "the last measurement has no destination"
        if dest["distance_xy_m"] > self.tolerances["max_offset_xy_m"]:
            return (
                False,
                f"the object is {dest['distance_xy_m']:.3f} m from the destination (max 0.02 m)",
            )
        return True, "the last measurement shows the object on the destination"


def make_stack(**fake_kwargs: Any) -> tuple[FakeBackend, RobotService]:
    """FakeBackend + the real MotionService and PerceptionService behind a RobotService."""
    backend = FakeBackend(**fake_kwargs)
    return backend, RobotService(backend, MotionService(backend), PerceptionService(backend))


SOLVE_RED_ON_BLUE = [
    {
        "reasoning": "Look at the scene.",
        "code": "o = robot.observe()\nred = robot.segment('red box').value['detections'][0]\n"
        "blue = robot.segment('blue box').value['detections'][0]\n"
        "m = robot.measure_object_geometry(red, blue)\nprint(m.value['center_m'])",
    },
    {
        "reasoning": "Grasp from above.",
        "code": "c = m.value['center_m']\nrobot.move_to(jaw='open')\n"
        "robot.move_to([c[0], c[1], c[2] + 0.10], [0, 1, 0, 0], speed_m_s=0.25)\nrobot.move_to([c[0], c[1], c[2]], speed_m_s=0.1)\n"
        "robot.move_to(jaw='close')\nr = robot.move_to([c[0], c[1], c[2] + 0.12], mode='manipulation', speed_m_s=0.25)",
    },
    {
        "reasoning": "Place on blue and release.",
        "code": "d = m.value['destination']\n"
        "robot.move_to([d['center_m'][0], d['center_m'][1], d['top_z_m'] + m.value['extents_m'][2] / 2 + 0.01],"
        " mode='manipulation', speed_m_s=0.25)\nrobot.release()\nrobot.move_to([d['center_m'][0], d['center_m'][1], 0.2], speed_m_s=0.25)",
    },
    {
        "reasoning": "Verify and finish.",
        "code": "robot.observe()\nred2 = robot.segment('red box').value['detections'][0]\n"
        "blue2 = robot.segment('blue box').value['detections'][0]\n"
        "m2 = robot.measure_object_geometry(red2, blue2)\nprint(m2.value['destination'])\nfinish('red on blue')",
    },
]
