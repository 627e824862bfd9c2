"""What the robot node's parameters mean without ROS (captain_ros.ros.robot_params): how a scene's
backend is built, which debug services are served plainly or only as signed commands, and which
cameras are published."""

from __future__ import annotations

from typing import Any

import pytest

from captain_ros.backends.fake import FakeBackend
from captain_ros.core.errors import NotSupportedError, UnknownNameError
from captain_ros.ros.robot_params import PARAMS, camera_names, scene_maker, service_plan
from captain_ros.tasks import get_task

DEFAULTS = {p.name: p.default for p in PARAMS}
WORLD = ("snapshot", "restore", "load_scene")


class RealRig(FakeBackend):
    """A rig without ground truth, as a real PiPER answers ``privileged_state``."""

    def privileged_state(self) -> Any:
        raise NotSupportedError("a real rig has no ground truth")


def _plan(hosted: Any, secured: bool, **values: Any) -> Any:
    return service_plan({**DEFAULTS, **values}, hosted, secured)


def test_a_simulation_serves_every_debug_service_and_signs_the_world_changing_ones() -> None:
    sim = FakeBackend(scene=get_task("pick_place").sample(1))
    open_graph = _plan(sim, secured=False)
    assert open_graph.plain == dict.fromkeys((*WORLD, "privileged_state"), True)
    assert open_graph.signed == ()
    secured = _plan(sim, secured=True)
    assert secured.plain == {**dict.fromkeys(WORLD, False), "privileged_state": True}
    assert secured.signed == WORLD


def test_a_real_rig_serves_no_ground_truth_and_world_changes_only_when_asked() -> None:
    rig = RealRig(scene=get_task("pick_place").sample(1))
    plain = _plan(rig, secured=False, backend="piper")
    assert plain.plain == dict.fromkeys((*WORLD, "privileged_state"), False)
    asked = _plan(rig, secured=False, backend="piper", debug_services=True)
    assert asked.plain == {**dict.fromkeys(WORLD, True), "privileged_state": False}
    signed = _plan(rig, secured=True, backend="piper", debug_services=True)
    assert signed.signed == WORLD and not any(signed.plain.values())
    assert _plan(rig, secured=True, backend="piper").signed == ()  # not asked: not even signed
    # the same backend behind a simulation's name is not a rig: its missing ground truth is
    # the backend's answer, and every world-changing service is served
    assert _plan(rig, secured=False).plain == {
        **dict.fromkeys(WORLD, True),
        "privileged_state": True,
    }


def test_the_cameras_parameter_picks_the_published_cameras() -> None:
    cameras = ("front", "wrist", "top")
    assert camera_names(DEFAULTS, cameras) == cameras
    assert camera_names({"cameras": " wrist , ,front"}, cameras) == ("wrist", "front")


def _positions(backend: Any) -> list[float]:
    objects = backend.privileged_state().objects.values()
    return [round(float(x), 6) for o in objects for x in o.position_m]


def test_a_scene_is_built_by_the_composition_root_with_the_node_parameters() -> None:
    make = scene_maker({**DEFAULTS, "backend": "fake"})
    backend, other = make("stack", 2), make("stack", 3)
    try:
        assert backend.spec.arm_names == ("arm",)
        names = set(backend.privileged_state().objects)
        assert names == set(get_task("stack").sample(2).object_bodies)
        assert _positions(backend) != _positions(other)  # the seed's scene
        assert hasattr(backend, "latch")  # wrapped in the safety layer
    finally:
        backend.close()
        other.close()
    with pytest.raises(UnknownNameError):
        make("juggle", 1)
