"""The scripted expert's helper library: what its cells call in the policy's Python session.

Real code, but it runs in the sandboxed session, which cannot import captain_ros: the expert
writes each function's source into the first cell that needs it (see
:mod:`captain_ros.policy.expert.source`). So these functions use only what the session has
(``math``, ``json``, ``np``) and take the explicit state :class:`State` (the robot client, the rig
and my records) as their first argument ``S``: no hidden globals.

Like CaPtain's teacher trajectories (appendix C: ``val``, ``need``, ``downq``, ``go``), a few
general helpers carry the cells: ``val`` reads a Result, ``go`` checks a straight move before
making it, ``tool_q`` is a tool orientation, ``approach`` finds a reachable grasp orientation,
``find`` and ``measure`` locate objects. Each cell ends with ``note(...)``, one ``NOTE {json}``
line that the expert reads back to choose its next request, as an agent reads its printed values.

Conventions stated in TASK.md: world x forward, y left, z up [m]; quaternions (w, x, y, z); the
tool approaches along its +z axis and the jaw closes along its y axis, so a top-down grasp is the
half-turn about world y, ``(0, 0, 1, 0)``, turned by a yaw about world z.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.policy.expert.source import in_session

Res = Mapping[str, Any]
"""A robot Result as the session sees it (a dict: success, value, failure_category, ...)."""
Quat = list[float]
Pose = tuple[list[float], Quat]


@in_session
class State:
    """What my cells share in the session (``S``).

    Attributes:
        robot: The session's robot client.
        epoch: My mark for this session; a probe after an incomplete cell compares it to tell a
            restarted (or foreign) session from a cell that merely failed.
        geom: The ``robot_geometry()`` value (arms, base poses, cameras).
        arms: Arm names (``[None]`` when the rig lists none).
        cams: Cameras of the latest observation.
        ready: Per arm and for ``None``: the pose I start from (position [m], quaternion wxyz).
        G: Latest geometry record per object name; D: its detection.
        grasp: Tool point minus object centre at the grasp, per object [m].
        m: Task notes later cells read (a free spot, the pull direction, ...).
    """

    def __init__(self, robot: Any, epoch: int = 1) -> None:
        self.robot = robot
        self.epoch = epoch
        self.geom: dict[str, Any] = {}
        self.arms: list[Any] = [None]
        self.cams: list[str] = []
        self.ready: dict[Any, Pose] = {}
        self.G: dict[str, Any] = {}
        self.D: dict[str, Any] = {}
        self.grasp: dict[str, list[float]] = {}
        self.m: dict[str, Any] = {}


@in_session
def note(**kw: Any) -> None:
    """Print one machine-readable line for my own bookkeeping."""
    print("NOTE " + json.dumps(kw, default=lambda o: np.asarray(o).tolist()))


@in_session
def val(r: Res | None, *keys: str, default: Any = None) -> Any:
    """``r['value'][k1][k2]...`` when the call succeeded, else ``default``."""
    if not r or not r.get("success"):
        return default
    v = r.get("value")
    for k in keys:
        if not isinstance(v, dict) or k not in v:
            return default
        v = v[k]
    return v


@in_session
def start(S: State, poses: Mapping[Any, Pose] | None = None) -> dict[str, Any]:
    """Load the rig geometry and remember the pose I start from, my "ready" pose (``poses`` gives
    it per arm instead, e.g. after a restart). Returns my note."""
    base_xy(S)
    S.arms = list((S.geom.get("arms") or {}).keys()) or [None]
    S.ready = (
        dict(poses) if poses else {a: (tcp(S, a).tolist(), tcp(S, a, quat=True)) for a in S.arms}
    )
    S.ready[None] = S.ready[S.arms[0]]
    return {
        "ready": True,
        "arms": S.arms,
        "tcp": S.ready[None][0],
        "poses": {a: S.ready[a] for a in S.arms},
    }


# --- rotations: one copy, unit-tested against captain_ros.core.geometry -------------------------
@in_session
def qmul(a: Sequence[float], b: Sequence[float]) -> Quat:
    """Hamilton product ``a * b`` of (w, x, y, z) quaternions."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return [
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ]


@in_session
def qy(a: float) -> Quat:
    """Turn by ``a`` [rad] about y."""
    return [math.cos(a / 2), 0.0, math.sin(a / 2), 0.0]


@in_session
def qz(a: float) -> Quat:
    """Turn by ``a`` [rad] about z."""
    return [math.cos(a / 2), 0.0, 0.0, math.sin(a / 2)]


@in_session
def tool_q(yaw: float, tilt: float = 180, roll: float | None = None) -> Quat:
    """Tool orientation: tilted by ``tilt`` [deg] about y (180 = pointing straight down), rolled
    by ``roll`` [rad] about its own approach axis, then turned by ``yaw`` [rad] about world z."""
    t = qy(math.radians(tilt))
    return qmul(qz(yaw), t if roll is None else qmul(t, qz(roll)))


