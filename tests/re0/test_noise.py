"""The stochastic simulation mode: paired draws are identical, deterministic mode is unchanged."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from captain_ros.backends.mujoco import MujocoBackend
from captain_ros.backends.mujoco.noise import NoiseDraw, NoiseSpec
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.types import ForceGuard
from captain_ros.tasks import get_task

SCENE = get_task("pick_place").sample(5)
GUARD = ForceGuard(stop_force_n=5.0, emergency_force_n=80.0)
STATIC = (
    "body_mass",
    "body_inertia",
    "geom_friction",
    "dof_invweight0",
    "body_invweight0",
    "body_subtreemass",
    "actuator_acc0",
)


def _roll(b: MujocoBackend, ticks: int = 30) -> tuple[np.ndarray, dict]:
    q0 = b.joint_state("arm").position_rad
    rows = []
    for k in range(ticks):
        b.servo({"arm": q0 + 0.01 * k}, 0.02, GUARD)
        rows.append(np.concatenate([b.data.qpos, b.data.qvel]))
    return np.array(rows), b.capture()


@pytest.fixture(scope="module")
def draw() -> NoiseDraw:
    return NoiseDraw(NoiseSpec(), 7)


def test_deterministic_mode_is_unchanged_bit_for_bit(draw):
    a, b = MujocoBackend(SCENE), MujocoBackend(SCENE, noise=None)
    ra, fa = _roll(a)
    rb, fb = _roll(b)
    assert ra.tobytes() == rb.tobytes() and fa["head"].rgb.tobytes() == fb["head"].rgb.tobytes()
    assert a.snapshot().extra == {} and a.noise_draw is None
    # a backend that was noisy and is switched back is the compiled model again
    c = MujocoBackend(SCENE, noise=draw)
    c.apply_noise(None)
    assert all(getattr(c.model, n).tobytes() == getattr(a.model, n).tobytes() for n in STATIC)
    c2 = MujocoBackend(SCENE)
    assert _roll(c)[0].tobytes() == _roll(c2)[0].tobytes()


def test_paired_draws_are_identical_across_arms_and_processes_of_data(draw):
    """The two arms of a pair get the same draw (a NoiseDraw or its dict, as a worker gets it)."""
    a, b = MujocoBackend(SCENE, noise=draw), MujocoBackend(SCENE, noise=draw.to_dict())
    ra, fa = _roll(a)
    rb, fb = _roll(b)
    assert ra.tobytes() == rb.tobytes()
    assert all(
        fa[c].rgb.tobytes() == fb[c].rgb.tobytes()
        and fa[c].depth_m.tobytes() == fb[c].depth_m.tobytes()
        for c in fa
    )
    assert a.model.body_mass.tobytes() == b.model.body_mass.tobytes()


def test_each_part_perturbs_and_other_seeds_differ(draw):
    det = MujocoBackend(SCENE)
    noisy, other = (
        MujocoBackend(SCENE, noise=draw),
        MujocoBackend(SCENE, noise=NoiseDraw(NoiseSpec(), 8)),
    )
    still_d, still_n = (
        det.capture(),
        noisy.capture(),
    )  # the same state: only the camera noise differs
    rd, fd = _roll(det)
    rn, fn = _roll(noisy)
    ro, _ = _roll(other)
    assert not np.array_equal(rd, rn) and not np.array_equal(rn, ro)
    rgb_diff = still_n["head"].rgb.astype(float) - still_d["head"].rgb.astype(float)
    assert 1.0 < float(np.std(rgb_diff)) < 3.0
    depth_d, depth_n = still_d["head"].depth_m, still_n["head"].depth_m
    assert np.array_equal(depth_d == 0, depth_n == 0)  # no depth stays no depth
    assert 0.0005 < float(np.std((depth_n - depth_d)[depth_d > 0])) < 0.002
    objects = [noisy.model.body(n).id for n in SCENE.object_bodies]
    ratio = noisy.model.body_mass[objects] / det.model.body_mass[objects]
    assert np.all(np.abs(ratio - 1) <= 0.15) and np.any(ratio != 1)
    only_rgb = MujocoBackend(SCENE, noise=NoiseDraw(NoiseSpec(0.0, 0.0, 0.0, 0.0, 0.0, 0.0), 3))
    r0, f0 = _roll(only_rgb)
    assert r0.tobytes() == rd.tobytes() and f0["head"].rgb.tobytes() == fd["head"].rgb.tobytes()


def test_snapshots_carry_the_noise_exactly(draw):
    b = MujocoBackend(SCENE, noise=draw)
    _roll(b, 5)
    snap = b.snapshot()
    first = _roll(b)
    b.apply_noise(NoiseDraw(NoiseSpec(), 99))  # a counterfactual continuation's draw...
    _roll(b, 3)
    b.restore(snap)  # ...and back: the saved draw and the streams' positions return
    second = _roll(b)
    assert first[0].tobytes() == second[0].tobytes()
    assert first[1]["head"].rgb.tobytes() == second[1]["head"].rgb.tobytes()
    fresh = MujocoBackend(SCENE)
    fresh.restore(pickle.loads(pickle.dumps(snap)))  # another backend, from plain bytes
    assert fresh.noise_draw == draw and _roll(fresh)[0].tobytes() == first[0].tobytes()
    fresh.restore(MujocoBackend(SCENE).snapshot())  # a deterministic snapshot clears the noise
    assert fresh.noise_draw is None


def test_a_new_draw_after_restore_gives_paired_continuations(draw):
    """Both arms of pair m restore s_t and apply xi_m: identical until their actions differ."""
    base = MujocoBackend(SCENE, noise=draw)
    _roll(base, 5)
    snap = base.snapshot()
    xi = NoiseDraw(NoiseSpec(), 1234)
    arms = []
    for _ in range(2):
        base.restore(snap)
        base.apply_noise(xi)
        arms.append(_roll(base)[0])
    assert arms[0].tobytes() == arms[1].tobytes()


@pytest.mark.parametrize(
    "bad",
    [
        {"rgb_sigma": -1.0},
        {"mass_scale": 1.0},
        {"depth_sigma_m": float("nan")},
        {"friction_scale": "x"},
    ],
)
def test_bad_specs_are_refused(bad):
    with pytest.raises(InvalidArgumentError):
        NoiseSpec(**bad)


def test_bad_draws_are_refused():
    with pytest.raises(InvalidArgumentError):
        NoiseDraw(NoiseSpec(), -1)
    with pytest.raises(InvalidArgumentError, match="not a noise draw"):
        NoiseDraw.from_dict({"spec": {"nope": 1}, "seed": 1})
    with pytest.raises(InvalidArgumentError):
        MujocoBackend(SCENE, noise=3)  # type: ignore[arg-type]
