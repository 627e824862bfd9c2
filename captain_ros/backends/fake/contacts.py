"""Contacts of the kinematic fake rig: spring forces, grasping, dropping, support and touching.

Contact force is a linear spring (``stiffness_n_m``) on the penetration of the pads/palm (or of a
held box) into the table or other boxes. A closing jaw grasps a box that sits between the pads
(the box then follows the tool); an opening jaw drops it onto its support (table or box below).
Everything is a pure function of the rig state (:class:`FakeState`) and the :class:`Table`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from captain_ros.backends.fake.kinematics import PAD_SIZE_M, pad_points, tool
from captain_ros.backends.fake.scene import FakeBox, matrix_rpy, rpy_matrix

JAW_SPEED_M_S = 0.1


@dataclass(frozen=True)
class Table:
    """The table: top height and horizontal extent [m], contact stiffness [N/m]."""

    top_z_m: float
    min_xy: np.ndarray
    max_xy: np.ndarray
    stiffness_n_m: float


@dataclass
class FakeState:
    """Everything that evolves (snapshots deep-copy it)."""

    t_s: float
    q: dict[str, np.ndarray]
    q_target: dict[str, np.ndarray]
    jaw: dict[str, float]
    jaw_cmd: dict[str, float]
    force: dict[str, float]
    qd: dict[str, np.ndarray]
    boxes: list[FakeBox]
    estop: bool = False
    estop_reason: str = ""


def depth_in_box(points: np.ndarray, box: FakeBox) -> float:
    """Deepest penetration of ``points`` into ``box`` [m]."""
    local = (points - box.center_m) @ box.rotation
    inside = np.min(box.size_m / 2 - np.abs(local), axis=1)
    return float(max(0.0, inside.max()))


def table_depth(points: np.ndarray, table: Table) -> float:
    """Deepest penetration of ``points`` below the table top [m]."""
    on_table = np.all((points[:, :2] >= table.min_xy) & (points[:, :2] <= table.max_xy), axis=1)
    depth = np.where(on_table, table.top_z_m - points[:, 2], 0.0)
    return float(max(0.0, depth.max()))


def arm_force(st: FakeState, table: Table, arm: str) -> float:
    """Contact force on ``arm`` and what it holds [N]."""
    pts = pad_points(st.q[arm], st.jaw[arm])
    held = [b for b in st.boxes if b.held_by == arm]
    if not held:  # fast path: pads and palm above everything
        top = max(
            [table.top_z_m]
            + [
                float(b.center_m[2] + np.abs(b.rotation[2]) @ b.size_m / 2)
                for b in st.boxes
                if b.held_by is None
            ]
        )
        if float(pts[:, 2].min()) > top:
            return 0.0
    depth = table_depth(pts, table)
    for b in st.boxes:
        if b.held_by is None:
            depth = max(depth, depth_in_box(pts, b))
    for hb in held:
        corners = hb.corners()
        depth = max(depth, table_depth(corners, table))
        for b in st.boxes:
            if b is not hb and b.held_by is None:
                depth = max(depth, depth_in_box(corners, b))
    return table.stiffness_n_m * depth


def update_forces(st: FakeState, table: Table) -> None:
    for arm in st.q:
        st.force[arm] = arm_force(st, table, arm)


def carry_held(st: FakeState) -> None:
    """Move every held box with its tool."""
    for b in st.boxes:
        if b.held_by is not None and b.rel_tool is not None:
            p, r = tool(st.q[b.held_by])
            t = np.eye(4)
            t[:3, :3], t[:3, 3] = r, p
            tb = t @ b.rel_tool
            b.center_m, b.rotation = tb[:3, 3].copy(), tb[:3, :3].copy()


def support_z(st: FakeState, table: Table, box: FakeBox) -> float:
    """Height of what ``box`` would rest on if dropped now [m]."""
    z = table.top_z_m
    for other in st.boxes:
        if other is box or other.held_by is not None:
            continue
        local = (box.center_m - other.center_m) @ other.rotation
        if (
            np.all(np.abs(local[:2]) <= other.size_m[:2] / 2)
            and other.center_m[2] < box.center_m[2]
        ):
            z = max(z, other.center_m[2] + other.size_m[2] / 2)
    return z


def width_along(box: FakeBox, axis: np.ndarray) -> float:
    """Extent of ``box`` along a world ``axis`` [m]."""
    return float(np.sum(np.abs(box.rotation.T @ axis) * box.size_m))


def drop(st: FakeState, table: Table, box: FakeBox) -> None:
    """Release ``box``: it lands upright (its yaw kept) on its support."""
    box.held_by, box.rel_tool = None, None
    yaw = float(matrix_rpy(box.rotation)[2])
    box.rotation = rpy_matrix(0.0, 0.0, yaw)
    box.yaw_rad = yaw
    box.center_m[2] = support_z(st, table, box) + box.size_m[2] / 2


def jaw_step(st: FakeState, table: Table, arm: str, dt: float) -> None:
    """Move the jaw of ``arm`` toward its command for ``dt`` [s], grasping or dropping boxes."""
    cmd, jaw = st.jaw_cmd[arm], st.jaw[arm]
    if abs(cmd - jaw) < 1e-9:
        return
    new = jaw + float(np.clip(cmd - jaw, -JAW_SPEED_M_S * dt, JAW_SPEED_M_S * dt))
    p, r = tool(st.q[arm])
    held = [b for b in st.boxes if b.held_by == arm]
    if new < jaw and not held:  # closing: does a box sit between the pads?
        for b in st.boxes:
            if b.held_by is not None:
                continue
            local = r.T @ (b.center_m - p)
            w = width_along(b, r[:, 1])
            half_x = width_along(b, r[:, 0]) / 2
            half_z = width_along(b, r[:, 2]) / 2
            if (
                abs(local[0]) < half_x + PAD_SIZE_M[1] / 2
                and abs(local[2]) < half_z + PAD_SIZE_M[0] / 2
                and abs(local[1]) < jaw / 2
                and w <= jaw + 1e-9
                and new <= w
            ):
                b.center_m = p + r @ np.array([local[0], 0.0, local[2]])  # pads centre the box
                t_tool = np.eye(4)
                t_tool[:3, :3], t_tool[:3, 3] = r, p
                t_box = np.eye(4)
                t_box[:3, :3], t_box[:3, 3] = b.rotation, b.center_m
                b.held_by, b.rel_tool = arm, np.linalg.inv(t_tool) @ t_box
                b.ever_held = True
                new = w
                st.jaw_cmd[arm] = max(cmd, 0.0)
                break
    elif held and new > jaw:
        for b in held:
            if new > width_along(b, r[:, 1]) + 0.002:
                drop(st, table, b)
    if held and new < jaw:
        new = max(new, max(width_along(b, r[:, 1]) for b in held))
    st.jaw[arm] = new


def touching(st: FakeState, table: Table, box: FakeBox) -> list[str]:
    """Names of what ``box`` rests on or carries (``table`` or other boxes), sorted."""
    out = []
    bottom = box.center_m[2] - box.size_m[2] / 2
    if box.held_by is None and abs(bottom - table.top_z_m) < 1e-6:
        out.append("table")
    for other in st.boxes:
        if other is box:
            continue
        top = other.center_m[2] + other.size_m[2] / 2
        other_bottom = other.center_m[2] - other.size_m[2] / 2
        over = np.all(
            np.abs((box.center_m - other.center_m)[:2]) <= (box.size_m[:2] + other.size_m[:2]) / 2
        )
        if over and (
            abs(bottom - top) < 1e-6
            or abs(box.center_m[2] + box.size_m[2] / 2 - other_bottom) < 1e-6
        ):
            out.append(other.name)
    return sorted(out)


def collisions(st: FakeState, table: Table, q_by_arm: dict[str, np.ndarray]) -> list[str]:
    """Table and arm-arm collisions at ``q_by_arm`` (other arms where they are now)."""
    qs = {arm: np.asarray(q_by_arm.get(arm, st.q[arm]), dtype=float) for arm in st.q}
    out = []
    for arm, q in qs.items():
        p, r = tool(q)
        wrist = p - r[:, 2] * 0.12
        if wrist[2] < table.top_z_m or p[2] < table.top_z_m - 0.03:
            out.append(f"{arm}/table")
    names = sorted(qs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if np.linalg.norm(qs[a][:3] - qs[b][:3]) < 0.08:
                out.append(f"{a}/{b}")
    return out
