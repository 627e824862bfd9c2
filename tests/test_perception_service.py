"""PerceptionService against analytic RGB-D scenes with known geometry (SynthBackend)."""

import math

import numpy as np
import pytest
from perception_synth import Box, Cylinder, SynthBackend

from captain_ros.core.geometry import Pose
from captain_ros.core.result import RECEIPT_MAX_CHARS
from captain_ros.perception import PerceptionService
from captain_ros.perception.camera import project_points

RED = Box((0.45, 0.05, 0.025), (0.05, 0.05, 0.05), (200, 30, 30), 0.3)
PLATE = Cylinder((0.35, -0.12, 0.01), 0.09, 0.02, (40, 190, 60))
BLUE = Box((0.30, 0.15, 0.02), (0.08, 0.04, 0.04), (30, 60, 200), -0.5)


def scene(*extra):
    return SynthBackend(objects=[RED, PLATE, BLUE, *extra], size_px=320)


@pytest.fixture(scope="module")
def svc():
    return PerceptionService(scene())


@pytest.fixture(scope="module")
def handle(svc):
    return svc.observe().value["handle"]


def pixel_of(svc, handle, point, camera="head"):
    frame = svc.observations.get(handle).frame(camera)
    uv, _ = project_points(frame, np.array([point]))
    return int(round(uv[0, 0])), int(round(uv[0, 1]))


def test_observe_returns_handle_cameras_robot_and_images(svc, handle):
    r = svc.observe(["head"])
    assert r.success and r.value["handle"].startswith("obs_") and r.value["cameras"] == ["head"]
    assert r.value["robot"]["arms"]["arm"]["jaw_opening_m"] == pytest.approx(0.07)
    img = svc.image(handle, "head")
    assert img.shape == (320, 320, 3) and img.dtype == np.uint8
    assert len(r.receipt) <= RECEIPT_MAX_CHARS


@pytest.mark.parametrize(
    "text,truth",
    [("red cube", RED), ("blue block", BLUE), ("green plate", PLATE), ("plate", PLATE)],
)
def test_segment_finds_objects_with_metric_geometry(svc, handle, text, truth):
    r = svc.segment(text, handle)
    assert r.success, r.message
    det = r.value["detections"][0]
    assert det["id"].startswith("det_") and det["handle"] == handle and det["camera"] == "head"
    assert det["centroid_m"] == pytest.approx(list(truth.center), abs=0.005)
    assert det["id"] in r.receipt and len(r.receipt) <= RECEIPT_MAX_CHARS
    if isinstance(truth, Box):
        assert sorted(det["extents_m"][:2]) == pytest.approx(sorted(truth.size[:2]), abs=0.005)
        assert det["extents_m"][2] == pytest.approx(truth.size[2], abs=0.003)
    else:
        assert det["extents_m"][:2] == pytest.approx([2 * truth.radius] * 2, abs=0.006)


def test_segment_nothing_matches(svc, handle):
    r = svc.segment("purple ball", handle)
    assert not r.success and r.failure_category.value == "not_detected"
    assert "mark_point" in r.message


def test_measure_object_geometry_box_cylinder_and_destination(svc, handle):
    cube = svc.segment("red cube", handle).value["detections"][0]["id"]
    plate = svc.segment("plate", handle).value["detections"][0]["id"]
    r = svc.measure_object_geometry(cube, plate)
    assert r.success, r.message
    v = r.value
    assert v["shape"] == "box" and v["radius_m"] is None
    assert v["center_m"] == pytest.approx(list(RED.center), abs=0.004)
    assert v["yaw_rad"] == pytest.approx(0.3, abs=0.05)
    assert v["top_z_m"] == pytest.approx(0.05, abs=0.002)
    assert v["resting"] is True and v["support"] == "table"
    assert len(v["footprint_m"]) == 4
    d = v["destination"]
    assert d["id"] == plate
    expected = np.array(PLATE.center[:2]) - np.array(RED.center[:2])
    assert d["offset_xy_m"] == pytest.approx(expected.tolist(), abs=0.005)
    assert d["distance_xy_m"] == pytest.approx(float(np.linalg.norm(expected)), abs=0.005)
    assert "off" in r.receipt and len(r.receipt) <= RECEIPT_MAX_CHARS
    p = svc.measure_object_geometry(plate, shape="auto").value
    assert p["shape"] == "cylinder" and p["radius_m"] == pytest.approx(0.09, abs=0.003)
    assert svc.measurements and svc.measurements[-1]["object_id"] == plate


