"""The humanoid pair behind a bridge interface.

:class:`HumanoidBridge` (``bridge.py``) is what a real humanoid pair's controllers implement;
:class:`MujocoHumanoidPair` (``sim.py``) is the simulated pair in a corridor layout
(``layouts.py``); ``remote.py`` serves a bridge as plain-data calls (the ROS controller node).
"""

from __future__ import annotations

from typing import Any

from captain_ros.backends.humanoid.bridge import HumanoidBridge
from captain_ros.backends.humanoid.layouts import LAYOUTS, Layout, get_layout


def make_bridge(layout: str = "base", seed: int = 0, **kw: Any) -> HumanoidBridge:
    """The simulated pair on ``layout`` (``base``, ``l2``, ``l3``, ``l4``) seeded with ``seed``."""
    from captain_ros.backends.humanoid.sim import MujocoHumanoidPair

    return MujocoHumanoidPair(layout, seed=seed, **kw)


__all__ = ["LAYOUTS", "HumanoidBridge", "Layout", "get_layout", "make_bridge"]
