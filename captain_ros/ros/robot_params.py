"""The robot node's parameters and what they mean without ROS: the backend they configure
(through the composition root's :class:`~captain_ros.evaluation.config.EpisodeConfig`) and how a
scene's backend is built (:func:`scene_maker`), which backends the graph runs, whether an emulated
rig knows its ground truth, which debug services are served and how (:func:`service_plan`), and
which cameras are published (:func:`camera_names`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from captain_ros.backends.registry import GRAPH_ONLY, names
from captain_ros.evaluation.config import BackendConfig, EpisodeConfig
from captain_ros.evaluation.episode import make_robot_backend
from captain_ros.ros.access import DEBUG_SERVICES, debug_services
from captain_ros.ros.params import Param

KNOWN_BACKENDS = (*names(launched=True), *GRAPH_ONLY)
HARDWARE_BACKENDS = names(hardware=True)
"""No per-request ground truth through the graph (also when emulated): bags as on the real rig."""
PARAMS = (
    Param("backend", "mujoco", "Robot backend.", choices=KNOWN_BACKENDS),
    Param("task", "pick_place", "Task whose scene the simulator loads (simulation backends)."),
    Param("seed", 1000, "Scene seed of the task.", min_value=0),
    Param(
        "joint_state_rate_hz",
        10.0,
        "Rate of /joint_states, /tf and wrench [Hz] (applied at the next activate).",
        1.0,
        1000.0,
        read_only=False,
    ),
    Param(
        "camera_rate_hz",
        0.0,
        "Live camera preview rate [Hz]; 0: only observations are published "
        "(by the perception node). Applied at the next activate.",
        0.0,
        60.0,
        read_only=False,
    ),
    Param("cameras", "", "Comma-separated cameras to publish; empty = all."),
    Param("publish_depth", True, "Also publish 32FC1 depth images [m]."),
    Param(
        "backend_config",
        "",
        "Rig config of a hardware backend ('' = its default: "
        "config/piper.yaml for piper (config/piper_dual.yaml: the dual rig), config/xr1.yaml "
        "for ros_arm).",
    ),
    Param("can", "", "piper: CAN interface(s), can0 or can0,can1 ('' = from the config)."),
    Param("emulate", False, "piper: the CAN emulator with the task's scene instead of hardware."),
    Param(
        "require_episode",
        True,
        "Serve robot calls only for the active episode (its "
        "episode_id); false: any caller (in-process tests, a bench without a policy node).",
    ),
    Param(
        "active_episode",
        "",
        "The episode whose robot calls are served; the policy node sets "
        "it for a goal's duration ('' = none).",
        read_only=False,
    ),
    Param(
        "key_file",
        "",
        "Secured graph: the deployment's key file (0600); robot calls, the "
        "e-stop reset, snapshot/restore and load_scene then need its credential ('' = open "
        "graph; docs/ros.md).",
    ),
    Param(
        "debug_services",
        False,
        "Also serve snapshot/restore/load_scene on a real rig (never "
        "privileged_state); simulations and emulated rigs always serve them.",
    ),
)


def implemented_backends() -> tuple[str, ...]:
    return names(launched=True)


def backend_config(values: Mapping[str, Any]) -> BackendConfig:
    """The backend of the node parameters (``backend`` and the rig's ``backend_config``, ``can``,
    ``emulate``), as every front end's episode has it."""
    return EpisodeConfig.from_ros_parameters(values).backend


def scene_maker(values: Mapping[str, Any]) -> Callable[[str, int], Any]:
    """``make(task, seed)``: the backend of that scene with the node parameters ``values``, built
    by the composition root (raises on an unknown task or a bad seed)."""

    def make(task: str, seed: int) -> Any:
        config = backend_config({**values, "task": task, "seed": seed})
        return make_robot_backend(config, task, seed)

    return make


def camera_names(values: Mapping[str, Any], cameras: tuple[str, ...]) -> tuple[str, ...]:
    """The cameras whose images are published: the ``cameras`` parameter's, else all of the
    backend's ``cameras``."""
    named = [c.strip() for c in values["cameras"].split(",") if c.strip()]
    return tuple(named or cameras)


@dataclass(frozen=True)
class ServicePlan:
    """How the robot node serves its debug services (:data:`~captain_ros.ros.access.DEBUG_SERVICES`
    and ``privileged_state``).

    Attributes:
        plain: Each service's name -> whether it is a plain ROS service.
        signed: Served as signed commands of the secured graph instead (``/captain/secure/command``).
    """

    plain: dict[str, bool]
    signed: tuple[str, ...]


def service_plan(values: Mapping[str, Any], backend: Any, secured: bool) -> ServicePlan:
    """The debug services of a robot node with parameters ``values`` hosting ``backend``: what
    :func:`~captain_ros.ros.access.debug_services` serves, and on the ``secured`` graph the
    world-changing ones only as signed commands (``privileged_state`` reads, it stays plain)."""
    served = debug_services(
        values["backend"] in HARDWARE_BACKENDS,
        has_ground_truth(backend),
        bool(values["debug_services"]),
    )
    signed = {n: on for n, on in served.items() if n in DEBUG_SERVICES} if secured else {}
    return ServicePlan(
        plain={**served, **dict.fromkeys(signed, False)},
        signed=tuple(n for n, on in signed.items() if on),
    )


def has_ground_truth(backend: Any) -> bool:
    """Whether a hardware backend is emulated and knows its world's ground truth (the PiPER
    emulator, the simulated ROS arm driver); a real rig raises ``NotSupportedError``."""
    from captain_ros.core.errors import NotSupportedError

    try:
        backend.privileged_state()
    except NotSupportedError:
        return False
    return True


def check_backend(values: dict[str, Any]) -> str | None:
    if values["backend"] not in implemented_backends():
        return (
            f"backend {values['backend']!r} is not implemented yet; implemented: "
            f"{', '.join(implemented_backends())}"
        )
    return None
