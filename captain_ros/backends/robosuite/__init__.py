"""robosuite's tasks behind the Backend interface (optional extra; docs/robosuite.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from captain_ros.backends.robosuite.config import RobosuiteConfig
from captain_ros.backends.robosuite.scene import RobosuiteScene
from captain_ros.core.scene import SceneSpec

if TYPE_CHECKING:
    from captain_ros.backends.robosuite.backend import RobosuiteBackend


def make(scene: SceneSpec | None = None, **options: Any) -> RobosuiteBackend:
    """robosuite's environment for ``scene`` (a :class:`RobosuiteScene`) with
    :class:`RobosuiteConfig` ``options`` (unguarded:
    :func:`~captain_ros.backends.registry.make_backend` wraps it in the safety layer). robosuite
    itself is imported here, not with this package."""
    c = RobosuiteConfig.from_options(options)
    from captain_ros.backends.robosuite.backend import RobosuiteBackend

    return RobosuiteBackend(
        scene, image_size_px=c.image_size_px, render_segmentation=c.render_segmentation
    )


__all__ = ["RobosuiteConfig", "RobosuiteScene", "make"]
