"""PerceptionService on the real MuJoCo rig (one seeded pick_place scene), against the simulator's
ground truth: object pose and MuJoCo's segmentation render."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from captain_ros.backends.mujoco import MujocoBackend  # noqa: E402
from captain_ros.perception import PerceptionService  # noqa: E402
from captain_ros.tasks import get_task  # noqa: E402


@pytest.fixture(scope="module")
def rig():
    task = get_task("pick_place")
    backend = MujocoBackend(task.sample(0), render_segmentation=True)
    yield backend, PerceptionService(backend)
    backend.close()


def test_red_cube_and_plate_match_ground_truth(rig):
    backend, svc = rig
    obs = svc.observe()
    assert obs.success and set(obs.value["cameras"]) == {"head", "wrist"}
    frame = svc.observations.get(obs.value["handle"]).frame("head")
    assert frame.rgb.shape == (512, 512, 3)
    names = backend.scene.object_bodies
    truth = backend.privileged_state().objects
    cube = svc.segment("red cube", obs.value["handle"]).value["detections"][0]
    gt_mask = frame.segmentation == names.index("red_cube") + 1
    det_mask = svc.detection(cube["id"]).mask
    assert (det_mask & gt_mask).sum() / (det_mask | gt_mask).sum() > 0.9
    plate = svc.segment("plate", obs.value["handle"]).value["detections"][0]
    m = svc.measure_object_geometry(cube["id"], plate["id"])
    assert m.success, m.message
    assert m.value["center_m"] == pytest.approx(truth["red_cube"].position_m, abs=0.005)
    assert sorted(m.value["extents_m"][:2]) == pytest.approx([0.035, 0.035], abs=0.004)
    off = np.array(truth["plate"].position_m[:2]) - np.array(truth["red_cube"].position_m[:2])
    assert m.value["destination"]["offset_xy_m"] == pytest.approx(off.tolist(), abs=0.006)
    assert m.value["resting"] is True


def test_click_back_projects_onto_the_object(rig):
    backend, svc = rig
    h = svc.observe(["head"]).value["handle"]
    frame = svc.observations.get(h).frame("head")
    k = backend.scene.object_bodies.index("red_cube") + 1
    vv, uu = np.nonzero(frame.segmentation == k)
    i = len(vv) // 2
    pts = svc.measure_image_points(h, "head", [[int(uu[i]), int(vv[i])]]).value["points_m"][0]
    centre = backend.privileged_state().object("red_cube").position_m
    assert np.linalg.norm(np.array(pts) - centre) < 0.035  # on the 3.5 cm cube's surface
    r = svc.mark_point(h, "head", int(uu[i]), int(vv[i]), label="red cube")
    assert r.success and r.value["centroid_m"] == pytest.approx(centre, abs=0.005)
