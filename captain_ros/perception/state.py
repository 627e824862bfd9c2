"""State calls: robot state, gripper state, robot geometry and frame transforms.

Frames: ``world``; ``<arm>_base`` (each arm's base); ``<camera>_optical`` (a camera's optical frame,
x right, y down, z forward, as of its latest capture); ``<arm>_tcp`` and, on a single-arm rig,
``tcp``. Quaternions are (w, x, y, z).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from captain_ros.core.errors import UnknownNameError
from captain_ros.core.geometry import Pose, as_vector, normalize_quat
from captain_ros.core.result import Result
from captain_ros.perception.guard import fmt, guarded

if TYPE_CHECKING:
    from captain_ros.backends.base import Backend
    from captain_ros.perception.store import BoundedStore


def _r(v: Any, nd: int = 4) -> list[float]:
    return [round(float(x), nd) for x in np.asarray(v).reshape(-1)]


class StateMixin:
    """Mixed into PerceptionService; needs ``self.backend`` and ``self.observations``."""

    backend: Backend
    observations: BoundedStore

    def arm_names(self) -> list[str]:
        return list(self.backend.spec.arm_names)

    def resolve_arm(self, arm: str | None) -> str:
        """The named arm, or for ``None`` the holding arm / the only arm / the first arm."""
        names = self.arm_names()
        if arm is None:
            for n in names:
                if self.backend.gripper(n).holding:
                    return n
            return names[0]
        if arm not in names:
            raise UnknownNameError("arm", arm, names)
        return arm

    def arm_state(self, arm: str) -> dict[str, Any]:
        ee = self.backend.ee_pose(arm)
        js = self.backend.joint_state(arm)
        gr = self.backend.gripper(arm)
        return {
            "end_effector_position_m": _r(ee.position_m),
            "end_effector_quat_wxyz": _r(ee.quat_wxyz, 5),
            "tcp_position_m": _r(ee.position_m),
            "tcp_quat_wxyz": _r(ee.quat_wxyz, 5),
            "joints_rad": _r(js.position_rad, 5),
            "force_n": round(float(self.backend.contact_force_n(arm)), 3),
            "joint_names": list(js.names),
            "joint_positions_rad": _r(js.position_rad, 5),
            "jaw_opening_m": round(float(gr.opening_m), 5),
            "jaw_command_m": round(float(gr.command_m), 5),
            "grip_force_n": round(float(gr.force_n), 3),
            "holding": bool(gr.holding),
            "contact_force_n": round(float(self.backend.contact_force_n(arm)), 3),
        }

    def robot_summary(self) -> dict[str, Any]:
        """Per-arm state; on a single-arm rig the arm's keys are also at the top level."""
        arms = {n: self.arm_state(n) for n in self.arm_names()}
        out: dict[str, Any] = {
            "arms": arms,
            "stamp_s": float(self.backend.time_s()),
            "estopped": bool(self.backend.estopped),
        }
        if len(arms) == 1:
            out.update(next(iter(arms.values())))
        return out

    @guarded
    def get_robot_state(self, arm: str | None = None) -> Result:
        """Joint positions, tool pose, jaw and contact force of ``arm`` (all arms when None)."""
        if arm is None:
            value = self.robot_summary()
            arms = value["arms"]
        else:
            arms = {self.resolve_arm(arm): self.arm_state(self.resolve_arm(arm))}
            value = next(iter(arms.values())) | {"arm": arm}
        rec = "; ".join(
            f"{n}: tcp {fmt(s['end_effector_position_m'])} jaw "
            f"{s['jaw_opening_m']:.3f} m{' holding' if s['holding'] else ''}"
            for n, s in arms.items()
        )
        return Result.ok("robot state", value, receipt=f"state {rec}")

    @guarded
    def gripper_state(self, arm: str | None = None) -> Result:
        """Jaw opening [m], command [m], grip force [N] and whether it holds something."""
        name = self.resolve_arm(arm)
        g = self.backend.gripper(name)
        value = {
            "arm": name,
            "opening_m": float(g.opening_m),
            "command_m": float(g.command_m),
            "force_n": float(g.force_n),
            "holding": bool(g.holding),
            "max_opening_m": float(self.backend.spec.arm(name).jaw_max_opening_m),
        }
        return Result.ok(
            "gripper state",
            value,
            receipt=f"gripper {name}: opening {g.opening_m:.4f} m, force "
            f"{g.force_n:.1f} N, holding={g.holding}",
        )

    @guarded
    def robot_geometry(self) -> Result:
        """Reach, jaw opening, pad size, base poses, cameras and workspace bounds of the rig."""
        spec = self.backend.spec
        arms = {
            a.name: {
                "base_pose": a.base_pose.to_dict(),
                "reach_m": float(a.reach_m),
                "jaw_max_opening_m": float(a.jaw_max_opening_m),
                "pad_size_m": [float(x) for x in a.pad_size_m],
                "pad_size_axes": "length along tool z (approach), width along tool x, "
                "thickness along tool y (jaw axis)",
                "wrist_camera": a.wrist_camera,
                "joint_names": list(a.joint_names),
            }
            for a in spec.arms
        }
        value = {
            "rig": spec.name,
            "arms": arms,
            "cameras": list(spec.cameras),
            "head_camera": spec.head_camera,
            "workspace_min_m": _r(spec.workspace_min_m),
            "workspace_max_m": _r(spec.workspace_max_m),
            "frames": self.frame_names(),
        }
        rec = "; ".join(
            f"{n}: reach {a['reach_m']:.2f} m jaw {a['jaw_max_opening_m']:.3f} m"
            for n, a in arms.items()
        )
        return Result.ok("robot geometry", value, receipt=f"geometry {spec.name}: {rec}")

    def frame_names(self) -> list[str]:
        names = ["world"] + [f"{a}_base" for a in self.arm_names()]
        names += [f"{a}_tcp" for a in self.arm_names()]
        if len(self.arm_names()) == 1:
            names.append("tcp")
        names += [f"{c}_optical" for c in self.backend.spec.cameras]
        return names

    def world_from(self, frame: str) -> Pose:
        """Pose of ``frame`` in the world frame."""
        if not isinstance(frame, str):
            raise UnknownNameError("frame", frame, self.frame_names())
        arms = self.arm_names()
        if frame == "world":
            return Pose(np.zeros(3))
        if frame == "tcp" and len(arms) == 1:
            return self.backend.ee_pose(arms[0])
        if frame.endswith("_base") and frame[:-5] in arms:
            return self.backend.spec.arm(frame[:-5]).base_pose
        if frame.endswith("_tcp") and frame[:-4] in arms:
            return self.backend.ee_pose(frame[:-4])
        if frame.endswith("_optical") and frame[:-8] in self.backend.spec.cameras:
            cam = frame[:-8]
            for obs in reversed(self.observations.values()):
                if cam in obs.frames:
                    return Pose.from_matrix(obs.frames[cam].world_from_camera)
            return Pose.from_matrix(self.backend.capture([cam])[cam].world_from_camera)
        raise UnknownNameError("frame", frame, self.frame_names())

    @guarded
    def transform_pose(
        self,
        position: Any,
        orientation: Any = None,
        from_frame: str = "world",
        to_frame: str = "world",
    ) -> Result:
        """Express a pose given in ``from_frame`` in ``to_frame`` (position [m], quat wxyz)."""
        p = as_vector(position, 3, "position")
        q = (
            normalize_quat(orientation, "orientation")
            if orientation is not None
            else np.array([1.0, 0, 0, 0])
        )
        src = self.world_from(from_frame)
        dst = self.world_from(to_frame)
        out = Pose.from_matrix(
            dst.inverse().matrix() @ src.matrix() @ Pose(p, q).matrix(), to_frame
        )
        value = {
            "position_m": _r(out.position_m, 6),
            "quat_wxyz": _r(out.quat_wxyz, 6),
            "frame": to_frame,
        }
        return Result.ok(
            f"{from_frame} -> {to_frame}",
            value,
            receipt=f"transform {from_frame}->{to_frame}: {fmt(out.position_m)} m "
            f"q {fmt(out.quat_wxyz, 3)}",
        )
