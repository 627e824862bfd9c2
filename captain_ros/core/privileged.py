"""Simulator ground truth: the one typed :class:`PrivilegedState` every simulation backend returns.

Tasks (success predicates, milestones, the critic's 36 features), the recorder's privileged topic
and the learning layer read it; policies never see it. Every backend with ground truth (MuJoCo,
the kinematic fake) builds exactly this type, so its fields cannot drift between backends.
Hardware backends have none and raise :class:`~captain_ros.core.errors.NotSupportedError`.

Units: metres, radians, newtons, seconds; quaternions ``(w, x, y, z)``; world frame (REP 103).
:meth:`PrivilegedState.to_dict` / :meth:`PrivilegedState.from_dict` give the JSON form used on the
ROS graph (``/captain/robot/privileged_state``), in bags and in ``privileged.jsonl``; ``from_dict``
also accepts hand-written partial states (tests): optional fields take their documented defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from captain_ros.core.errors import InvalidArgumentError, UnknownNameError

_IDENTITY = (1.0, 0.0, 0.0, 0.0)


def _vec(value: Any, n: int, name: str) -> np.ndarray:
    v = np.array(value, dtype=float).reshape(-1)
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise InvalidArgumentError(f"{name} must be {n} finite numbers, got {value!r}")
    v.setflags(write=False)
    return v


@dataclass(frozen=True, eq=False)
class ObjectTruth:
    """Ground truth of one task object (a free or articulated body of the scene).

    Attributes:
        position_m: World position of the body origin (its centre for boxes and cylinders) [m].
        quat_wxyz: World orientation (w, x, y, z).
        initial_position_m: Position at the start of the episode [m] (``None``: unknown).
        initial_quat_wxyz: Orientation at the start of the episode (``None``: unknown).
        held_by: The arm pinching it between both pads, or ``None``.
        ever_held: It has been pinched by some arm since the episode started.
        pad_contacts: Per arm, how many of the two pads touch it (0, 1 or 2).
        touching: Names of the other bodies in contact with it (objects, ``table``,
            ``robot:<arm>``), sorted.
        size_m: Full extents of a box-shaped object [m] when the backend knows them, else ``None``.
    """

    position_m: np.ndarray
    quat_wxyz: np.ndarray = field(default_factory=lambda: np.array(_IDENTITY))
    initial_position_m: np.ndarray | None = None
    initial_quat_wxyz: np.ndarray | None = None
    held_by: str | None = None
    ever_held: bool = False
    pad_contacts: Mapping[str, int] = field(default_factory=dict)
    touching: tuple[str, ...] = ()
    size_m: np.ndarray | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "position_m", _vec(self.position_m, 3, "position_m"))
        set_(self, "quat_wxyz", _vec(self.quat_wxyz, 4, "quat_wxyz"))
        for name, n in (("initial_position_m", 3), ("initial_quat_wxyz", 4), ("size_m", 3)):
            value = getattr(self, name)
            if value is not None:
                set_(self, name, _vec(value, n, name))
        set_(self, "pad_contacts", {str(k): int(v) for k, v in dict(self.pad_contacts).items()})
        set_(self, "touching", tuple(sorted(str(t) for t in self.touching)))
        set_(self, "ever_held", bool(self.ever_held))

    @property
    def held(self) -> bool:
        """Pinched between both pads of some arm."""
        return self.held_by is not None

    def held_by_arm(self, arm: str) -> bool:
        """Pinched between both pads of ``arm``."""
        if arm in self.pad_contacts:
            return self.pad_contacts[arm] >= 2
        return self.held_by == arm

    def tilt_rad(self, any_face: bool = False) -> float:
        """Angle between the body's z axis and world z [rad].

        With ``any_face`` (a cube: every face is a bottom face), the angle between world z and the
        nearest of the body's six face normals, so a cube resting flat on any face has tilt 0."""
        q = self.quat_wxyz
        w, x, y, z = q / max(float(np.linalg.norm(q)), 1e-12)
        zz = 1.0 - 2.0 * (x * x + y * y)  # R[2, 2]
        if any_face:
            zz = max(abs(2.0 * (x * z - w * y)), abs(2.0 * (y * z + w * x)), abs(zz))  # |R[2, :]|
        return float(np.arccos(np.clip(zz, -1.0, 1.0)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "position_m": self.position_m.tolist(),
            "quat_wxyz": self.quat_wxyz.tolist(),
            "initial_position_m": _opt_list(self.initial_position_m),
            "initial_quat_wxyz": _opt_list(self.initial_quat_wxyz),
            "held_by": self.held_by,
            "held": self.held,
            "ever_held": self.ever_held,
            "pad_contacts": dict(self.pad_contacts),
            "touching": list(self.touching),
            "size_m": _opt_list(self.size_m),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ObjectTruth:
        pads = {str(k): int(v) for k, v in dict(data.get("pad_contacts") or {}).items()}
        held_by = data.get("held_by")
        if held_by is None and "held_by" not in data:
            held_by = next((a for a, n in sorted(pads.items()) if n >= 2), None)
        if held_by is None and data.get("held"):
            held_by = "unknown"  # a hand-written state that only says "held"
        return cls(
            position_m=data["position_m"],
            quat_wxyz=data.get("quat_wxyz", data.get("quaternion_wxyz", _IDENTITY)),
            initial_position_m=data.get("initial_position_m"),
            initial_quat_wxyz=data.get("initial_quat_wxyz"),
            held_by=None if held_by is None else str(held_by),
            ever_held=bool(data.get("ever_held", False)),
            pad_contacts=pads,
            touching=tuple(data.get("touching") or ()),
            size_m=data.get("size_m"),
        )


@dataclass(frozen=True, eq=False)
class ArmTruth:
    """Ground truth of one arm.

    Attributes:
        tcp_position_m: Tool-centre-point position (between the pads) [m].
        tcp_quat_wxyz: Tool orientation (w, x, y, z).
        q_rad: Joint positions [rad].
        jaw_opening_m: Measured jaw opening [m].
        jaw_command_m: Commanded jaw opening [m].
        held_object: Name of the object (or body) pinched between both pads, or ``None``.
        contact_force_n: Magnitude of the external contact force on the arm and gripper [N].
    """

    tcp_position_m: np.ndarray
    tcp_quat_wxyz: np.ndarray = field(default_factory=lambda: np.array(_IDENTITY))
    q_rad: np.ndarray = field(default_factory=lambda: np.zeros(0))
    jaw_opening_m: float = 0.0
    jaw_command_m: float = 0.0
    held_object: str | None = None
    contact_force_n: float = 0.0

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "tcp_position_m", _vec(self.tcp_position_m, 3, "tcp_position_m"))
        set_(self, "tcp_quat_wxyz", _vec(self.tcp_quat_wxyz, 4, "tcp_quat_wxyz"))
        q = np.array(self.q_rad, dtype=float).reshape(-1)
        q.setflags(write=False)
        set_(self, "q_rad", q)
        for name in ("jaw_opening_m", "jaw_command_m", "contact_force_n"):
            set_(self, name, float(getattr(self, name)))

    @property
    def holding(self) -> bool:
        return self.held_object is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tcp_position_m": self.tcp_position_m.tolist(),
            "tcp_quat_wxyz": self.tcp_quat_wxyz.tolist(),
            "q_rad": self.q_rad.tolist(),
            "jaw_opening_m": self.jaw_opening_m,
            "jaw_command_m": self.jaw_command_m,
            "holding": self.holding,
            "held_object": self.held_object,
            "contact_force_n": self.contact_force_n,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ArmTruth:
        return cls(
            tcp_position_m=data.get("tcp_position_m", data.get("ee_position_m")),
            tcp_quat_wxyz=data.get("tcp_quat_wxyz", _IDENTITY),
            q_rad=data.get("q_rad", ()),
            jaw_opening_m=data.get("jaw_opening_m", 0.0),
            jaw_command_m=data.get("jaw_command_m", 0.0),
            held_object=data.get("held_object"),
            contact_force_n=data.get("contact_force_n", 0.0),
        )


@dataclass(frozen=True, eq=False)
class BodyPose:
    """World pose of a named scene body (fixtures such as a cabinet or a block) [m]."""

    position_m: np.ndarray
    quat_wxyz: np.ndarray = field(default_factory=lambda: np.array(_IDENTITY))

    def __post_init__(self) -> None:
        object.__setattr__(self, "position_m", _vec(self.position_m, 3, "position_m"))
        object.__setattr__(self, "quat_wxyz", _vec(self.quat_wxyz, 4, "quat_wxyz"))

    def to_dict(self) -> dict[str, Any]:
        return {"position_m": self.position_m.tolist(), "quat_wxyz": self.quat_wxyz.tolist()}


@dataclass(frozen=True, eq=False)
class PrivilegedState:
    """Simulator ground truth at one instant. Never visible to policies.

    Attributes:
        time_s: Simulation time [s].
        objects: Task objects by name (the scene's ``object_bodies``, in order).
        arms: Arms by name.
        joints: Articulated scene joints (drawer slides, hinges) [m or rad].
        bodies: Other named scene bodies (fixtures).
        checks: The simulator's own success checks by name, where the scene comes with them
            (robosuite's ``_check_success()`` as ``robosuite_success``); in the dict form only
            when there are any.
    """

    time_s: float = 0.0
    objects: Mapping[str, ObjectTruth] = field(default_factory=dict)
    arms: Mapping[str, ArmTruth] = field(default_factory=dict)
    joints: Mapping[str, float] = field(default_factory=dict)
    bodies: Mapping[str, BodyPose] = field(default_factory=dict)
    checks: Mapping[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "time_s", float(self.time_s))
        object.__setattr__(self, "joints", {str(k): float(v) for k, v in dict(self.joints).items()})
        object.__setattr__(self, "checks", {str(k): bool(v) for k, v in dict(self.checks).items()})

    def __eq__(self, other: object) -> bool:
        """Exact (bit-for-bit) equality of every field: what determinism tests need."""
        if not isinstance(other, PrivilegedState):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable-looking contents: not hashable

    def object(self, name: str) -> ObjectTruth:
        """Object ``name``; raises :class:`UnknownNameError` listing the known ones."""
        if name not in self.objects:
            raise UnknownNameError("object", name, sorted(self.objects))
        return self.objects[name]

    def arm(self, name: str) -> ArmTruth:
        """Arm ``name``; raises :class:`UnknownNameError` listing the known ones."""
        if name not in self.arms:
            raise UnknownNameError("arm", name, sorted(self.arms))
        return self.arms[name]

    @property
    def arm_names(self) -> list[str]:
        """Arms in a stable (sorted) order."""
        return sorted(self.arms)

    def joint(self, name: str, default: float | None = None) -> float:
        """Position of articulated joint ``name`` [m or rad].

        A state without it raises :class:`UnknownNameError` unless ``default`` is given (a backend
        without articulation physics, such as the kinematic fake, reports no joints)."""
        if name not in self.joints:
            if default is not None:
                return float(default)
            raise UnknownNameError("joint", name, sorted(self.joints))
        return self.joints[name]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (ROS service, bags, ``privileged.jsonl``)."""
        return {
            "time_s": self.time_s,
            "objects": {k: v.to_dict() for k, v in self.objects.items()},
            "arms": {k: v.to_dict() for k, v in self.arms.items()},
            "joints": dict(self.joints),
            "bodies": {k: v.to_dict() for k, v in self.bodies.items()},
            **({"checks": dict(self.checks)} if self.checks else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PrivilegedState:
        """Parse :meth:`to_dict` output (or a hand-written partial state); raises
        :class:`InvalidArgumentError` on malformed input."""
        if isinstance(data, PrivilegedState):
            return data
        if not isinstance(data, Mapping):
            raise InvalidArgumentError(
                f"a privileged state must be a mapping, got {type(data).__name__}"
            )
        try:
            return cls(
                time_s=data.get("time_s", 0.0),
                objects={
                    str(k): ObjectTruth.from_dict(v)
                    for k, v in dict(data.get("objects") or {}).items()
                },
                arms={
                    str(k): ArmTruth.from_dict(v) for k, v in dict(data.get("arms") or {}).items()
                },
                joints={
                    str(k): float(np.asarray(v).reshape(-1)[0])
                    for k, v in dict(data.get("joints") or {}).items()
                },
                bodies={
                    str(k): BodyPose(v["position_m"], v.get("quat_wxyz", _IDENTITY))
                    for k, v in dict(data.get("bodies") or {}).items()
                },
                checks={str(k): bool(v) for k, v in dict(data.get("checks") or {}).items()},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"malformed privileged state: {type(exc).__name__}: {exc}"
            ) from exc


def _opt_list(v: np.ndarray | None) -> list[float] | None:
    return None if v is None else v.tolist()


def as_privileged(state: PrivilegedState | Mapping[str, Any]) -> PrivilegedState:
    """``state`` itself, or parsed from its dict form."""
    return state if isinstance(state, PrivilegedState) else PrivilegedState.from_dict(state)
