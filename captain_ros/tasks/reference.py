"""Reference solutions: each task solved by ``MotionService`` calls aimed with privileged poses.

These prove a task is solvable with the robot API's motion primitives (approach above, guarded
descent, close, lift in manipulation mode, carry, lower, release). They read
``backend.privileged_state()`` to aim, so they are for tests and sanity checks only, never a
policy. Every call must succeed; a failed call raises :class:`ReferenceFailure` with its receipt.

Tool orientation: "down" is the tool z axis along world -z; ``yaw`` [rad] turns it about world z,
and the jaw closes along ``(-sin yaw, cos yaw, 0)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from captain_ros.backends.base import Backend
from captain_ros.core.geometry import quat_multiply, yaw_of_quat
from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.result import Result
from captain_ros.motion import MotionService
from captain_ros.tasks import insertion, open_drawer, pick_place, two_arm_lift

DOWN = np.array([0.0, 0.0, 1.0, 0.0])
GRASP_DZ_M = 0.0075
"""The tool point sits this far above a cube's centre when grasping (fingertips clear the table) [m]."""
FINGERTIP_BELOW_TCP_M = 0.02
"""The fingertips reach this far below the tool point (the pad centre) [m]."""
TRANSIT_Z_M = 0.1
"""Height of the tool point when crossing over the table (fingertips 8 cm up) [m]."""
PARK_R_M = 0.18
PARK_Z_M = 0.13
"""Parking arc: radius from the base and tool height (fingertips above a three-cube tower) [m]."""
APPROACH_M = 0.03
"""Approach/retreat height of the tool point above an object's top [m] (fingertips 1 cm above it).

Kept low on purpose: with the tool vertical, the PiPER's joint 5 (+-75 deg) limits the tool
height to about 0.14 m at 0.2-0.3 m from the base and 0.10 m at 0.40 m."""


class ReferenceFailure(AssertionError):
    """A motion call of a reference solution failed."""


def down_quat(yaw_rad: float) -> np.ndarray:
    """Tool-down orientation turned by ``yaw_rad`` about world z, as (w, x, y, z)."""
    return quat_multiply(np.array([np.cos(yaw_rad / 2), 0.0, 0.0, np.sin(yaw_rad / 2)]), DOWN)


def wrap(angle_rad: float, period_rad: float) -> float:
    """``angle_rad`` wrapped into ``[-period/2, period/2)``."""
    return float((angle_rad + period_rad / 2) % period_rad - period_rad / 2)


