"""The backend registry: every backend's name, what it is, and how it is built and guarded.

Each backend is a folder under ``captain_ros/backends/`` of the same shape: ``config.py`` (its
typed, validated options or rig configuration), ``backend.py`` (the
:class:`~captain_ros.backends.base.Backend`) and a ``make(scene, **options) -> Backend`` in the
folder's ``__init__.py``. :func:`make_backend` is the one place a built backend is wrapped in the
safety layer (:class:`~captain_ros.backends.safety.SafeBackend`: a hardware rig's own limits
from its configuration, the simulators' :data:`~captain_ros.backends.safety.SIM_DEFAULTS`) and,
on hardware, enabled. The CLI's ``--backend`` choices, the evaluation's ground-truth check, the
robot node's parameters and the launch file's checks all read :data:`REGISTRY`.

Names the ROS graph knows besides the Backends (:data:`GRAPH_ONLY`): ``humanoid``, the humanoid
pair, which is a :class:`~captain_ros.backends.humanoid.HumanoidBridge` and not a Backend
(docs/backends.md says why), and ``xr1``, a name the launch answers with the ``ros_arm`` line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from captain_ros.backends.base import Backend
from captain_ros.core.errors import UnknownNameError
from captain_ros.core.scene import SceneSpec

Make = Callable[..., Backend]


@dataclass(frozen=True)
class BackendInfo:
    """One registered backend.

    Attributes:
        name: The ``--backend`` / ``backend:=`` name.
        make: ``make(scene, **options) -> Backend`` of the backend's folder (unguarded).
        ground_truth: A simulator: privileged state and snapshots always exist.
        hardware: A real rig (or its emulator): configured from a rig file, enabled after the
            safety layer's checks, no per-request ground truth through the ROS graph.
        launched: The ROS launch file starts it (else the launch refuses it with ``refusal``).
        rig_args: The CLI rig arguments it takes (``--config``, ``--can``, ``--emulate``, ``--rig``).
        refusal: Why the launch refuses it and what to run instead (``launched=False`` only).
    """

    name: str
    make: Make
    ground_truth: bool
    hardware: bool = False
    launched: bool = True
    rig_args: tuple[str, ...] = ()
    refusal: str = ""


def _mujoco(scene: SceneSpec | None, **kw: Any) -> Backend:
    from captain_ros.backends import mujoco

    return mujoco.make(scene, **kw)


def _fake(scene: SceneSpec | None, **kw: Any) -> Backend:
    from captain_ros.backends import fake

    return fake.make(scene, **kw)


def _piper(scene: SceneSpec | None, **kw: Any) -> Backend:
    from captain_ros.backends import piper

    return piper.make(scene, **kw)


def _ros_arm(scene: SceneSpec | None, **kw: Any) -> Backend:
    from captain_ros.backends import ros_arm

    return ros_arm.make(scene, **kw)


def _robosuite(scene: SceneSpec | None, **kw: Any) -> Backend:
    from captain_ros.backends import robosuite  # optional extra (docs/robosuite.md)

    return robosuite.make(scene, **kw)


REGISTRY: dict[str, BackendInfo] = {
    b.name: b
    for b in (
        BackendInfo("mujoco", _mujoco, ground_truth=True),
        BackendInfo("fake", _fake, ground_truth=True),
        # PiPER over CAN (piper_sdk); `emulate=True` starts the CAN emulator; `rig="piper_dual"`
        BackendInfo(
            "piper",
            _piper,
            ground_truth=False,
            hardware=True,
            rig_args=("config", "can", "emulate", "rig"),
        ),
        # any ros2_control arm over ROS 2 (XR1: config/xr1.yaml); the ros layer gives the transport
        BackendInfo("ros_arm", _ros_arm, ground_truth=False, hardware=True, rig_args=("config",)),
        # robosuite's own tasks (optional extra): task:=lift | stack | two_arm_lift | door | ...
        BackendInfo("robosuite", _robosuite, ground_truth=True),
    )
}
"""Every backend, by name (the order of ``--backend`` choices)."""

BACKENDS: tuple[str, ...] = tuple(REGISTRY)
GRAPH_ONLY: dict[str, str] = {
    "xr1": "the XR1 arm through the ROS 2 arm bridge: use backend:=ros_arm "
    "backend_config:=config/xr1.yaml (with its driver running)",
    "humanoid": "the humanoid pair: its own controller node and CoEvolve node",
}
"""Names the ROS graph knows that are not Backends (see the module docstring)."""


def info(name: str) -> BackendInfo:
    """The registered backend ``name`` (else :class:`UnknownNameError` listing them)."""
    if name not in REGISTRY:
        raise UnknownNameError("backend", name, list(REGISTRY))
    return REGISTRY[name]


def names(
    *, ground_truth: bool | None = None, hardware: bool | None = None, launched: bool | None = None
) -> tuple[str, ...]:
    """Registered names, filtered by the given properties (``None``: either)."""
    return tuple(
        b.name
        for b in REGISTRY.values()
        if (ground_truth is None or b.ground_truth == ground_truth)
        and (hardware is None or b.hardware == hardware)
        and (launched is None or b.launched == launched)
    )


def make_backend(
    name: str, scene: SceneSpec | None = None, *, enable: bool = True, **options: Any
) -> Backend:
    """Build backend ``name`` for ``scene``, wrapped in the safety layer that every backend shares.

    Args:
        name: A :data:`BACKENDS` name.
        scene: A :class:`~captain_ros.core.scene.SceneSpec` (``None``: the empty table); tasks
            sample one with ``task.sample(seed)``.
        enable: Hardware: enable the motors after the safety layer's checks (``captain hw check``:
            False). Simulators have nothing to enable.
        **options: The backend's options (its folder's ``config.py``), e.g. ``rig="piper_dual"``
            without a scene, or a rig's ``config=``/``can=``/``emulate=``.
    """
    return guard(info(name).make(scene, **options), enable=enable)


def guard(inner: Backend, *, enable: bool = True) -> Backend:
    """``inner`` inside :class:`~captain_ros.backends.safety.SafeBackend` with its limits (a rig's
    ``safety`` section, else the simulators' defaults); ``enable``: enable a rig's motors after the
    link and twin checks. A failed enable closes the backend before the error propagates."""
    from captain_ros.backends.hardware import HardwareBackend
    from captain_ros.backends.safety import SIM_DEFAULTS, SafeBackend

    limits = inner.config.safety if isinstance(inner, HardwareBackend) else SIM_DEFAULTS
    safe = SafeBackend(inner, limits)
    if enable:
        try:
            safe.enable()
        except Exception:
            safe.close()
            raise
    return safe


__all__ = [
    "BACKENDS",
    "GRAPH_ONLY",
    "REGISTRY",
    "BackendInfo",
    "guard",
    "info",
    "make_backend",
    "names",
]