@in_session
def qrot(q: Sequence[float], v: Sequence[float] | np.ndarray) -> np.ndarray:
    """``v`` turned by the unit quaternion ``q`` (w, x, y, z)."""
    u = np.array(q[1:], dtype=float)
    v = np.asarray(v, dtype=float)
    return v + 2 * np.cross(u, np.cross(u, v) + q[0] * v)


@in_session
def wrap(a: float) -> float:
    """Angle ``a`` [rad] in [-pi, pi)."""
    return (a + math.pi) % (2 * math.pi) - math.pi


# --- the arm ---------------------------------------------------------------------------------
@in_session
def tcp(S: State, arm: str | None = None, quat: bool = False) -> Any:
    """Tool point position [m] (an array), or with ``quat`` its orientation (w, x, y, z)."""
    s = S.robot.get_robot_state(arm=arm)
    arms = val(s, "arms", default={}) or {}
    st: Any = arms.get(arm) if arm in arms else (val(s) or {})
    if quat:
        return st.get("end_effector_quat_wxyz")
    return np.array(st.get("end_effector_position_m", [np.nan] * 3), dtype=float)


@in_session
def base_xy(S: State, arm: str | None = None) -> np.ndarray:
    """The arm's base position on the table (x, y) [m] (the first arm for an unknown name)."""
    if not S.geom:
        S.geom.update(val(S.robot.robot_geometry(), default={}) or {})
    arms = S.geom.get("arms") or {}
    a: Any = arms.get(arm) if arm in arms else next(iter(arms.values()), {})
    return np.array(
        ((a or {}).get("base_pose") or {}).get("position_m", [0, 0, 0])[:2], dtype=float
    )


@in_session
def bearing(S: State, xy: Sequence[float] | np.ndarray, arm: str | None = None) -> float:
    """Direction of ``xy`` seen from the arm's base [rad]."""
    d = np.asarray(xy[:2], dtype=float) - base_xy(S, arm)
    return math.atan2(d[1], d[0])


@in_session
def feasible(c: Res) -> bool:
    """A check_motion Result that accepts the pose."""
    return bool(c.get("success")) and val(c, "feasible", default=val(c, "reachable")) is not False


@in_session
def ok(
    S: State, p: Sequence[float], q: Sequence[float] | None = None, arm: str | None = None
) -> bool:
    """check_motion accepts the tool pose (p, q)."""
    return feasible(S.robot.check_motion(position=p, orientation=q, arm=arm))


@in_session
def go(
    S: State,
    p: Sequence[float] | np.ndarray,
    q: Sequence[float] | None = None,
    speed: float = 0.06,
    mode: str = "guarded",
    arm: str | None = None,
    force: float | None = None,
) -> Res:
    """Check, then move the tool in a straight line to p (and orientation q); if the straight
    sweep is infeasible from here, rise 8 cm first and try again from there.

    Returns the move's Result, or the check_motion Result when the move is refused: that call
    succeeded (``success`` is True) and says ``feasible: False``, so a caller that tests only
    ``success`` takes a refusal for a move (kept: the expert's behaviour is measured with it)."""
    p = [float(v) for v in p]
    c = S.robot.check_motion(position=p, orientation=q, arm=arm)
    if not feasible(c):
        t = tcp(S, arm)
        up = [float(t[0]), float(t[1]), float(max(t[2], p[2]) + 0.08)]
        if ok(S, up, None, arm):
            S.robot.move_to(position=up, arm=arm, speed_m_s=speed, mode=mode, force_limit_n=force)
            c = S.robot.check_motion(position=p, orientation=q, arm=arm)
    if not feasible(c):
        print(
            "check_motion refused",
            p,
            c.get("failure_category"),
            val(c, "reason", default=c.get("message")),
        )
        return c
    return S.robot.move_to(
        position=p, orientation=q, arm=arm, speed_m_s=speed, mode=mode, force_limit_n=force
    )


@in_session
def stop_reason(r: Res | None) -> Any:
    """Why a move ended (or its failure category)."""
    return val(r, "stop_reason", default=(r or {}).get("failure_category"))


@in_session
def jaw(S: State, cmd: Any, arm: str | None = None) -> Res:
    """Command the jaw: 'open', 'close' or an opening [m]."""
    return S.robot.move_to(jaw=cmd, arm=arm)


@in_session
def holding(S: State, arm: str | None = None) -> bool:
    """The gripper reports an object held."""
    return bool(val(S.robot.gripper_state(arm=arm), "holding", default=False))


