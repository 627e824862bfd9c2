"""Who may command the robot through the ROS graph: the checks the nodes apply (docs/ros.md).

The middleware in the lock cannot authenticate a peer: the ``ros-fastdds`` 3.2 wheel is built
without Fast DDS's security plugins (``ROS_SECURITY_ENABLE=true`` with an SROS2 enclave fails at
participant creation with "This Fast DDS version doesn't have the security libraries"), so there
is no SROS2 mode. What the graph can do instead, and does here:

- :func:`graph_environment`: the launch keeps discovery on this host and off the shared default
  domain 0 (a limit on who *finds* the graph, not access control: any local process that sets
  the same ``ROS_DOMAIN_ID`` can still call every service);
- :func:`episode_refusal`: robot calls are served only for the episode the policy node opened
  (its ``episode_id``, set as the robot node's ``active_episode`` parameter for the goal's
  duration);
- :func:`confine`: a goal's output folder and a ``replay:`` file must lie under a configured root;
- :func:`debug_services`: snapshot/restore/load_scene and ``privileged_state`` are not served on a
  real rig unless a parameter asks for them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.result import FailureCategory, Result

DEFAULT_DOMAIN_ID = 42
"""``ROS_DOMAIN_ID`` of a launch whose environment names none (not 0, every ROS tool's default)."""

DEBUG_SERVICES = ("snapshot", "restore", "load_scene")
"""Robot node services that can teleport the world (``/captain/robot/<name>``)."""


def graph_environment(env: Mapping[str, str], domain_id: str = "") -> dict[str, str]:
    """Environment the launch gives every node: localhost discovery and a non-default domain.

    Args:
        env: The launching process's environment (its choices are kept when explicit).
        domain_id: The launch argument (``""``: the environment's ``ROS_DOMAIN_ID``, else
            :data:`DEFAULT_DOMAIN_ID`).

    Raises:
        InvalidArgumentError: ``domain_id`` is not an integer in 0..101.
    """
    text = domain_id or env.get("ROS_DOMAIN_ID", "") or str(DEFAULT_DOMAIN_ID)
    if not text.isdigit() or not 0 <= int(text) <= 101:
        raise InvalidArgumentError(f"domain_id:={text} must be an integer in 0..101")
    return {
        "ROS_DOMAIN_ID": str(int(text)),
        "ROS_AUTOMATIC_DISCOVERY_RANGE": env.get("ROS_AUTOMATIC_DISCOVERY_RANGE") or "LOCALHOST",
    }


def episode_refusal(active_episode: str, episode_id: str, capability: str) -> Result | None:
    """Why a robot call carrying ``episode_id`` is refused (None: it belongs to the active one)."""
    if not active_episode:
        return Result.fail(
            FailureCategory.PRECONDITION,
            f"{capability[:60]}: no episode is active; robot calls are served only "
            "inside a RunEpisode goal (/captain/run_episode). Nothing was executed.",
        )
    if episode_id != active_episode:
        return Result.fail(
            FailureCategory.PRECONDITION,
            f"{capability[:60]}: episode_id {episode_id[:80]!r} is not the active "
            "episode; nothing was executed.",
        )
    return None


def confine(path: str | os.PathLike[str], root: str | os.PathLike[str], what: str) -> Path:
    """``path`` resolved (symlinks followed; a relative path from the working directory, as every
    other path the node is given) when it lies under ``root``.

    Raises:
        InvalidArgumentError: It lies outside ``root``. The message is the same whether or not the
            path exists or can be read (it tells nothing about files outside the root).
    """
    base = Path(root).expanduser().resolve()
    resolved = Path(path).expanduser().resolve()
    if resolved != base and base not in resolved.parents:
        raise InvalidArgumentError(
            f"{what} {str(path)[:200]!r} is outside the allowed root "
            f"{base} (the policy node's parameter); refused"
        )
    return resolved


def debug_services(hardware: bool, ground_truth: bool, allow_on_hardware: bool) -> dict[str, bool]:
    """Which of the robot node's world-changing and ground-truth services it serves.

    Args:
        hardware: The backend drives a rig (piper, ros_arm), emulated or real.
        ground_truth: The backend knows its world's ground truth (simulation; an emulated rig).
        allow_on_hardware: The ``debug_services`` parameter: serve snapshot/restore/load_scene on
            a real rig too.

    On a simulation and on an emulated rig (its world is a simulation) all are served; on a real
    rig ``privileged_state`` never is (there is none), the others only when asked for.
    """
    real_rig = hardware and not ground_truth
    served = {name: not real_rig or allow_on_hardware for name in DEBUG_SERVICES}
    served["privileged_state"] = not real_rig
    return served
