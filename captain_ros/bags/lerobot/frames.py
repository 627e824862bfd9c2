"""An episode's streams on one fixed-rate frame clock: sample-and-hold, never interpolated.

Frame ``k`` is at ``t0 + k / fps``. Every stream contributes, at each frame, its latest sample at
or before that time (zero-order hold): no value is invented between two samples, and how old the
held sample is goes with it (``captain.sample_age_s``, per stream: the joint states, then each
camera). ``t0`` is the first instant at which every exported stream (joint states, each arm's
end-effector pose and wrench, each camera) has a sample, so no frame holds a value from the
future; the last frame is the last joint-state sample. ``action`` is what the robot node commanded
(``/captain/joint_commands``: the joint targets of the latest control tick and the jaw target at
or before the frame; before the episode's first command the arm holds where it stands, so the
frame's own measured joints and jaws). A bag without that topic (the in-process bag of ``captain
run``, older bags) has no command stream: there ``action`` is the next frame's measured joint
positions and jaw openings (the last frame repeats its own). ``captain.next_state`` is that
next-frame column in every export, and ``captain.action_commanded`` says per frame which one
``action`` holds.

Code-as-policy columns: ``captain.request_index`` (the request whose code was running: request
``t`` runs from the end of request ``t-1``, or the episode start, to its own end, its record's
time in the bag), ``captain.code`` (that request's code cells) and ``captain.receipts`` (the receipts of
the robot calls that ended in ``(previous frame, this frame]``, one ``capability: receipt`` line
each; those before the first frame go to the first, those after the last to the last, so every
receipt appears exactly once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from captain_ros.bags.lerobot.episode import Episode, ExportError, Samples

NS = 1_000_000_000


@dataclass(frozen=True)
class Frames:
    """One episode on the frame clock: ``t_ns`` [ns] and the data columns (one row per frame)."""

    t_ns: np.ndarray
    columns: dict[str, np.ndarray]
    lead_s: float
    """Time from the episode's first joint state to its first frame [s] (streams not yet there)."""


def held(s: Samples, t_ns: np.ndarray) -> np.ndarray:
    """Index of each time's latest sample at or before it (``-1``: none yet)."""
    return np.searchsorted(s.t_ns, t_ns, side="right") - 1


