"""The 36 privileged features x(s_t) of the simulator critic (paper section 3.3, appendix A.2).

Five groups, plus the active goal's positions:

1. end-effector and jaw state (both arms; the second arm's slots are 0 on a single-arm rig);
2. goal bookkeeping: number of goals, number and fraction satisfied, active goal index, whether
   the active goal involves a joint or a contact;
3. distances: target to goal (raw and normalised by its initial value), end-effector to target,
   target to destination (horizontal and vertical), end-effector to destination;
4. target lift and displacement from its initial pose, maximum displacement of any object,
   distance to the nearest other object, target tilt;
5. articulated joint position, change and progress for the active goal, held and ever-held flags.

No counters of the policy's own behaviour (calls, failures, requests) appear here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from captain_ros.core.privileged import PrivilegedState
from captain_ros.tasks.goals import Goal, JointAtLeast
from captain_ros.tasks.tracker import EpisodeTracker

FEATURE_NAMES: tuple[str, ...] = (
    # 1. end-effector and jaw (8)
    "ee0_x_m",
    "ee0_y_m",
    "ee0_z_m",
    "jaw0_opening_m",
    "ee1_x_m",
    "ee1_y_m",
    "ee1_z_m",
    "jaw1_opening_m",
    # 2. goal bookkeeping (6)
    "n_goals",
    "n_satisfied",
    "frac_satisfied",
    "active_goal_frac",
    "active_is_joint",
    "active_is_contact",
    # 3. distances (6)
    "target_to_goal_m",
    "target_to_goal_norm",
    "ee_to_target_m",
    "target_to_dest_xy_m",
    "target_to_dest_z_m",
    "ee_to_dest_m",
    # 4. lift and displacement (5)
    "target_lift_m",
    "target_displacement_m",
    "max_object_displacement_m",
    "nearest_other_m",
    "target_tilt_rad",
    # 5. articulation and holding (5)
    "joint_position",
    "joint_change",
    "joint_progress",
    "held",
    "ever_held",
    # active goal positions (6)
    "target_x_m",
    "target_y_m",
    "target_z_m",
    "dest_x_m",
    "dest_y_m",
    "dest_z_m",
)
N_FEATURES = len(FEATURE_NAMES)
assert N_FEATURES == 36


def critic_features(
    goals: Sequence[Goal], state: PrivilegedState, tracker: EpisodeTracker
) -> np.ndarray:
    """The 36-float feature vector (float32) for ``state``; ``tracker`` must have seen ``state``."""
    x = np.zeros(N_FEATURES, dtype=np.float64)
    arms = state.arm_names[:2]
    for i, arm in enumerate(arms):
        x[4 * i : 4 * i + 3] = state.arm(arm).tcp_position_m
        x[4 * i + 3] = state.arm(arm).jaw_opening_m

    done = [g.satisfied(state) for g in goals]
    n = len(goals)
    active_idx = next((i for i, d in enumerate(done) if not d), n - 1)
    g = goals[active_idx]
    x[8:14] = [
        n,
        sum(done),
        sum(done) / n,
        active_idx / max(n, 1),
        float(g.involves_joint),
        float(g.involves_contact),
    ]

    tgt = state.object(g.target).position_m
    goal_pt = g.goal_point_m(state)
    resid = g.residual(state)
    resid0 = _initial_residual(g, state, tracker)
    ees = [state.arm(a).tcp_position_m for a in arms]
    dest = state.object(g.destination).position_m if g.destination else goal_pt
    x[14] = resid
    x[15] = resid / resid0 if resid0 > 1e-6 else 0.0
    x[16] = min(float(np.linalg.norm(e - tgt)) for e in ees) if ees else 0.0
    x[17] = float(np.linalg.norm(tgt[:2] - dest[:2]))
    x[18] = float(tgt[2] - dest[2])
    x[19] = min(float(np.linalg.norm(e - dest)) for e in ees) if ees else 0.0

    tgt0 = tracker.initial_position_m(state, g.target)
    bodies = list(state.objects)
    disp = [
        float(np.linalg.norm(state.object(b).position_m - tracker.initial_position_m(state, b)))
        for b in bodies
    ]
    others = [
        float(np.linalg.norm(state.object(b).position_m - tgt))
        for b in bodies
        if b not in (g.target, g.destination)
    ]
    x[20] = float(tgt[2] - tgt0[2])
    x[21] = float(np.linalg.norm(tgt - tgt0))
    x[22] = max(disp) if disp else 0.0
    x[23] = min(others) if others else 0.0
    x[24] = state.object(g.target).tilt_rad(bool(getattr(g, "any_face_down", False)))

    if isinstance(g, JointAtLeast):
        q = state.joint(g.joint, 0.0)
        q0 = tracker.initial_joint(state, g.joint)
        x[25] = q
        x[26] = q - q0
        x[27] = (q - q0) / (g.open_m - q0) if g.open_m - q0 > 1e-9 else 1.0
    x[28] = float(state.object(g.target).held)
    x[29] = float(
        g.target in tracker.ever_held
        or state.object(g.target).held
        or state.object(g.target).ever_held
    )
    x[30:33] = tgt
    x[33:36] = dest
    return x.astype(np.float32)


def _initial_residual(g: Goal, state: PrivilegedState, tracker: EpisodeTracker) -> float:
    """Residual of ``g`` at the episode start, approximated from the tracker's initial poses."""
    if isinstance(g, JointAtLeast):
        return float(max(0.0, g.open_m - tracker.initial_joint(state, g.joint)))
    p0 = tracker.initial_position_m(state, g.target)
    return float(np.linalg.norm(p0 - g.goal_point_m(state)))
