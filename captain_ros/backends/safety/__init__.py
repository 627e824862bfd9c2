"""Safety below the API, shared by every backend: :class:`SafeBackend` wraps any Backend."""

from captain_ros.backends.safety.config import SIM_DEFAULTS, SafetyConfig
from captain_ros.backends.safety.latch import EStopEvent, EStopLatch
from captain_ros.backends.safety.layer import SafeBackend
from captain_ros.backends.safety.link import HardwareLink, LinkStatus
from captain_ros.backends.safety.watchdog import CommandWatchdog

__all__ = [
    "SIM_DEFAULTS",
    "CommandWatchdog",
    "EStopEvent",
    "EStopLatch",
    "HardwareLink",
    "LinkStatus",
    "SafeBackend",
    "SafetyConfig",
]