def frame_clock(ep: Episode, fps: int, cameras: tuple[str, ...]) -> np.ndarray:
    """The frame times [ns] of an episode (see the module doc)."""
    firsts = [ep.position.t_ns[0]]
    firsts += [ep.ee_pose[a].t_ns[0] for a in ep.arms] + [ep.wrench[a].t_ns[0] for a in ep.arms]
    for cam in cameras:
        times = ep.image_times.get(cam)
        if times is None or not len(times):
            have = ", ".join(sorted(c for c, t in ep.image_times.items() if len(t))) or "none"
            raise ExportError(
                f"{ep.source}: no /camera/{cam}/image_raw message (cameras with images: "
                f"{have}; choose with --cameras, or --cameras none)"
            )
        firsts.append(times[0])
    t0, end = int(max(firsts)), int(ep.position.t_ns[-1])
    if end < t0:
        raise ExportError(f"{ep.source}: the joint states end before every stream has started")
    n = int((end - t0) * fps // NS) + 1
    if n < 2:
        raise ExportError(f"{ep.source}: shorter than two frames at {fps} fps")
    return t0 + (np.arange(n, dtype=np.int64) * NS) // fps


def resample(
    ep: Episode, fps: int, cameras: tuple[str, ...], episode_index: int, task_index: int
) -> Frames:
    """The episode's data columns at ``fps`` (images excepted: :mod:`.video` encodes them)."""
    t = frame_clock(ep, fps, cameras)
    n = len(t)

    def hold(s: Samples) -> np.ndarray:
        return s.values[held(s, t)]

    state = hold(ep.position)
    grip = hold(ep.gripper)
    ages = [(t - ep.position.t_ns[held(ep.position, t)]) / NS]
    ages += [
        (t - ep.image_times[c][np.searchsorted(ep.image_times[c], t, side="right") - 1]) / NS
        for c in cameras
    ]
    nxt = np.minimum(np.arange(n) + 1, n - 1)
    next_state = np.concatenate([state[nxt], grip[nxt]], 1)
    action, commanded = next_state, np.zeros(n, bool)
    if ep.command is not None:
        i = held(ep.command, t)
        commanded = i >= 0
        now = np.concatenate([state, grip], 1)
        action = np.where(commanded[:, None], ep.command.values[np.maximum(i, 0)], now)
    done = np.zeros(n, bool)
    done[-1] = True
    success = done & bool(ep.summary.get("host_success"))
    reward = np.zeros(n, np.float32)
    reward[-1] = float(ep.summary.get("return_R") or 0.0)
    req = _request_index(ep, t)
    code = _codes(ep)
    cols: dict[str, np.ndarray] = {
        "observation.state": state.astype(np.float32),
        "observation.velocity": hold(ep.velocity).astype(np.float32),
        "observation.effort": hold(ep.effort).astype(np.float32),
        "observation.gripper": grip.astype(np.float32),
        "observation.ee_pose": np.concatenate([hold(ep.ee_pose[a]) for a in ep.arms], 1).astype(
            np.float32
        ),
        "observation.wrench": np.concatenate([hold(ep.wrench[a]) for a in ep.arms], 1).astype(
            np.float32
        ),
        "action": action.astype(np.float32),
        "captain.next_state": next_state.astype(np.float32),
        "captain.action_commanded": commanded,
        "next.reward": reward,
        "next.done": done,
        "next.success": success,
        "captain.sample_age_s": np.stack(ages, 1).astype(np.float32),
        "captain.request_index": req,
        "captain.code": np.array([code.get(int(r), "") for r in req], dtype=object),
        "captain.receipts": _receipts(ep, t),
        "timestamp": ((t - t[0]) / NS).astype(np.float32),
        "frame_index": np.arange(n, dtype=np.int64),
        "episode_index": np.full(n, episode_index, np.int64),
        "task_index": np.full(n, task_index, np.int64),
    }
    return Frames(t, cols, float((t[0] - ep.position.t_ns[0]) / NS))


def _request_index(ep: Episode, t: np.ndarray) -> np.ndarray:
    """Request running at each frame: 1 + how many requests had ended before it (the last one
    after the last ended; 0 throughout an episode without a request)."""
    ends = np.array(ep.request_end_ns, np.int64)
    if not len(ends):
        return np.zeros(len(t), np.int64)
    idx = np.searchsorted(ends, t, side="left") + 1
    return np.minimum(idx, int(ep.requests[-1].get("t", len(ends)))).astype(np.int64)


def _codes(ep: Episode) -> dict[int, str]:
    out = {}
    for r in ep.requests:
        cells = [str(c.get("code", "")) for c in r.get("calls") or [] if isinstance(c, dict)]
        out[int(r.get("t", 0))] = "\n\n".join(cells)
    return out


def _receipts(ep: Episode, t: np.ndarray) -> np.ndarray:
    out: list[list[str]] = [[] for _ in t]
    for r in ep.receipts:
        k = int(np.clip(np.searchsorted(t, r.t_ns, side="left"), 0, len(t) - 1))
        out[k].append(f"{r.capability}: {r.receipt}")
    return np.array(["\n".join(x) for x in out], dtype=object)


def feature_names(ep: Episode, cameras: tuple[str, ...]) -> dict[str, Any]:
    """``names`` of each vector feature (what each coordinate is)."""
    pose = [f"{a}.{k}" for a in ep.arms for k in ("x", "y", "z", "qw", "qx", "qy", "qz")]
    grip = [f"{a}_jaw_opening_m" for a in ep.arms]
    return {
        "observation.state": list(ep.joint_names),
        "observation.velocity": list(ep.joint_names),
        "observation.effort": list(ep.joint_names),
        "observation.gripper": grip,
        "observation.ee_pose": pose,
        "observation.wrench": [f"{a}.force_z_n" for a in ep.arms],
        "action": list(ep.joint_names) + grip,
        "captain.next_state": list(ep.joint_names) + grip,
        "captain.sample_age_s": ["joint_states", *cameras],
    }
