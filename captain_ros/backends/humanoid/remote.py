"""The humanoid bridge as plain-data calls: what a controller process serves and a client sends.

:func:`serve` executes one named call on a bridge with JSON arguments and returns a JSON-ready
reply ``{"ok", "value", "error", "error_type"}`` (never raises); the ``encode_*``/``decode_*``
helpers convert the bridge's dataclasses. The ROS controller node (``ros/humanoid_node.py``) serves
it over a service and :class:`~captain_ros.ros.humanoid_client.RosHumanoidBridge` calls it; both
stay thin because the logic is here, ROS-free.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from captain_ros.backends.humanoid.bridge import HumanoidBridge
from captain_ros.backends.humanoid.types import BaseVelocity, HumanoidState, Pose2D
from captain_ros.core.errors import EStopError, InvalidArgumentError, UnknownNameError

CALLS = (
    "spec",
    "time",
    "state",
    "command_velocity",
    "command_height",
    "command_arms",
    "reset_monitor",
)


def encode_state(s: HumanoidState) -> dict[str, Any]:
    return s.to_dict()


def decode_state(d: dict[str, Any]) -> HumanoidState:
    b, v = d["base"], d["base_velocity"]
    return HumanoidState(
        str(d["name"]),
        Pose2D(float(b["x_m"]), float(b["y_m"]), float(b["yaw_rad"])),
        BaseVelocity(float(v["vx_m_s"]), float(v["vy_m_s"]), float(v["wz_rad_s"])),
        float(d["height_offset_m"]),
        float(d["tilt_rad"]),
        np.asarray(d["arm_q_rad"], float),
        np.asarray(d["arm_target_rad"], float),
        np.asarray(d["arm_torque_nm"], float),
        (float(d["palm_force_n"][0]), float(d["palm_force_n"][1])),
        bool(d["fallen"]),
        float(d["stamp_s"]),
    )


def _number(kwargs: dict[str, Any], key: str) -> float:
    v = kwargs.get(key)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        raise InvalidArgumentError(f"{key} must be a finite number")
    return float(v)


def serve(bridge: HumanoidBridge, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Execute call ``name`` on ``bridge``; a JSON-ready reply (errors become ``ok: false``)."""
    try:
        if name not in CALLS:
            raise UnknownNameError("humanoid call", name, CALLS)
        if name == "spec":
            sp = bridge.spec
            value: Any = {
                "robots": [r.name for r in sp.robots],
                "control_dt_s": sp.control_dt_s,
                "physics_dt_s": sp.physics_dt_s,
                "limits": {r.name: r.base_limits.__dict__ for r in sp.robots},
            }
        elif name == "time":
            value = bridge.time_s()
        elif name == "state":
            value = encode_state(bridge.state(str(kwargs.get("robot"))))
        elif name == "command_velocity":
            v = BaseVelocity(
                _number(kwargs, "vx_m_s"), _number(kwargs, "vy_m_s"), _number(kwargs, "wz_rad_s")
            )
            value = bridge.command_velocity(str(kwargs.get("robot")), v).to_dict()
        elif name == "command_height":
            value = bridge.command_height(str(kwargs.get("robot")), _number(kwargs, "offset_m"))
        elif name == "command_arms":
            q = kwargs.get("q_rad")
            if not isinstance(q, list):
                raise InvalidArgumentError("q_rad must be a list of 14 numbers [rad]")
            value = bridge.command_arms(
                str(kwargs.get("robot")), np.asarray(q, float), _number(kwargs, "ramp_s")
            ).tolist()
        else:
            bridge.reset_monitor()
            value = None
        return {"ok": True, "value": value, "error": "", "error_type": ""}
    except EStopError as exc:
        return {"ok": False, "value": None, "error": str(exc), "error_type": "estop"}
    except (InvalidArgumentError, UnknownNameError, TypeError, ValueError) as exc:
        return {"ok": False, "value": None, "error": str(exc), "error_type": "invalid"}


def raise_for(reply: dict[str, Any]) -> Any:
    """The reply's value, or the error it carries raised as the matching exception."""
    if reply.get("ok"):
        return reply.get("value")
    kind, msg = reply.get("error_type"), str(reply.get("error", "call failed"))
    if kind == "estop":
        raise EStopError(msg)
    raise InvalidArgumentError(msg)
