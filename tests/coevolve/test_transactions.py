"""Dispatched transactions on the MuJoCo pair: skill wrappers, the physical verifier, checkpoints,
verified rollback and fingerprints."""

from __future__ import annotations

import math

import pytest

from captain_ros.backends.humanoid.layouts import get_layout
from captain_ros.backends.humanoid.sim import MujocoHumanoidPair
from captain_ros.research.coevolve.checkpoint import CheckpointStore, RestorationError, fingerprint
from captain_ros.research.coevolve.motor import MotorInterface, Trapezoid
from captain_ros.research.coevolve.observation import observe
from captain_ros.research.coevolve.plan import Plan
from captain_ros.research.coevolve.strategy import Coordination, Objective
from captain_ros.research.coevolve.verifier import Verifier

LAYOUT = get_layout("base")
PEER = ("peer", "peer")


def z(primitive, kind, target="", mode="synchronous", roles=PEER):
    return Coordination(primitive, Objective(kind, target), mode, roles)


@pytest.fixture(scope="module")
def lifted():
    """A pair after an accepted initialization, and its checkpoint store."""
    bridge = MujocoHumanoidPair(LAYOUT, seed=11)
    motor = MotorInterface(bridge)
    plan = Plan.for_layout(LAYOUT)
    store = CheckpointStore(bridge, motor)
    pre = observe(bridge.privileged_state(), LAYOUT)
    store.commit(0, pre, (), plan)
    zi = z("initialization", "initialize")
    trace = motor.execute(zi, {"robot_a": {}, "robot_b": {}})
    post = observe(bridge.privileged_state(), LAYOUT)
    ev = Verifier(LAYOUT).verify(pre, zi, {}, post, trace, plan.active(), ())
    plan = plan.close(set(ev.completed_phases))
    store.commit(1, post, (), plan)
    return bridge, motor, store, plan, ev


def run(lifted, coord, theta):
    bridge, motor, store, plan, _ = lifted
    store.rollback()
    pre = store.latest.observation
    trace = motor.execute(coord, theta)
    post = observe(bridge.privileged_state(), LAYOUT)
    return Verifier(LAYOUT).verify(pre, coord, theta, post, trace, plan.active(), ()), trace, post


def test_initialization_lifts_the_payload_and_completes_the_phase(lifted):
    _, _, store, plan, ev = lifted
    assert ev.accepted and ev.completed_phases == ("initialize",) and not ev.setup_only
    obs = store.latest.observation
    assert obs.payload["supported"] and "start_support" not in obs.payload["touches"]
    assert obs.payload["lowest_z_m"] > 0.815 and plan.active().name == "traverse_gate_1"


def test_transport_that_crosses_a_gate_certifies_it(lifted):
    args = {"direction_xy": [1.0, 0.0], "distance_m": 1.5, "speed_m_s": 0.2}
    ev, trace, post = run(
        lifted,
        z("coordinated_linear_transport", "reach_gate", "gate_1"),
        {"robot_a": args, "robot_b": dict(args)},
    )
    assert ev.accepted and ev.setup_only and ev.certified == ()  # 1.5 m: not yet at gate 1 (2.2 m)
    assert post.route["s_m"] == pytest.approx(1.5, abs=0.15)
    assert [c.name for c in ev.checks] == [
        "payload_not_dropped",
        "payload_supported",
        "formation_spacing",
        "formation_facing",
        "payload_tilt_during",
        "payload_tilt_final",
        "robots_upright",
        "environment_contacts",
        "phase_validity",
        "progress",
    ]


def test_a_quarter_turn_too_fast_for_the_outer_robot_is_rejected_with_the_clipped_command(lifted):
    theta = {
        "robot_a": {"role": "outer_mover", "angle_rad": 1.57, "angular_speed_rad_s": 0.4},
        "robot_b": {"role": "inner_support", "angle_rad": 1.57, "angular_speed_rad_s": 0.4},
    }
    pivot = z(
        "coordinated_pivot", "turn", "segment_0", "asymmetric", ("outer_mover", "inner_support")
    )
    ev, trace, _ = run(lifted, pivot, theta)
    assert not ev.accepted and ev.failure_level in ("drop", "support", "stability")
    assert trace.clipped["robot_a"] and "vy" in trace.clipped["robot_a"][0]
    assert "clipped" in ev.summary and "robot_a" in ev.culprit


def test_a_robot_walked_into_the_wall_is_an_environment_contact(lifted):
    bridge, _, store, plan, _ = lifted
    away = {"direction_xy": [1.0, 0.0], "distance_m": 1.2, "speed_m_s": 0.2}
    ev, _, post = run(
        lifted,
        z("coordinated_linear_transport", "reach_gate", "gate_1"),
        {"robot_a": away, "robot_b": dict(away)},
    )
    assert ev.accepted  # clear of the start pedestal
    store.commit(2, post, (), plan)
    try:
        args = {"direction_xy": [0.0, 1.0], "distance_m": 0.6, "speed_m_s": 0.15}
        ev, _, _ = run(
            lifted,
            z("coordinated_linear_transport", "recentre", "segment_0"),
            {"robot_a": args, "robot_b": dict(args)},
        )
        assert (
            not ev.accepted
            and ev.failure_type == "wall_contact"
            and ev.culprit.startswith("robot_b")
        )
        check = next(c for c in ev.checks if c.name == "environment_contacts")
        assert any("robot_b" in c and "wall_" in c for c in check.value)
    finally:
        store.checkpoints.pop()


