"""Snapshot determinism: restore then replay is bit-identical, in-process and across processes."""

from __future__ import annotations

import multiprocessing as mp
import pickle

import numpy as np

from captain_ros.backends.mujoco import MujocoBackend
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.scene import SceneSpec
from captain_ros.core.types import ForceGuard
from captain_ros.motion import MotionService

CUBES = "".join(
    f'<body name="cube{i}" pos="{0.28 + 0.05 * i} {0.02 - 0.04 * i} {0.02 + 0.05 * i}"><freejoint name="cube{i}"/>'
    f'<geom type="box" size="0.02 0.02 0.02" rgba="0.2 0.{i}5 0.8 1" mass="0.05"/></body>'
    for i in range(3)
)
SCENE = SceneSpec(
    rig="piper", worldbody_xml=CUBES, object_bodies=("cube0", "cube1", "cube2"), seed=11
)


def replay(backend: MujocoBackend, n_ticks: int = 40) -> np.ndarray:
    """Noisy joint commands drawn from the backend RNG, a jaw command and a guarded move."""
    rows = []
    q0 = backend.joint_state("arm").position_rad
    for k in range(n_ticks):
        q = q0 + backend.rng.normal(0.0, 0.02, 6)
        if k == 10:
            backend.command_gripper("arm", 0.03)
        backend.servo({"arm": q}, 0.02, ForceGuard(stop_force_n=5.0, emergency_force_n=80.0))
        rows.append(np.concatenate([backend.data.qpos, backend.data.qvel, [backend.data.time]]))
    MotionService(backend).move_to([0.30, 0.02, 0.07], [0.0, 0.0, 1.0, 0.0], speed_m_s=0.1)
    rows.append(np.concatenate([backend.data.qpos, backend.data.qvel, [backend.data.time]]))
    return np.array(rows)


def _child(blob: bytes) -> bytes:
    backend = MujocoBackend(SCENE)
    backend.restore(pickle.loads(blob))
    return pickle.dumps(replay(backend))


def _settled() -> MujocoBackend:
    b = MujocoBackend(SCENE)
    for _ in range(25):  # let the dropped cube land, so contacts and warm starts are non-trivial
        b.servo({}, 0.02, ForceGuard(stop_force_n=50.0, emergency_force_n=80.0))
    b.rng.normal(size=3)
    return b


def test_restore_replay_bit_identical_in_process() -> None:
    b = _settled()
    snap = b.snapshot()
    first = replay(b)
    b.restore(snap)
    second = replay(b)
    assert first.tobytes() == second.tobytes()
    # a fresh backend of the same scene restores the same way
    c = MujocoBackend(SCENE)
    c.restore(snap)
    assert replay(c).tobytes() == first.tobytes()


def test_restore_replay_bit_identical_across_processes() -> None:
    b = _settled()
    snap = b.snapshot()
    blob = pickle.dumps(snap)
    here = replay(b)
    with mp.get_context("spawn").Pool(1) as pool:
        there = pickle.loads(pool.apply(_child, (blob,)))
    assert here.tobytes() == there.tobytes()


def test_snapshot_covers_python_side_state() -> None:
    b = _settled()
    snap = b.snapshot()
    b.command_gripper("arm", 0.0)
    b.estop("x")
    b.rng.normal()
    b.restore(snap)
    assert b.estopped, "restoring never releases a latched e-stop; only an operator does"
    b.reset_estop()
    assert not b.estopped
    assert b.gripper("arm").command_m == snap.gripper_cmd_m["arm"]
    assert b.rng.bit_generator.state == snap.rng_state
    other = MujocoBackend(None)
    try:
        other.restore(snap)
    except InvalidArgumentError:
        pass
    else:  # pragma: no cover
        raise AssertionError("restoring a snapshot of another scene must fail")


def test_readings_are_a_function_of_the_state() -> None:
    """A motion planned right after restore equals the one planned after the original ticks."""
    b = _settled()
    snap = b.snapshot()
    m = MotionService(b)
    m.move_to([0.32, 0.0, 0.06], [0.0, 0.0, 1.0, 0.0], speed_m_s=0.1)
    first = np.concatenate([b.data.qpos, b.data.qvel])
    b.restore(snap)
    MotionService(b).move_to([0.32, 0.0, 0.06], [0.0, 0.0, 1.0, 0.0], speed_m_s=0.1)
    assert first.tobytes() == np.concatenate([b.data.qpos, b.data.qvel]).tobytes()
