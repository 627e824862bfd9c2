"""Offscreen RGB-D (+ segmentation) rendering of the rig's cameras.

Depth is MuJoCo's linearised z-depth along the optical axis [m] (0 where nothing was hit).
Intrinsics follow from the camera's vertical field of view (square pixels); pixel ``(u, v)`` is
(column, row) of a pixel centre, so ``cx = (W - 1) / 2``. ``world_from_camera`` is the pose of
the optical frame (x right, y down, z forward) = MuJoCo camera frame * diag(1, -1, -1).
"""

from __future__ import annotations

import math
import os

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from captain_ros.core.types import CameraFrame  # noqa: E402

IMAGE_SIZE_PX = 512
_FLIP = np.diag([1.0, -1.0, -1.0])


def intrinsics(model: mujoco.MjModel, camera: int, width: int, height: int) -> np.ndarray:
    """3x3 pinhole matrix K [px] from the camera's vertical field of view."""
    fovy = math.radians(float(model.cam_fovy[camera]))
    f = (height / 2.0) / math.tan(fovy / 2.0)
    return np.array([[f, 0.0, (width - 1) / 2.0], [0.0, f, (height - 1) / 2.0], [0.0, 0.0, 1.0]])


def world_from_camera(data: mujoco.MjData, camera: int) -> np.ndarray:
    """4x4 pose of the optical frame in the world frame."""
    t = np.eye(4)
    t[:3, :3] = data.cam_xmat[camera].reshape(3, 3) @ _FLIP
    t[:3, 3] = data.cam_xpos[camera]
    return t


def _headless_gl() -> None:
    """Use EGL when ``mujoco`` was imported before MUJOCO_GL was set and there is no display.

    MuJoCo picks its GL platform when it is first imported; a module that imports ``mujoco``
    before this package would otherwise get GLFW, which cannot render without an X display.
    """
    if os.environ.get("DISPLAY") or os.environ.get("MUJOCO_GL", "egl") not in ("egl", ""):
        return
    from mujoco.rendering.classic import gl_context

    current = getattr(gl_context, "GLContext", None)
    if current is not None and current.__module__.startswith("mujoco.egl"):
        return
    from mujoco.egl import GLContext

    gl_context.GLContext = GLContext


class CameraRenderer:
    """One offscreen context rendering any camera of the model at ``size_px`` x ``size_px``.

    ``geom_labels`` maps geom id -> object id for segmentation (0 = background); ``scene_flags``
    ({``mjtRndFlag``: 0 or 1}) are set on its scene. The context is made at the first render, in
    the thread that renders (an EGL context made current in one thread cannot be used in another:
    under ROS the perception node's thread captures, not the thread that built the backend).
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        geom_labels: np.ndarray,
        size_px: int = IMAGE_SIZE_PX,
        scene_flags: dict[mujoco.mjtRndFlag, int] | None = None,
    ) -> None:
        self._model = model
        self._size = size_px
        self._labels = np.concatenate([geom_labels.astype(np.int32), [0]])  # index -1 -> 0
        self._flags = dict(scene_flags or {})
        self._renderer: mujoco.Renderer | None = None

    def _get(self) -> mujoco.Renderer:
        if self._renderer is None:
            _headless_gl()
            self._renderer = mujoco.Renderer(self._model, self._size, self._size)
            for flag, value in self._flags.items():
                self._renderer.scene.flags[flag] = value
        return self._renderer

    def render(
        self, data: mujoco.MjData, camera: str, stamp_s: float, segmentation: bool = False
    ) -> CameraFrame:
        """RGB, metric depth and (optionally) object-id segmentation of ``camera``."""
        r = self._get()
        cam = self._model.camera(camera).id
        r.update_scene(data, camera=cam)
        rgb = r.render().copy()
        r.enable_depth_rendering()
        depth = r.render().astype(np.float32, copy=True)
        r.disable_depth_rendering()
        far = float(self._model.vis.map.zfar * self._model.stat.extent)
        depth[depth >= 0.999 * far] = 0.0
        seg = None
        if segmentation:
            r.enable_segmentation_rendering()
            raw = r.render()
            r.disable_segmentation_rendering()
            geom = np.where(raw[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM), raw[..., 0], -1)
            seg = self._labels[geom]
        return CameraFrame(
            camera=camera,
            rgb=rgb,
            depth_m=depth,
            intrinsics=intrinsics(self._model, cam, self._size, self._size),
            world_from_camera=world_from_camera(data, cam),
            stamp_s=stamp_s,
            segmentation=seg,
        )

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
