"""Process environment for ROS 2 from the PyPI wheels (no rclpy import here).

Facts this encodes (see docs/ros.md): only Fast DDS ships as a wheel, so ``RMW_IMPLEMENTATION``
must be ``rmw_fastrtps_cpp``; discovery is restricted to the local host; the transport is UDP over
the loopback, not shared memory (:data:`BUILTIN_TRANSPORTS`); a Fast DDS profile with a
short announcement period makes cross-process matching take well under a second instead of ~3 s;
rclpy logs go to ``ROS_LOG_DIR`` (kept inside the build tree for tests); a process that already
called ``rclpy.init`` must start children with ``spawn``, never ``fork``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

FASTDDS_FAST_DISCOVERY_XML = """<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns="http://www.eprosima.com">
  <profiles>
    <participant profile_name="captain_fast_discovery" is_default_profile="true">
      <rtps>
        <builtin>
          <discovery_config>
            <leaseDuration><sec>10</sec></leaseDuration>
            <leaseAnnouncement><sec>1</sec></leaseAnnouncement>
            <initialAnnouncements>
              <count>20</count>
              <period><nanosec>100000000</nanosec></period>
            </initialAnnouncements>
          </discovery_config>
        </builtin>
      </rtps>
    </participant>
  </profiles>
</dds>
"""


BUILTIN_TRANSPORTS = "UDPv4"
"""Fast DDS transports of every captain graph (``FASTDDS_BUILTIN_TRANSPORTS``; a value the
environment sets wins). Not the default shared memory: a process killed by a signal (a crash, the
chaos soak's SIGKILL) can leave the shared-memory transport of the processes that stay up unable to
deliver large messages to later readers (camera images, the image service's replies, so every call
waits out its timeout), and no respawn repairs it (eProsima/Fast-DDS#5469). Found by
``benchmarks/bench_chaos_soak.py``: after about 40 goals with kills, every goal waited 60 s for its
first image and its bag lacked the camera topics. UDP over the loopback has no shared state to
corrupt."""


def transport_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``FASTDDS_BUILTIN_TRANSPORTS`` for the graph's processes (:data:`BUILTIN_TRANSPORTS` unless
    ``env`` names its own)."""
    return {
        "FASTDDS_BUILTIN_TRANSPORTS": env.get("FASTDDS_BUILTIN_TRANSPORTS") or BUILTIN_TRANSPORTS
    }


def write_fastdds_profile(directory: str | os.PathLike[str]) -> Path:
    """Write the fast-discovery Fast DDS profile into ``directory`` and return its path."""
    path = Path(directory) / "fastdds_fast_discovery.xml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != FASTDDS_FAST_DISCOVERY_XML:
        path.write_text(FASTDDS_FAST_DISCOVERY_XML)
    return path


def ros_environment(
    state_dir: str | os.PathLike[str],
    domain_id: int | None = None,
    base: dict[str, str] | None = None,
) -> dict[str, str]:
    """Environment variables for a ROS process whose logs and profile live under ``state_dir``.

    Args:
        state_dir: Directory for ``ROS_HOME``, ``ROS_LOG_DIR`` and the Fast DDS profile.
        domain_id: ``ROS_DOMAIN_ID`` (0..101 on Linux); unchanged when ``None``.
        base: Environment to start from (default: ``os.environ``).
    """
    env = dict(os.environ if base is None else base)
    state = Path(state_dir)
    (state / "log").mkdir(parents=True, exist_ok=True)
    env["ROS_HOME"] = str(state)
    env["ROS_LOG_DIR"] = str(state / "log")
    env["RMW_IMPLEMENTATION"] = "rmw_fastrtps_cpp"
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env.setdefault("FASTDDS_DEFAULT_PROFILES_FILE", str(write_fastdds_profile(state)))
    env.update(transport_environment(env))
    if domain_id is not None:
        if not 0 <= int(domain_id) <= 101:
            raise ValueError(f"ROS_DOMAIN_ID must be in 0..101, got {domain_id}")
        env["ROS_DOMAIN_ID"] = str(int(domain_id))
    return env


def apply_ros_environment(state_dir: str | os.PathLike[str], domain_id: int | None = None) -> None:
    """Set :func:`ros_environment` in this process (call before ``rclpy.init``).

    A leftover ``RMW_IMPLEMENTATION`` naming another middleware would make rcl exit the process
    with code 102, so it is always overwritten.
    """
    os.environ.update(ros_environment(state_dir, domain_id))


def default_state_dir() -> Path:
    """``$CAPTAIN_ROS_STATE`` or ``./build/ros`` (logs and the DDS profile)."""
    return Path(os.environ.get("CAPTAIN_ROS_STATE", "build/ros")).absolute()
