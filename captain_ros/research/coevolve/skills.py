"""The fixed motor interface: the skill catalog each robot policy may call, declared once.

A robot policy is one allowed action call on its own handle followed by an explicit
``<handle>.stop()``. The catalog below is static (it does not evolve): names, parameters with
bounds and units, and which coordination modes and roles each primitive admits. The Coder's prompt,
the host's bound checks, the paired-consistency checks and the sandbox clients all read it.

Transport primitives: ``coordinated_linear_transport`` (a common translation), ``coordinated_pivot``
(temporary inner-support / outer-mover roles, or co-rotation about the payload centre) and
``coordinated_alignment`` (a reference robot holds while the other makes a bounded correction).
``initialization``, ``placement``, ``release`` and ``retreat`` are lifecycle operations.

This module is pure data plus a tiny client class: the sandboxed session imports it to build the
``robot_a`` / ``robot_b`` handles (:func:`build_client`), whose calls only send ``(name, kwargs)``
to the host; they hold no bridge, verifier, checkpoint or controller object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

STOP = "stop"
MODES = ("synchronous", "asymmetric")
ROLES = ("peer", "inner_support", "outer_mover", "co_rotator", "reference", "corrector")


@dataclass(frozen=True)
class SkillParam:
    """One skill parameter.

    Attributes:
        name: Keyword name.
        kind: ``"float"`` (bounded by ``lo``/``hi``), ``"vec2"`` (two finite floats whose norm is
            bounded by ``lo``/``hi``) or ``"choice"`` (one of ``choices``).
        doc: One line with units.
        lo / hi: Inclusive bounds (value, or vector norm).
        choices: Allowed values of a choice parameter.
    """

    name: str
    kind: str
    doc: str
    lo: float = 0.0
    hi: float = 0.0
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ("float", "vec2", "choice"):
            raise ValueError(f"unknown skill parameter kind {self.kind!r}")
        if self.kind != "choice" and not self.lo <= self.hi:
            raise ValueError(f"{self.name}: lo must not exceed hi")

    def describe(self) -> str:
        if self.kind == "choice":
            return f"{self.name}: one of {', '.join(self.choices)}. {self.doc}"
        what = "norm" if self.kind == "vec2" else "value"
        return f"{self.name}: {self.kind}, {what} in [{self.lo:g}, {self.hi:g}]. {self.doc}"


@dataclass(frozen=True)
class Skill:
    """One skill of the motor interface.

    Attributes:
        name: Method name on a robot handle.
        kind: ``"lifecycle"`` or ``"transport"``.
        doc: What it does (one paragraph).
        params: Parameters (keyword names, in positional order).
        modes: Coordination modes it admits.
        role_sets: Admissible role assignments per mode, as sorted pairs of role names.
    """

    name: str
    kind: str
    doc: str
    params: tuple[SkillParam, ...]
    modes: tuple[str, ...]
    role_sets: tuple[tuple[str, tuple[str, str]], ...]

    def param(self, name: str) -> SkillParam | None:
        return next((p for p in self.params if p.name == name), None)

    def admits(self, mode: str, roles: tuple[str, str]) -> bool:
        """Whether ``mode`` with the two robots' ``roles`` (any order) is admissible."""
        pair = tuple(sorted(roles))
        return any(m == mode and rs == pair for m, rs in self.role_sets)