@in_session
def approach(
    S: State,
    c: Sequence[float] | np.ndarray,
    top_z: float,
    grasp_z: float,
    face_yaw: float | None,
    arm: str | None = None,
    faces: int = 4,
    clearance: float = 0.08,
    mode: str = "guarded",
) -> tuple[Quat | None, Any]:
    """Move above c (x, y) in a grasp orientation and return (orientation, grasp height [m]).

    Candidates: tool as vertical as possible (tilted toward the arm's bearing otherwise), rolled
    about the approach axis so the jaw closes across a pair of faces of yaw ``face_yaw`` (an
    object with ``faces`` side faces). A candidate is kept when check_motion accepts the move
    above and then the descent; the grasp height is raised in 4 mm steps (at most 12 mm) if the
    fingers would touch the table. If no orientation is reachable straight from here, I first go
    above tilted 40 deg and turn there. Returns (None, None) when nothing works."""
    sym = 2 * math.pi / faces
    brg = bearing(S, c, arm)
    above = [float(c[0]), float(c[1]), float(top_z + clearance)]
    base = 0.0 if face_yaw is None else wrap(brg + math.pi / 2 - face_yaw)
    rolls = sorted({round(wrap(base - k * sym), 6) for k in range(faces)}, key=abs)
    for pre in (False, True):
        if pre:
            r = go(S, above, tool_q(brg, 140), speed=0.06, arm=arm, mode=mode)
            if not r.get("success"):
                return None, None
        for th in (180, 172, 164):
            for d in rolls:
                q = tool_q(brg, th, d)
                if not ok(S, above, q, arm):
                    continue
                S.robot.move_to(position=above, orientation=q, arm=arm, speed_m_s=0.06, mode=mode)
                for dz in (0.0, 0.004, 0.008, 0.012):
                    down = [float(c[0]), float(c[1]), float(grasp_z + dz)]
                    if ok(S, down, None, arm):
                        return q, grasp_z + dz
    return None, None


@in_session
def rise(
    S: State,
    arm: str | None = None,
    heights: Iterable[float] = (0.08, 0.06, 0.045, 0.035, 0.025),
    speed: float = 0.04,
    mode: str = "guarded",
) -> float:
    """Straight up from here, as high as the joints allow (a sideways sweep from down here would
    catch what I just let go of with the open fingers). Returns the height gained [m]."""
    t = tcp(S, arm)
    for h in heights:
        up = (t + [0, 0, h]).tolist()
        if ok(S, up, None, arm):
            S.robot.move_to(position=up, arm=arm, speed_m_s=speed, mode=mode)
            return float(tcp(S, arm)[2] - t[2])
    return 0.0


@in_session
def climb(S: State, z: float, arm: str | None = None, speed: float = 0.04) -> bool:
    """Up to height z [m] where a vertical tool cannot get (joint 5 caps it near the base): close
    the jaw (the fingertips then stay at the tool point), tilt the tool back in steps in place
    (turning while climbing would pass the joint limit half way), then climb. True when there."""
    t = tcp(S, arm)
    if t[2] >= z - 0.005:
        return True
    b, closed = bearing(S, t, arm), False
    for th in (None, 164, 156, 148, 140):
        if th is not None:
            q = tool_q(b, th)
            if not ok(S, t.tolist(), q, arm):
                continue
            if not closed:
                jaw(S, "close", arm=arm)
                closed = True
            S.robot.move_to(position=t.tolist(), orientation=q, arm=arm, speed_m_s=speed)
        if ok(S, [t[0], t[1], z], None, arm):
            return bool(
                S.robot.move_to(position=[t[0], t[1], z], arm=arm, speed_m_s=speed).get("success")
            )
    return False


@in_session
def ready(S: State, arm: str | None = None) -> Res | None:
    """Back to the pose I started from (out of the head camera's view of the table)."""
    p, q = S.ready.get(arm, (None, None))
    if p is not None:
        return go(S, p, q, speed=0.08, arm=arm)
    return None


@in_session
def aside(
    S: State,
    away_from: Sequence[float] | None = None,
    arm: str | None = None,
    side: Sequence[float] = (0.0, 1.0),
    up_m: float = 0.02,
) -> Any:
    """Out of the head camera's way: 15 (else 12, 9) cm to one side of the ready pose along the
    horizontal unit vector ``side`` (the side farther from the xy ``away_from`` first), ``up_m``
    higher. A tower right under the ready pose merges with the gripper in the head image.
    Returns the stop reason (None when no side is reachable)."""
    r0, q0 = S.ready.get(arm, (None, None))
    if r0 is None:
        return None
    p0, v = np.array(r0, dtype=float), np.array([side[0], side[1], 0.0], dtype=float)
    sides = [1, -1]
    if away_from is not None:
        sides.sort(
            key=lambda s: (
                -np.linalg.norm(p0[:2] + s * 0.15 * v[:2] - np.asarray(away_from[:2], dtype=float))
            )
        )
    for d in (0.15, 0.12, 0.09):
        for s in sides:
            p = (p0 + s * d * v + [0.0, 0.0, up_m]).tolist()
            if ok(S, p, q0, arm):
                return stop_reason(go(S, p, q0, speed=0.06, arm=arm))
    return None
