"""The motion layer runs unchanged on the kinematic FakeBackend (backends are interchangeable)."""

from __future__ import annotations

import numpy as np

from captain_ros.backends import make_backend
from captain_ros.core.result import FailureCategory
from captain_ros.motion import MotionService

DOWN_FAKE = [0.0, 1.0, 0.0, 0.0]  # the fake's home orientation (roll = pi): tool z down


def test_pick_and_lift_on_fake_backend() -> None:
    b = make_backend("fake")
    m = MotionService(b)
    box = np.array(b.privileged_state().object("red_box").position_m)
    assert m.move_to([box[0], box[1], 0.15], DOWN_FAKE).success
    assert m.move_to(jaw="open").success
    r = m.move_to([box[0], box[1], box[2]])
    assert r.success, r.message
    grip = m.move_to(jaw="close")
    assert grip.success and grip.value["holding"]
    lift = m.move_to([box[0], box[1], 0.15], mode="manipulation")
    assert lift.success
    assert b.privileged_state().object("red_box").position_m[2] > box[2] + 0.08
    assert m.recover(0.05).success
    assert m.release().success


def test_fake_backend_guarded_stop_and_bad_input() -> None:
    b = make_backend("fake")
    m = MotionService(b)
    box = np.array(b.privileged_state().object("red_box").position_m)
    assert m.move_to([box[0], box[1], 0.15], DOWN_FAKE).success
    assert m.move_to(jaw="close").success
    r = m.move_to([box[0], box[1], box[2]])  # closed jaw onto the box top
    assert r.failure_category in (FailureCategory.CONTACT, FailureCategory.COLLISION)
    before = b.snapshot()
    assert m.move_to([np.nan, 0, 0]).failure_category == FailureCategory.INVALID_ARGUMENT
    after = b.snapshot()
    assert b.ee_pose("arm") == b.ee_pose("arm") and type(before) is type(after)