_PEER = (("synchronous", ("peer", "peer")),)
SKILLS: dict[str, Skill] = {
    s.name: s
    for s in (
        Skill(
            "initialization",
            "lifecycle",
            "Ramp the arms to the support posture (torque-limited PD, kp 24, kd 1.5, 6 s ramp, palms "
            "tilted 60 degrees) and stand up from the squat, lifting the payload off the start "
            "pedestal. Takes about 7 s.",
            (),
            ("synchronous",),
            _PEER,
        ),
        Skill(
            "coordinated_linear_transport",
            "transport",
            "Translate the base by distance_m along the world-frame direction_xy (normalised by the "
            "host) at speed_m_s, keeping the heading (a side-by-side pair steps sideways). Both robots "
            "receive the same arguments.",
            (
                SkillParam(
                    "direction_xy", "vec2", "world-frame direction [x, y] (unitless).", 0.2, 10.0
                ),
                SkillParam("distance_m", "float", "distance [m].", 0.05, 1.5),
                SkillParam(
                    "speed_m_s",
                    "float",
                    "cruise speed [m/s]; lateral stepping is limited to 0.3 m/s.",
                    0.05,
                    0.30,
                ),
            ),
            ("synchronous",),
            _PEER,
        ),
        Skill(
            "coordinated_pivot",
            "transport",
            "Rotate the formation by angle_rad (counter-clockwise positive). inner_support turns in "
            "place; outer_mover walks the arc around it (its speed is angular speed times the "
            "spacing, about 1.46 m, and the controller clips lateral steps at 0.3 m/s); two "
            "co_rotator robots both walk arcs about the payload centre.",
            (
                SkillParam(
                    "role",
                    "choice",
                    "this robot's temporary role.",
                    choices=("inner_support", "outer_mover", "co_rotator"),
                ),
                SkillParam(
                    "angle_rad", "float", "rotation [rad], counter-clockwise positive.", -1.75, 1.75
                ),
                SkillParam("angular_speed_rad_s", "float", "cruise turn rate [rad/s].", 0.05, 0.6),
            ),
            ("asymmetric", "synchronous"),
            (
                ("asymmetric", ("inner_support", "outer_mover")),
                ("synchronous", ("co_rotator", "co_rotator")),
            ),
        ),
        Skill(
            "coordinated_alignment",
            "transport",
            "The reference robot holds; the corrector moves its base by correction_xy (world frame) "
            "and turns by yaw_correction_rad, restoring formation spacing, skew or the corridor "
            "centring. The reference passes a zero correction.",
            (
                SkillParam(
                    "role", "choice", "this robot's role.", choices=("reference", "corrector")
                ),
                SkillParam(
                    "correction_xy",
                    "vec2",
                    "world-frame base correction [m]; zero for the reference.",
                    0.0,
                    0.20,
                ),
                SkillParam(
                    "yaw_correction_rad",
                    "float",
                    "heading correction [rad]; zero for the reference.",
                    -0.3,
                    0.3,
                ),
                SkillParam("speed_m_s", "float", "correction speed [m/s].", 0.02, 0.15),
            ),
            ("asymmetric",),
            (("asymmetric", ("corrector", "reference")),),
        ),
        Skill(
            "placement",
            "lifecycle",
            "Lower the payload onto the target pedestal by squatting lower_m at speed_m_s.",
            (
                SkillParam("lower_m", "float", "how far to lower the pelvis [m].", 0.02, 0.20),
                SkillParam("speed_m_s", "float", "lowering speed [m/s].", 0.02, 0.10),
            ),
            ("synchronous",),
            _PEER,
        ),
        Skill(
            "release",
            "lifecycle",
            "Move the palms down and back from under the payload, then hold still for hold_s (the "
            "stability window: the payload must stay within tolerance on the pedestal).",
            (
                SkillParam(
                    "hold_s", "float", "stability window [s] (at least the task's 3 s).", 3.0, 6.0
                ),
            ),
            ("synchronous",),
            _PEER,
        ),
        Skill(
            "retreat",
            "lifecycle",
            "Step straight back (away from the partner) by distance_m at speed_m_s.",
            (
                SkillParam("distance_m", "float", "distance [m].", 0.2, 1.0),
                SkillParam(
                    "speed_m_s",
                    "float",
                    "speed [m/s] (backward stepping is limited to 0.3 m/s).",
                    0.05,
                    0.30,
                ),
            ),
            ("synchronous",),
            _PEER,
        ),
    )
}
PRIMITIVES = tuple(SKILLS)
TRANSPORT_PRIMITIVES = tuple(n for n, s in SKILLS.items() if s.kind == "transport")


def catalog_text() -> str:
    """The skill catalog as prompt text."""
    lines = []
    for s in SKILLS.values():
        args = ", ".join(p.name for p in s.params)
        lines.append(f"- {s.name}({args}) [{s.kind}; modes: {', '.join(s.modes)}]: {s.doc}")
        lines += [f"    {p.describe()}" for p in s.params]
    lines.append(f"- {STOP}(): required as the last statement of every robot policy.")
    return "\n".join(lines)


class SkillHandle:
    """A robot handle inside the sandbox: each skill method sends ``(name, kwargs)`` and returns
    the host's reply. Positional arguments map to the catalog's parameter order."""

    __slots__ = ("_send",)

    def __init__(self, send: Callable[[str, dict[str, Any]], Any]) -> None:
        object.__setattr__(self, "_send", send)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("robot handles are read-only")

    def __getattr__(self, name: str) -> Callable[..., Any]:
        skill = SKILLS.get(name)
        if skill is None and name != STOP:
            raise AttributeError(f"no skill {name!r}; available: {', '.join((*SKILLS, STOP))}")
        names = tuple(p.name for p in skill.params) if skill else ()
        send = object.__getattribute__(self, "_send")

        def call(*args: Any, **kwargs: Any) -> Any:
            if len(args) > len(names):
                kwargs["__extra_positional__"] = list(args[len(names) :])
            kwargs.update(dict(zip(names, args, strict=False)))
            return send(name, kwargs)

        call.__name__ = name
        call.__doc__ = skill.doc if skill else "End this robot's policy."
        return call

    def __repr__(self) -> str:
        return "<robot handle: " + ", ".join((*SKILLS, STOP)) + ">"


def build_client(transport: Callable[[str, dict[str, Any]], Any]) -> SkillHandle:
    """A :class:`SkillHandle` over ``transport(name, kwargs)`` (the sandbox's pipe)."""
    return SkillHandle(transport)