def test_measure_combines_head_and_wrist_views():
    b = scene()
    b.tcp["arm"] = Pose([0.45, 0.05, 0.3], [0, 0.7071068, 0.7071068, 0])
    s = PerceptionService(b)
    h = s.observe().value["handle"]
    det = s.segment("red cube", h).value["detections"][0]["id"]
    v = s.measure_object_geometry(det).value
    assert v["views"] == ["head", "wrist"]
    assert v["center_m"] == pytest.approx(list(RED.center), abs=0.004)


def test_floating_object_is_not_resting():
    b = SynthBackend(
        objects=[Box((0.45, 0.0, 0.12), (0.05, 0.05, 0.05), (200, 30, 30))], size_px=320
    )
    s = PerceptionService(b)
    det = s.segment("red cube").value["detections"][0]["id"]
    v = s.measure_object_geometry(det).value
    assert v["resting"] is False and v["support"] == "none"
    assert v["center_m"][2] == pytest.approx(0.12, abs=0.004)


def test_mark_point_object_and_part(svc, handle):
    u, v = pixel_of(svc, handle, [0.30, 0.15, 0.04])
    r = svc.mark_point(handle, "head", u, v, label="blue block")
    assert r.success, r.message
    assert r.value["centroid_m"] == pytest.approx(list(BLUE.center), abs=0.005)
    assert r.value["pixel_uv"] == [u, v] and r.value["label"] == "blue block"
    part = svc.mark_point(handle, "head", u, v, label="top", granularity="part")
    assert part.success and part.value["area_px"] <= r.value["area_px"]
    frac = svc.mark_point(handle, "head", (u + 0.5) / 320, (v + 0.5) / 320)
    assert frac.success and frac.value["pixel_uv"] == [u, v]
    point = svc.mark_point(handle, "head", u, v, granularity="point")
    assert point.success and point.value["area_px"] <= 21
    assert point.value["centroid_m"][2] == pytest.approx(0.04, abs=0.002)  # the block's top


def test_mark_point_bad_inputs_fail_with_guidance(svc, handle):
    table_u, table_v = pixel_of(svc, handle, [0.6, -0.3, 0.0])
    cases = {
        "not_detected": svc.mark_point(handle, "head", table_u, table_v),
        "invalid_argument": svc.mark_point(handle, "head", 400, 10),
        "unknown_id": svc.mark_point("obs_999", "head", 10, 10),
    }
    bad_cam = svc.mark_point(handle, "thermal", 10, 10)
    assert bad_cam.failure_category.value == "unknown_id" and "head" in bad_cam.message
    for cat, r in cases.items():
        assert not r.success and r.failure_category.value == cat, (cat, r.message)
        assert r.message and len(r.receipt) <= RECEIPT_MAX_CHARS
    assert "observe" in cases["unknown_id"].message
    nan = svc.mark_point(handle, "head", float("nan"), 3)
    assert nan.failure_category.value == "invalid_argument"
    gran = svc.mark_point(handle, "head", 3, 3, granularity="atom")
    assert gran.failure_category.value == "invalid_argument"


def test_mark_point_on_missing_depth():
    b = scene()
    s = PerceptionService(b)
    h = s.observe(["head"]).value["handle"]
    frame = s.observations.get(h).frame("head")
    frame.depth_m[100:110, 100:110] = 0.0  # a hole in the depth image
    r = s.mark_point(h, "head", 105, 105)
    assert r.failure_category.value == "no_depth" and "Nearest pixel with depth" in r.message