class Reference:
    """Motion helpers over one backend; ``log`` collects every receipt."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.motion = MotionService(backend)
        self.log: list[str] = []

    # --- state -----------------------------------------------------------------------------
    def state(self) -> PrivilegedState:
        return self.backend.privileged_state()

    def pose(self, body: str) -> tuple[np.ndarray, np.ndarray]:
        o = self.state().object(body)
        return o.position_m.copy(), o.quat_wxyz.copy()

    # --- motion ----------------------------------------------------------------------------
    def call(self, name: str, **kw: Any) -> Result:
        res: Result = getattr(self.motion, name)(**kw)
        self.log.append(f"{name}: {res.receipt or res.message}")
        if not res.success:
            raise ReferenceFailure(f"{name}({kw}) failed: {res.message} | {res.receipt}")
        return res

    def move(
        self,
        p: Any,
        yaw: float | None = None,
        arm: str | None = None,
        mode: str = "guarded",
        speed: float = 0.1,
    ) -> Result:
        return self.call(
            "move_to",
            position=[float(v) for v in p],
            orientation=None if yaw is None else down_quat(yaw).tolist(),
            arm=arm,
            mode=mode,
            speed_m_s=speed,
        )

    def transit(
        self,
        p: Any,
        yaw: float,
        arm: str | None = None,
        z_m: float = TRANSIT_Z_M,
        mode: str = "guarded",
    ) -> None:
        """Rise to ``z_m``, cross over at that height, descend to ``p``.

        The crossing follows the arc around the arm base (bearing steps of at most 20 deg, the tool
        turning with the arm): a straight chord between distant bearings would pass over the base,
        where a vertical tool cannot go.
        """
        a = arm or self.motion._route(None, np.asarray(p, dtype=float))
        base = self.backend.spec.arm(a).base_pose.position_m[:2]
        cur = self.backend.ee_pose(a).position_m
        z = max(z_m, float(p[2]))
        if cur[2] < z - 0.005:
            self.move([cur[0], cur[1], z], arm=a, mode=mode)
        d0, d1 = cur[:2] - base, np.asarray(p[:2], dtype=float) - base
        th0, th1 = float(np.arctan2(d0[1], d0[0])), float(np.arctan2(d1[1], d1[0]))
        r0, r1 = float(np.linalg.norm(d0)), float(np.linalg.norm(d1))
        n = int(np.ceil(abs(th1 - th0) / np.deg2rad(20.0)))
        for k in range(1, n):
            th, r = th0 + (th1 - th0) * k / n, max(r0 + (r1 - r0) * k / n, PARK_R_M)
            wp = [base[0] + r * np.cos(th), base[1] + r * np.sin(th), z]
            self.move(wp, self.choose_yaw(wp, yaw + th - th1, np.pi, a), arm=a, mode=mode)
        self.move([p[0], p[1], z], yaw, arm=a, mode=mode)
        if p[2] < z - 0.005:
            self.move(p, yaw, arm=a, mode=mode, speed=0.05)

    def choose_yaw(self, p: Any, yaw: float, period_rad: float, arm: str | None = None) -> float:
        """Among ``yaw + k * period`` (a symmetric grasp), the smallest one ``check_motion`` accepts."""
        cands = sorted({wrap(yaw + k * period_rad, 2 * np.pi) for k in range(-4, 5)}, key=abs)
        for y in cands:
            res = self.motion.check_motion(
                position=[float(v) for v in p], orientation=down_quat(y).tolist(), arm=arm
            )
            if res.success and res.value and res.value.get("feasible"):
                return y
        return cands[0]

    def jaw(self, value: Any, arm: str | None = None) -> Result:
        return self.call("move_to", jaw=value, arm=arm)

    def pick(
        self,
        body: str,
        half_m: float = pick_place.CUBE_HALF_M,
        grasp_dz_m: float = GRASP_DZ_M,
        lift_z_m: float = 0.09,
        yaw: float | None = None,
        open_m: float = 0.06,
        arm: str | None = None,
    ) -> float:
        """Approach 3 cm above, open, descend guarded, close, lift in manipulation mode; returns yaw."""
        p, q = self.pose(body)
        above = [p[0], p[1], p[2] + half_m + APPROACH_M]
        yaw = self.choose_yaw(above, yaw_of_quat(q), np.pi / 2, arm) if yaw is None else yaw
        self.transit([p[0], p[1], p[2] + half_m + APPROACH_M], yaw, arm=arm)
        self.jaw(open_m, arm=arm)
        self.move([p[0], p[1], p[2] + grasp_dz_m], yaw, arm=arm, speed=0.05)
        self.jaw("close", arm=arm)
        self.move([p[0], p[1], lift_z_m], yaw, arm=arm, mode="manipulation", speed=0.05)
        return yaw

    def place(
        self,
        centre_m: Any,
        yaw: float,
        grasp_dz_m: float = GRASP_DZ_M,
        carry_z_m: float = 0.09,
        drop_m: float = 0.003,
        half_m: float = pick_place.CUBE_HALF_M,
        arm: str | None = None,
    ) -> None:
        """Carry at ``carry_z_m``, lower until the object's centre is ``drop_m`` above ``centre_m``,
        release, retreat up (and, where the arm cannot rise above the object, slide out sideways
        along the open jaw's free direction)."""
        x, y, z = (float(v) for v in centre_m)
        self.transit([x, y, carry_z_m], yaw, arm=arm, z_m=carry_z_m, mode="manipulation")
        self.move([x, y, z + grasp_dz_m + drop_m], yaw, arm=arm, mode="manipulation", speed=0.04)
        self.call("release", arm=arm)
        up = min(z + grasp_dz_m + drop_m + APPROACH_M, TRANSIT_Z_M + 0.01)
        self.move([x, y, up], yaw, arm=arm)
        if up - FINGERTIP_BELOW_TCP_M < z + half_m + 0.005:  # fingers still beside the object
            free = np.array([np.cos(yaw), np.sin(yaw)])  # tool x: the pads' width direction
            if free @ np.array([x, y]) > 0:
                free = -free  # slide toward the base
            self.move([x + 0.06 * free[0], y + 0.06 * free[1], up], yaw, arm=arm, speed=0.05)

    def settle(self, duration_s: float = 0.5) -> None:
        self.call("hold", duration_s=duration_s)

    def park(self, arm: str | None = None) -> None:
        """Close the jaw, rise, withdraw to 0.18 m from the base and swing along that arc to the
        base's side (clears the head camera's view of the work)."""
        for a in [arm] if arm else list(self.backend.spec.arm_names):
            base = self.backend.spec.arm(a).base_pose.position_m
            self.jaw("close", arm=a)
            cur = self.backend.ee_pose(a).position_m
            z = max(cur[2], PARK_Z_M)
            if not self.motion.check_motion(position=[cur[0], cur[1], z], arm=a).value.get(
                "feasible"
            ):
                z = max(cur[2], TRANSIT_Z_M)
            self.move([cur[0], cur[1], z], arm=a)
            d = cur[:2] - base[:2]
            bearing = float(np.arctan2(d[1], d[0]))
            if (
                len(self.backend.spec.arm_names) > 1
            ):  # dual rig: swing outward, away from the other arm
                goal = np.deg2rad(80.0) if base[1] > 0 else -np.deg2rad(80.0)
            else:  # the side away from where the work was
                goal = -np.deg2rad(80.0) if bearing > 0 else np.deg2rad(80.0)
            n = max(1, int(np.ceil(abs(goal - bearing) / np.deg2rad(20.0))))
            for th in np.linspace(bearing, goal, n + 1):
                p = [base[0] + PARK_R_M * np.cos(th), base[1] + PARK_R_M * np.sin(th), z]
                self.move(p, self.choose_yaw(p, float(th), np.pi, a), arm=a)


# --- per task ------------------------------------------------------------------------------------
def solve_pick_place(r: Reference) -> None:
    yaw = r.pick("red_cube")
    plate, _ = r.pose("plate")
    r.place(plate + [0, 0, pick_place.PLATE_HALF_HEIGHT_M + pick_place.CUBE_HALF_M], yaw)
    r.park()
    r.settle()


def solve_stack(r: Reference) -> None:
    h = pick_place.CUBE_HALF_M
    yaw = r.pick("green_cube", lift_z_m=0.1)
    blue, _ = r.pose("blue_cube")
    r.place(blue + [0, 0, 2 * h], yaw, carry_z_m=0.1)
    yaw = r.pick("red_cube", lift_z_m=0.11)
    green, _ = r.pose("green_cube")
    r.place(green + [0, 0, 2 * h], yaw, carry_z_m=0.11)
    r.park()
    r.settle()


def free_spot(
    r: Reference, near_m: np.ndarray, avoid: list[str], clearance_m: float = 0.075
) -> np.ndarray:
    """A table spot 9 cm from ``near_m``, within comfortable reach and clear of ``avoid`` bodies."""
    others = [r.pose(b)[0][:2] for b in avoid]
    for ang in np.linspace(0, 2 * np.pi, 16, endpoint=False):
        xy = near_m[:2] + 0.09 * np.array([np.cos(ang), np.sin(ang)])
        if 0.2 <= np.linalg.norm(xy) <= 0.36 and all(
            np.linalg.norm(xy - o) >= clearance_m for o in others
        ):
            return xy
    raise ReferenceFailure("no free spot next to the stack")


def solve_restack(r: Reference) -> None:
    h = pick_place.CUBE_HALF_M
    red, _ = r.pose("red_cube")
    avoid = [b for b in r.state().objects if b not in ("blue_cube",)]
    spot = free_spot(r, red, avoid)
    yaw = r.pick("blue_cube", lift_z_m=0.1)
    r.place([spot[0], spot[1], h], yaw, carry_z_m=0.1)
    yaw = r.pick("red_cube", lift_z_m=0.1)
    blue, _ = r.pose("blue_cube")
    r.place(blue + [0, 0, 2 * h], yaw, carry_z_m=0.1)
    r.park()
    r.settle()


def solve_insertion(r: Reference) -> None:
    hh = insertion.PEG_HALF_HEIGHT_M
    grasp_dz = hh - 0.015  # tool point 1.5 cm below the peg top
    peg, _ = r.pose("peg")
    hole, _ = r.pose("hole_block")
    yaw = wrap(float(np.arctan2(peg[1], peg[0])), np.pi)
    carry = insertion.BLOCK_HEIGHT_M + 0.02 + 2 * hh - 0.015  # peg bottom 2 cm above the block
    r.pick("peg", half_m=hh, grasp_dz_m=grasp_dz, lift_z_m=carry, yaw=yaw, open_m=0.05)
    r.move([hole[0], hole[1], carry], yaw, mode="manipulation", speed=0.06)
    r.move([hole[0], hole[1], hh + grasp_dz + 0.002], yaw, mode="guarded", speed=0.03)
    r.call("release")
    r.move([hole[0], hole[1], carry], yaw)
    r.park()
    r.settle()


def solve_open_drawer(r: Reference) -> None:
    h, _ = r.pose("drawer_handle")
    _, cq = r.pose("cabinet")
    cab_yaw = yaw_of_quat(cq)
    u = -np.array([np.cos(cab_yaw), np.sin(cab_yaw)])  # pull direction (toward the robot)
    yaw = wrap(float(np.arctan2(-u[0], u[1])), np.pi)  # jaw closes along the pull direction
    r.move([h[0], h[1], h[2] + 0.06], yaw)
    r.jaw(0.05)
    r.move([h[0], h[1], h[2]], yaw, speed=0.05)
    r.jaw("close")
    pull = open_drawer.OpenDrawer.tolerances["open_m"] + 0.02
    r.move([h[0] + pull * u[0], h[1] + pull * u[1], h[2]], yaw, mode="manipulation", speed=0.04)
    r.jaw(0.05)
    h2, _ = r.pose("drawer_handle")
    r.move([h2[0], h2[1], h2[2] + 0.06], yaw)
    r.park()
    r.settle()


def solve_two_arm_lift(r: Reference) -> None:
    task = two_arm_lift.TwoArmLift()
    grasps = task.grasp_points_m(r.state())
    _, q = r.pose("long_box")
    half = two_arm_lift.BOX_HALF_M[2]
    yaws = {}
    for arm, g in grasps.items():
        above = [g[0], g[1], g[2] + half + APPROACH_M]
        yaws[arm] = yaw = r.choose_yaw(
            above, yaw_of_quat(q) + np.pi / 2, np.pi, arm
        )  # jaw across the box
        r.move(above, yaw, arm=arm)
        r.jaw(0.06, arm=arm)
        r.move([g[0], g[1], g[2] + GRASP_DZ_M], yaw, arm=arm, speed=0.05)
    for arm in grasps:
        r.jaw("close", arm=arm)
    lift = task.tolerances["lift_m"] + 0.01
    targets = {
        arm: [float(g[0]), float(g[1]), float(g[2] + GRASP_DZ_M + lift)]
        for arm, g in grasps.items()
    }
    r.call(
        "move_to",
        position=targets,
        orientation={a: down_quat(yaws[a]).tolist() for a in grasps},
        arm="both",
        mode="manipulation",
        speed_m_s=0.04,
    )
    r.call("hold", duration_s=0.5, arm="left")


SOLVERS: dict[str, Callable[[Reference], None]] = {
    "pick_place": solve_pick_place,
    "stack": solve_stack,
    "restack": solve_restack,
    "open_drawer": solve_open_drawer,
    "two_arm_lift": solve_two_arm_lift,
    "insertion": solve_insertion,
}


def solve(task_name: str, backend: Backend) -> Reference:
    """Run the reference solution of ``task_name`` on ``backend``; returns the helper (with its log)."""
    r = Reference(backend)
    SOLVERS[task_name](r)
    return r