def test_phase_validity_is_checked(lifted):
    args = {"lower_m": 0.1, "speed_m_s": 0.05}
    ev, _, _ = run(lifted, z("placement", "place"), {"robot_a": args, "robot_b": dict(args)})
    assert not ev.accepted
    check = next(c for c in ev.checks if c.name == "phase_validity")
    assert not check.ok and "not valid in phase traverse_gate_1" in check.detail


def test_rollback_restores_the_checkpoint_bit_for_bit(lifted):
    bridge, motor, store, _, _ = lifted
    ck = store.rollback()
    assert bridge.privileged_state()["digest"] != "" and ck.transaction == 1
    args = {"direction_xy": [1.0, 0.0], "distance_m": 0.3, "speed_m_s": 0.2}
    motor.execute(
        z("coordinated_linear_transport", "reach_gate", "gate_1"),
        {"robot_a": args, "robot_b": args},
    )
    assert bridge.snapshot().digest != ck.digest
    assert store.rollback() is ck and bridge.restore(ck.snapshot) == ck.digest

    class Lying:
        def restore(self, snap):
            return "not-the-digest"

        def command_velocity(self, *a):
            pass

    liar = CheckpointStore(Lying(), motor)  # type: ignore[arg-type]
    liar.checkpoints.append(ck)
    with pytest.raises(RestorationError, match="digest"):
        liar.rollback()


def test_fingerprints_block_an_identical_rejected_transaction_only_at_its_checkpoint(lifted):
    _, _, store, _, _ = lifted
    theta = {"robot_a": {"hold_s": 3.0}, "robot_b": {"hold_s": 3.0}}
    progs = {
        "robot_a": "robot_a.release(hold_s=3.0)\nrobot_a.stop()",
        "robot_b": "robot_b.release(hold_s=3.0)\nrobot_b.stop()",
    }
    fp = fingerprint(store.latest.id, progs, theta)
    reformatted = {r: "# comment\n" + p.replace("=3.0", " = 3.0") for r, p in progs.items()}
    assert fingerprint(store.latest.id, reformatted, theta) == fp  # normalised policy
    assert fingerprint(store.latest.id, progs, {**theta, "robot_b": {"hold_s": 3.5}}) != fp
    assert fingerprint("ckpt_0", progs, theta) != fp
    assert not store.blocked(fp)
    store.reject(fp)
    assert store.blocked(fp)


def test_trapezoid_profile_covers_the_distance():
    for total, v, a in ((1.5, 0.3, 0.5), (0.1, 0.3, 0.5), (-1.57, 0.2, 0.4)):
        p = Trapezoid(total, v, a)
        dt = 1e-3
        covered = sum(p.rate(k * dt) * dt for k in range(int(p.duration_s / dt) + 2))
        assert covered == pytest.approx(total, rel=5e-3)
        assert max(abs(p.rate(k * dt)) for k in range(int(p.duration_s / dt))) <= v + 1e-12
    assert Trapezoid(0.0, 0.3, 0.5).duration_s == 0.0 and math.isfinite(
        Trapezoid(1, 1, 1).duration_s
    )


class _StalledCoordinator(MujocoHumanoidPair):
    """The pair as a coordinator sees it when it misses planner ticks (a loaded machine, over
    ROS the controller free-runs meanwhile): the tick after ``at_s`` into the transaction returns
    ``late_s`` later than asked."""

    def __init__(self, at_s: float, late_s: float) -> None:
        super().__init__(LAYOUT, seed=11)
        self.at_s, self.late_s, self.t0, self.fired = at_s, late_s, None, False

    def reset_monitor(self) -> None:
        super().reset_monitor()
        self.t0 = self.time_s()

    def advance(self, duration_s):
        if not self.fired and self.t0 is not None and self.time_s() - self.t0 >= self.at_s:
            self.fired = True
            duration_s += self.late_s
        return super().advance(duration_s)


@pytest.mark.parametrize("at_s", [5.85, 6.85])
def test_a_stalled_coordinator_still_sends_every_event_and_lets_it_settle(at_s):
    """A tick that jumps past an event and the program's end (the lift at 6 s, the end at 7 s)
    still sends it, and the transaction runs the time the program leaves after it. Before, such a
    stall rejected the initialization ("payload lifted 0.000 m"): the likely cause of a CI run over
    ROS whose first transaction was rejected (its log kept no evidence)."""
    bridge = _StalledCoordinator(at_s, 2.0)
    motor = MotorInterface(bridge)
    plan = Plan.for_layout(LAYOUT)
    pre = observe(bridge.privileged_state(), LAYOUT)
    zi = z("initialization", "initialize")
    trace = motor.execute(zi, {"robot_a": {}, "robot_b": {}})
    post = observe(bridge.privileged_state(), LAYOUT)
    ev = Verifier(LAYOUT).verify(pre, zi, {}, post, trace, plan.active(), ())
    assert bridge.fired and ev.accepted, ev.summary
    assert trace.duration_s >= at_s + 2.0 + 0.6
    assert post.payload["supported"] and "start_support" not in post.payload["touches"]