def test_point_default_pointer_lands_on_object(svc, handle):
    r = svc.point("blue block", handle)
    assert r.success
    p = r.value["points"][0]
    frame = svc.observations.get(handle).frame("head")
    assert frame.segmentation[p["v"], p["u"]] == 3
    assert not svc.point("purple ball", handle).success


def test_select_detection_orders(svc, handle):
    ids = [
        svc.segment(t, handle).value["detections"][0]["id"]
        for t in ("red cube", "plate", "blue block")
    ]
    pick = {
        by: svc.select_detection(ids, by).value["centroid_m"]
        for by in ("leftmost", "rightmost", "highest", "lowest", "largest", "nearest")
    }
    assert pick["leftmost"] == pytest.approx(list(BLUE.center), abs=0.005)
    assert pick["rightmost"] == pytest.approx(list(PLATE.center), abs=0.005)
    assert pick["highest"] == pytest.approx(list(RED.center), abs=0.005)
    assert pick["lowest"] == pytest.approx(list(PLATE.center), abs=0.005)
    assert pick["largest"] == pytest.approx(list(PLATE.center), abs=0.005)
    assert svc.select_detection(ids, "tastiest").failure_category.value == "invalid_argument"
    assert svc.select_detection(["det_9999"]).failure_category.value == "unknown_id"
    assert svc.select_detection([]).failure_category.value == "invalid_argument"


def test_track_target_and_compare_after_motion():
    moved = Box((0.45, 0.05, 0.025), (0.05, 0.05, 0.05), (200, 30, 30), 0.3)
    b = SynthBackend(objects=[moved, PLATE, BLUE], size_px=320)
    s = PerceptionService(b)
    before = s.segment("red cube").value["detections"][0]["id"]
    moved.center = (0.50, 0.0, 0.025)
    moved.yaw = 0.1
    r = s.track_target(before)
    assert r.success, r.message
    assert r.value["centroid_m"] == pytest.approx([0.5, 0.0, 0.025], abs=0.005)
    assert r.value["tracked_from"] == before and r.value["handle"] != s.detection(before).handle
    c = s.compare_object_observations(before, r.value["id"])
    assert c.success
    assert c.value["displacement_xyz_m"] == pytest.approx([0.05, -0.05, 0.0], abs=0.005)
    assert c.value["displacement_m"] == pytest.approx(0.05 * 2**0.5, abs=0.005)
    assert c.value["yaw_change_rad"] == pytest.approx(-0.2, abs=0.05)
    b.objects.remove(moved)
    lost = s.track_target(before)
    assert lost.failure_category.value == "not_detected"


def test_measure_image_points(svc, handle):
    u, v = pixel_of(svc, handle, [0.45, 0.05, 0.05])
    r = svc.measure_image_points(handle, "head", [[u, v], [0, 0]])
    assert r.success
    assert r.value["points_m"][0][2] == pytest.approx(0.05, abs=0.002)
    bad = svc.measure_image_points(handle, "head", [[u, 5000]])
    assert bad.failure_category.value == "invalid_argument"
    assert svc.measure_image_points(handle, "head", []).failure_category.value == "invalid_argument"
    assert (
        svc.measure_image_points(handle, "head", "x").failure_category.value == "invalid_argument"
    )


