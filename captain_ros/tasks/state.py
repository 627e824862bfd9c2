"""Read-only accessors over ``backend.privileged_state()`` used by predicates and features.

Tasks never touch the simulator directly: every predicate, milestone and critic feature is a pure
function of the privileged-state dict. This module is the one place that knows its layout, so a
change of the backend's schema is absorbed here.

Expected keys (:meth:`captain_ros.backends.mujoco.MujocoBackend.privileged_state`):

- ``"objects"``: ``{body: {"position_m": [3], "quat_wxyz": [4], "initial_position_m": [3],
  "held": bool, "held_by": arm | None, "ever_held": bool, "pad_contacts": {arm: 0|1|2}}}`` [m];
- ``"joints"``: ``{joint: position}`` of articulated scene joints [m or rad];
- ``"arms"``: ``{arm: {"tcp_position_m": [3], "jaw_opening_m": float, ...}}``.

Hand-written states (unit tests) may omit the optional keys: ``held`` then falls back to
``pad_contacts``, ``initial_position_m`` to the tracker's memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from captain_ros.core.errors import UnknownNameError


def object_position_m(state: Mapping[str, Any], body: str) -> np.ndarray:
    """World position of task body ``body`` [m]."""
    return np.asarray(_object(state, body)["position_m"], dtype=float)


def object_quat_wxyz(state: Mapping[str, Any], body: str) -> np.ndarray:
    """World orientation of task body ``body`` as a (w, x, y, z) quaternion."""
    obj = _object(state, body)
    return np.asarray(obj.get("quat_wxyz", obj.get("quaternion_wxyz", (1.0, 0.0, 0.0, 0.0))), dtype=float)


def _object(state: Mapping[str, Any], body: str) -> Mapping[str, Any]:
    objects = state.get("objects", {})
    if body not in objects:
        raise UnknownNameError("object", body, sorted(objects))
    return objects[body]


def initial_position_m(state: Mapping[str, Any], body: str) -> np.ndarray | None:
    """Position of ``body`` at the episode start if the state records it [m], else ``None``."""
    p = _object(state, body).get("initial_position_m")
    return None if p is None else np.asarray(p, dtype=float)


def tilt_rad(state: Mapping[str, Any], body: str, any_face: bool = False) -> float:
    """Angle between the body's z axis and the world z axis [rad].

    With ``any_face`` (a cube: every face is a bottom face), the angle between world z and the
    nearest of the body's six face normals, so a cube resting flat on any face has tilt 0."""
    q = object_quat_wxyz(state, body)
    w, x, y, z = q / max(float(np.linalg.norm(q)), 1e-12)
    zz = 1.0 - 2.0 * (x * x + y * y)  # R[2, 2]
    if any_face:
        zz = max(abs(2.0 * (x * z - w * y)), abs(2.0 * (y * z + w * x)), abs(zz))  # |R[2, :]|
    return float(np.arccos(np.clip(zz, -1.0, 1.0)))


def joint_position(state: Mapping[str, Any], joint: str, default: float | None = None) -> float:
    """Position of articulated scene joint ``joint`` [m for slides, rad for hinges].

    A state without that joint raises :class:`UnknownNameError`, unless ``default`` is given
    (a backend without articulation physics, such as the kinematic fake, reports no joints).
    """
    joints = state.get("joints", {})
    if joint not in joints:
        if default is not None:
            return float(default)
        raise UnknownNameError("joint", joint, sorted(joints))
    return float(np.asarray(joints[joint]).reshape(-1)[0])


def arm_names(state: Mapping[str, Any]) -> list[str]:
    """Arms present in the state, in a stable order."""
    return sorted(state.get("arms", {}))


def ee_position_m(state: Mapping[str, Any], arm: str) -> np.ndarray:
    """Tool-centre-point position of ``arm`` [m]."""
    arms = state.get("arms", {})
    if arm not in arms:
        raise UnknownNameError("arm", arm, sorted(arms))
    a = arms[arm]
    return np.asarray(a.get("tcp_position_m", a.get("ee_position_m")), dtype=float)


def jaw_opening_m(state: Mapping[str, Any], arm: str) -> float:
    """Measured jaw opening of ``arm`` [m]."""
    return float(state.get("arms", {}).get(arm, {}).get("jaw_opening_m", 0.0))


def held_by(state: Mapping[str, Any], body: str, arm: str) -> bool:
    """``body`` is pinched between both pads of ``arm``."""
    obj = _object(state, body)
    pads = obj.get("pad_contacts", {})
    if arm in pads:
        return int(pads[arm]) >= 2
    return obj.get("held_by") == arm


def held(state: Mapping[str, Any], body: str) -> bool:
    """``body`` is pinched by any arm."""
    obj = _object(state, body)
    if "held" in obj:
        return bool(obj["held"])
    return any(held_by(state, body, arm) for arm in arm_names(state))


def ever_held(state: Mapping[str, Any], body: str) -> bool:
    """The state's own ever-held flag of ``body`` (the backend tracks it across steps)."""
    return bool(_object(state, body).get("ever_held", False))
