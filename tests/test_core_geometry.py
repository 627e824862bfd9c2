"""Pose/quaternion maths: validation and round trips (property tests)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from captain_ros.core import (
    InvalidArgumentError,
    Pose,
    matrix_to_quat,
    quat_multiply,
    quat_to_matrix,
)
from captain_ros.core.geometry import quat_conjugate, yaw_of_quat

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
quats = st.tuples(finite, finite, finite, finite).filter(lambda q: np.linalg.norm(q) > 1e-3)


def _unit(q):
    q = np.asarray(q, dtype=float)
    return q / np.linalg.norm(q)


@settings(max_examples=60, deadline=None)
@given(quats)
def test_quat_matrix_round_trip(q):
    q = _unit(q)
    m = quat_to_matrix(q)
    assert np.allclose(m @ m.T, np.eye(3), atol=1e-9)
    assert np.isclose(np.linalg.det(m), 1.0)
    q2 = matrix_to_quat(m)
    assert np.allclose(q2, q, atol=1e-6) or np.allclose(
        q2, -q, atol=1e-6
    )  # q and -q: same rotation
    assert q2[0] >= 0


@settings(max_examples=60, deadline=None)
@given(quats, quats)
def test_quat_product_matches_matrix_product(a, b):
    a, b = _unit(a), _unit(b)
    assert np.allclose(
        quat_to_matrix(quat_multiply(a, b)), quat_to_matrix(a) @ quat_to_matrix(b), atol=1e-9
    )
    assert np.allclose(quat_multiply(a, quat_conjugate(a)), [1, 0, 0, 0], atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.tuples(finite, finite, finite), quats)
def test_pose_inverse_and_compose(p, q):
    pose = Pose(p, _unit(q))
    ident = pose.compose(pose.inverse())
    assert np.allclose(ident.position_m, 0, atol=1e-9)
    assert np.allclose(ident.quat_wxyz, [1, 0, 0, 0], atol=1e-7)
    assert np.allclose(Pose.from_matrix(pose.matrix()).matrix(), pose.matrix(), atol=1e-9)


def test_yaw_of_quat():
    yaw = 0.7
    q = np.array([np.cos(yaw / 2), 0, 0, np.sin(yaw / 2)])
    assert yaw_of_quat(q) == pytest.approx(yaw)


@pytest.mark.parametrize(
    "position, quat",
    [
        ([0, 0, np.nan], [1, 0, 0, 0]),
        ([0, 0], [1, 0, 0, 0]),
        ([0, 0, 0], [1, 0, 0]),
        ([0, 0, 0], [2, 0, 0, 0]),
        ([0, 0, 0], [0, 0, 0, 0]),
        ("abc", [1, 0, 0, 0]),
        ([0, 0, 0], [1, 0, np.inf, 0]),
    ],
)
def test_pose_rejects_bad_input(position, quat):
    with pytest.raises(InvalidArgumentError):
        Pose(position, quat)


def test_pose_is_immutable():
    pose = Pose([0.1, 0.2, 0.3])
    with pytest.raises(ValueError):
        pose.position_m[0] = 1.0


def test_trusted_pose_normalises_and_is_read_only():
    pose = Pose.trusted(np.array([0.1, 0.2, 0.3]), np.array([-2.0, 0.0, 0.0, 0.0]))
    assert np.allclose(pose.quat_wxyz, [1, 0, 0, 0]) and pose.frame == "world"
    assert pose == Pose([0.1, 0.2, 0.3])  # same value as the validating constructor
    with pytest.raises(ValueError):
        pose.quat_wxyz[0] = 0.5