def test_inspect_contact_geometry(svc, handle):
    cube = svc.segment("red cube", handle).value["detections"][0]["id"]
    yaw = 0.3  # jaw axis (tool y) along the cube's y side: top-down quaternion rotated by yaw
    down = np.array([0.0, 1.0, 0.0, 0.0])  # tool z pointing down
    q = np.array([math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)])
    from captain_ros.core.geometry import quat_multiply

    quat = quat_multiply(q, down)
    ok = svc.inspect_contact_geometry(cube, [0.45, 0.05, 0.035], quat.tolist(), 0.07)
    assert ok.success and ok.value["both_pads_contact"] is True, ok.value
    assert ok.value["clearance_per_pad_m"]["+y"] == pytest.approx(0.01, abs=0.004)
    assert ok.value["clearance_per_pad_m"]["-y"] == pytest.approx(0.01, abs=0.004)
    narrow = svc.inspect_contact_geometry(cube, [0.45, 0.05, 0.035], quat.tolist(), 0.03)
    assert narrow.value["collision_on_approach"] is True and not narrow.value["both_pads_contact"]
    miss = svc.inspect_contact_geometry(cube, [0.30, -0.3, 0.035], quat.tolist(), 0.07)
    assert miss.value["both_pads_contact"] is False and miss.value["miss_distance_m"] > 0.05
    low = svc.inspect_contact_geometry(cube, [0.45, 0.05, 0.005], quat.tolist(), 0.07)
    assert low.value["support_clearance_m"] < 0 and "below the support" in low.message
    assert (
        svc.inspect_contact_geometry(cube, [0, 0, 0], [1, 1, 1, 1]).failure_category.value
        == "invalid_argument"
    )
    assert (
        svc.inspect_contact_geometry(cube, [0.4, 0, 0.1], None, 0.5).failure_category.value
        == "invalid_argument"
    )


def test_inspect_release_geometry_with_held_object():
    held = Box((0.35, -0.12, 0.095), (0.04, 0.04, 0.04), (30, 60, 200))
    b = SynthBackend(objects=[PLATE, held], size_px=320)
    b.tcp["arm"] = Pose([0.35, -0.12, 0.1], [0, 0.7071068, 0.7071068, 0])
    b.opening["arm"] = 0.04
    b.holding["arm"] = True
    s = PerceptionService(b)
    plate = s.segment("plate").value["detections"][0]["id"]
    r = s.inspect_release_geometry(plate)
    assert r.success, r.message
    v = r.value
    assert v["held_object_seen"] is True and v["above_support"] is True
    assert v["expected_drop_m"] == pytest.approx(0.075 - 0.02, abs=0.006)
    assert v["distance_xy_m"] < 0.01
    held.center = (0.6, 0.2, 0.095)
    b.tcp["arm"] = Pose([0.6, 0.2, 0.1], [0, 0.7071068, 0.7071068, 0])
    assert s.inspect_release_geometry(plate).value["above_support"] is False


def test_state_calls(svc):
    st = svc.get_robot_state()
    assert st.success and st.value["end_effector_position_m"] == pytest.approx([0.3, 0.0, 0.35])
    assert st.value["tcp_position_m"] == st.value["end_effector_position_m"]
    assert svc.get_robot_state("arm").value["arm"] == "arm"
    assert svc.get_robot_state("left").failure_category.value == "unknown_id"
    g = svc.gripper_state()
    assert g.value["opening_m"] == pytest.approx(0.07) and g.value["max_opening_m"] == 0.07
    geo = svc.robot_geometry().value
    assert geo["arms"]["arm"]["pad_size_m"] == [0.04, 0.02, 0.008]
    assert "head_optical" in geo["frames"] and "tcp" in geo["frames"]


def test_transform_pose_round_trips_and_camera_frame(svc, handle):
    p = [0.45, 0.05, 0.025]
    r = svc.transform_pose(p, None, "world", "tcp").value
    back = svc.transform_pose(r["position_m"], r["quat_wxyz"], "tcp", "world").value
    assert back["position_m"] == pytest.approx(p, abs=1e-6)
    assert back["quat_wxyz"] == pytest.approx([1, 0, 0, 0], abs=1e-6)
    cam = svc.transform_pose(p, None, "world", "head_optical").value["position_m"]
    frame = svc.observations.get(handle).frame("head")
    k = frame.intrinsics
    uv = [k[0, 0] * cam[0] / cam[2] + k[0, 2], k[1, 1] * cam[1] / cam[2] + k[1, 2]]
    assert uv == pytest.approx(list(project_points(frame, np.array([p]))[0][0]), abs=1e-4)
    base = svc.transform_pose(p, None, "world", "arm_base").value["position_m"]
    assert base == pytest.approx(p)
    assert svc.transform_pose(p, None, "world", "moon").failure_category.value == "unknown_id"
    assert svc.transform_pose([1, 2], None).failure_category.value == "invalid_argument"
    assert svc.transform_pose(p, [0, 0, 0, 2]).failure_category.value == "invalid_argument"


