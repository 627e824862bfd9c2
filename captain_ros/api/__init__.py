"""The policy-facing robot API: capability registry, robot client, TASK.md section, RobotService.

Light on import (the sandbox child imports :mod:`captain_ros.api.registry`); heavier names are
loaded lazily.
"""

from __future__ import annotations

from typing import Any

from captain_ros.api.registry import CAPABILITIES, CAPABILITY_BY_NAME, PHYSICAL, Capability, Param

__all__ = [
    "CAPABILITIES",
    "CAPABILITY_BY_NAME",
    "PHYSICAL",
    "Capability",
    "Param",
    "RobotCaller",
    "RobotResult",
    "RobotService",
    "api_section_md",
    "build_client",
]

_LAZY = {
    "RobotService": "service",
    "RobotCaller": "service",
    "RobotResult": "client",
    "build_client": "client",
    "api_section_md": "taskmd",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"captain_ros.api.{_LAZY[name]}"), name)
    raise AttributeError(name)
