"""Core dataclasses <-> ROS messages round-trip exactly (and through CDR serialization)."""

import json

import numpy as np
import pytest
from captain_ros_interfaces.msg import Receipt
from captain_ros_interfaces.srv import RobotCall
from rclpy.serialization import deserialize_message, serialize_message

from captain_ros.core import FailureCategory, Pose, Result
from captain_ros.ros import convert


def test_result_receipt_round_trip_through_cdr():
    r = Result.fail(
        FailureCategory.CONTACT,
        "stopped at contact; recover or re-plan",
        executed=True,
        value={"distance_m": np.float64(0.031), "q": np.arange(3.0)},
        diagnostics={"peak_force_n": 6.2, "bad": float("nan")},
        receipt="guarded stop",
    )
    r = r.with_budget({"requests_left": 9})
    msg = convert.result_to_receipt(
        r, "move_to", episode_id="ep1", request_index=3, call_index=7, stamp_s=12.25, duration_s=0.5
    )
    back = deserialize_message(serialize_message(msg), Receipt)
    assert (back.capability, back.request_index, back.call_index) == ("move_to", 3, 7)
    assert convert.from_time(back.stamp) == 12.25
    r2 = convert.receipt_to_result(back)
    assert r2.failure_category is FailureCategory.CONTACT and r2.executed and not r2.success
    assert r2.value == {"distance_m": 0.031, "q": [0.0, 1.0, 2.0]}
    assert r2.diagnostics == {"peak_force_n": 6.2, "bad": None}
    assert r2.budget == {"requests_left": 9} and r2.receipt == "guarded stop"


def test_robot_call_request_and_response():
    req = convert.make_call_request(
        "move_to", {"position": np.array([0.3, 0.0, 0.2])}, episode_id="e", request_index=2
    )
    assert convert.parse_call_request(req) == ("move_to", {"position": [0.3, 0.0, 0.2]})
    resp = convert.fill_call_response(RobotCall.Response(), Result.ok("done", {"x": 1}))
    assert resp.success and resp.failure_category == ""
    assert convert.call_response_to_result(resp).value == {"x": 1}
    bad = RobotCall.Response(result_json="{not json")
    assert convert.call_response_to_result(bad).failure_category is FailureCategory.INTERNAL_ERROR
    req.kwargs_json = json.dumps([1, 2])
    try:
        convert.parse_call_request(req)
    except ValueError:
        pass
    else:
        raise AssertionError("a non-object kwargs_json must be rejected")


def test_pose_quaternion_order_and_tf():
    pose = Pose([0.1, -0.2, 0.3], [np.cos(0.3), 0.0, 0.0, np.sin(0.3)])
    msg = convert.pose_to_msg(pose)
    # Pose normalises its quaternion, so values agree to rounding, not bit for bit
    assert msg.orientation.w == pytest.approx(np.cos(0.3), abs=1e-12)
    assert msg.orientation.z == pytest.approx(np.sin(0.3), abs=1e-12)
    assert msg.orientation.x == 0.0 and msg.orientation.y == 0.0
    back = convert.msg_to_pose(msg)
    assert back.frame == pose.frame
    np.testing.assert_allclose(back.position_m, pose.position_m, rtol=0, atol=1e-12)
    np.testing.assert_allclose(back.quat_wxyz, pose.quat_wxyz, rtol=0, atol=1e-12)
    tf = convert.transform_msg("world", "arm_tcp", pose, convert.to_time(1.5))
    assert tf.header.frame_id == "world" and tf.child_frame_id == "arm_tcp"
    assert tf.transform.rotation.w == msg.orientation.w


def test_images_and_detections():
    rgb = np.random.default_rng(0).integers(0, 255, (4, 5, 3), dtype=np.uint8)
    depth = np.linspace(0.1, 2.0, 20, dtype=np.float32).reshape(4, 5)
    stamp = convert.to_time(0.0)
    assert np.array_equal(
        convert.image_to_array(convert.image_msg(rgb, stamp, "head_optical_frame")), rgb
    )
    assert np.array_equal(convert.image_to_array(convert.image_msg(depth, stamp, "f")), depth)
    det = {
        "id": "det_1",
        "label": "red cube",
        "score": 0.5,
        "centroid_m": [0.3, 0.1, 0.02],
        "extents_m": [0.04, 0.04, 0.04],
        "pixel_uv": [10.0, 20.0],
        "area_px": 99,
        "handle": "obs_1",
        "camera": "head",
    }
    assert convert.msg_to_detection(convert.detection_to_msg(det)) == det


def test_time_conversion_never_overflows_nanoseconds():
    t = convert.to_time(1.9999999999)
    assert t.nanosec <= 999_999_999