def test_dual_rig_wrist_cameras_and_frames():
    b = SynthBackend(objects=[RED], dual=True, size_px=160)
    s = PerceptionService(b)
    r = s.observe()
    assert r.value["cameras"] == ["head", "left_wrist", "right_wrist"]
    assert set(r.value["robot"]["arms"]) == {"left", "right"}
    assert s.transform_pose([0, 0, 0], None, "left_base", "world").value[
        "position_m"
    ] == pytest.approx([0, 0.25, 0])
    assert s.transform_pose([0, 0, 0], None, "tcp", "world").failure_category.value == "unknown_id"


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.segment(None),
        lambda s: s.segment(""),
        lambda s: s.segment("cube", 5),
        lambda s: s.point(3),
        lambda s: s.mark_point(None, None, None, None),
        lambda s: s.measure_object_geometry("det_0"),
        lambda s: s.measure_object_geometry(None),
        lambda s: s.measure_object_geometry("det_1", shape="blob"),
        lambda s: s.track_target({"id": "det_777"}),
        lambda s: s.compare_object_observations("x", "y"),
        lambda s: s.inspect_release_geometry("det_404"),
        lambda s: s.gripper_state(7),
        lambda s: s.observe(["nope"]),
        lambda s: s.observe(5),
        lambda s: s.measure_image_points("obs_1", "head", [[1, 2, 3]]),
    ],
)
def test_bad_input_never_raises(svc, handle, call):
    r = call(svc)
    assert not r.success and r.failure_category is not None and r.message
    assert r.failure_category.value in ("invalid_argument", "unknown_id", "not_detected")


def test_object_on_destination_rests_on_it():
    on_plate = Box((0.36, -0.11, 0.02 + 0.025), (0.05, 0.05, 0.05), (200, 30, 30), 0.2)
    s = PerceptionService(SynthBackend(objects=[PLATE, on_plate], size_px=320))
    h = s.observe(["head"]).value["handle"]
    cube = s.segment("red cube", h).value["detections"][0]["id"]
    plate = s.segment("plate", h).value["detections"][0]["id"]
    v = s.measure_object_geometry(cube, plate).value
    assert v["resting"] is True and v["support"] == "destination"
    bottom = v["top_z_m"] - v["extents_m"][2]  # what the completion gates read
    assert bottom == pytest.approx(v["destination"]["top_z_m"], abs=0.004)
    assert v["destination"]["object_inside_footprint"] is True
    assert v["destination"]["distance_xy_m"] == pytest.approx(0.01 * 2**0.5, abs=0.004)


def test_shape_prompt_prefers_coloured_objects_and_ignores_the_robot_base():
    base_disc = Cylinder((0.02, 0.0, 0.02), 0.06, 0.04, (120, 120, 125))  # robot base, grey
    grey_disc = Cylinder((0.5, 0.2, 0.005), 0.07, 0.01, (128, 128, 128))
    s = PerceptionService(SynthBackend(objects=[base_disc, grey_disc, PLATE], size_px=320))
    dets = s.segment("plate").value["detections"]
    assert dets[0]["centroid_m"] == pytest.approx(list(PLATE.center), abs=0.005)
    assert all(np.linalg.norm(d["centroid_m"][:2]) > 0.1 for d in dets)  # base never returned
    assert any(d["centroid_m"][:2] == pytest.approx([0.5, 0.2], abs=0.01) for d in dets)
