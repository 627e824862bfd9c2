"""Support detection for an object whose own body hides its support's top (cube on a cube)."""

import pytest
from perception_synth import Box, SynthBackend

from captain_ros.perception import PerceptionService

S = 0.035  # cube side [m]
BLUE = Box((0.40, 0.0, S / 2), (S, S, S), (30, 60, 200))


def measure_red_on(red: Box) -> dict:
    s = PerceptionService(SynthBackend(objects=[BLUE, red], size_px=320))
    h = s.observe(["head"]).value["handle"]
    cube = s.segment("red cube", h).value["detections"][0]["id"]
    blue = s.segment("blue cube", h).value["detections"][0]["id"]
    return s.measure_object_geometry(cube, blue).value


def test_cube_on_same_sized_cube_rests_although_the_lower_top_is_hidden():
    v = measure_red_on(Box((0.40, 0.0, 1.5 * S), (S, S, S), (200, 30, 30)))
    d = v["destination"]
    # the head camera sees only the lower cube's front face: a sliver of footprint, off-centre
    assert min(d["extents_m"][:2]) < 0.5 * S
    assert not d["object_inside_footprint"]
    assert v["resting"] is True and v["support"] == "destination"
    assert v["top_z_m"] - v["extents_m"][2] == pytest.approx(d["top_z_m"], abs=0.004)


def test_cube_beside_a_cube_at_its_top_height_is_not_resting_on_it():
    v = measure_red_on(Box((0.40, 0.08, 1.5 * S), (S, S, S), (200, 30, 30)))
    assert v["resting"] is False and v["support"] == "none"
