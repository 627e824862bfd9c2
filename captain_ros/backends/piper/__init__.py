"""PiPER over CAN (``piper_sdk``): backend, configuration, unit conversions, kinematic twin.

:func:`make` builds the backend from a config file (``piper.yaml``; ``rig="piper_dual"`` or a dual
scene: ``piper_dual.yaml``); ``emulate=True`` starts the CAN emulator
(:mod:`captain_ros.backends.piper_emulator`) with the task scene on python-can's virtual bus and
uses its rendered cameras. The safety layer and enabling are the registry's
(:func:`captain_ros.backends.registry.make_backend`).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from captain_ros.backends.piper.backend import PiperBackend
from captain_ros.backends.piper.config import CameraConfig, PiperConfig
from captain_ros.core.scene import SceneSpec
from captain_ros.core.share import share_path

_EMULATORS = itertools.count(1)


def default_config_path(rig: str) -> Path:
    return share_path("config", "piper_dual.yaml" if rig == "piper_dual" else "piper.yaml")


def make(
    scene: SceneSpec | None = None,
    *,
    config: str | Path | PiperConfig | None = None,
    can: str | None = None,
    emulate: bool = False,
    image_size_px: int = 512,
    rig: str | None = None,
) -> PiperBackend:
    """The PiPER rig (unguarded: :func:`~captain_ros.backends.registry.make_backend` wraps it).

    Args:
        scene: Task scene; used only by the emulator (hardware sees the real table).
        config: Config file or object (default ``config/piper.yaml`` / ``piper_dual.yaml``).
        can: Override the CAN interface(s): ``can0`` or ``can0,can1`` (dual rig).
        emulate: Start the CAN emulator with ``scene`` (virtual bus, emulated cameras).
        image_size_px: Emulator only: square camera resolution [px].
        rig: ``piper`` or ``piper_dual`` without a scene (selects the default config file).
    """
    the_rig = rig or (scene.rig if scene is not None else "piper")
    cfg = (
        config
        if isinstance(config, PiperConfig)
        else PiperConfig.load(config or default_config_path(the_rig))
    )
    overrides: dict[str, Any] = {}
    if can:
        names = [c.strip() for c in can.split(",") if c.strip()]
        overrides["can"] = (
            dict(zip(cfg.can, names, strict=False)) if len(names) == len(cfg.can) else names
        )
    if emulate:
        overrides["bustype"] = "virtual"
    if overrides:
        from dataclasses import replace

        cfg = replace(cfg, **overrides)  # re-validated in __post_init__
    if emulate:
        return _emulated(scene, cfg, image_size_px)
    from captain_ros.backends.piper.link import require_interface

    for channel in cfg.can.values():  # the bus first: what a rig without power or wiring lacks
        require_interface(channel, cfg.bustype)
    cameras = _realsense_cameras(cfg)
    backend = PiperBackend(cfg, cameras)
    for cam in cameras.values():
        cam.twin = backend.twin
    return backend


def _realsense_cameras(cfg: PiperConfig) -> dict[str, Any]:
    """Open the configured RealSense devices (extrinsics from each calibration file)."""
    from captain_ros.backends.cameras import load_extrinsics
    from captain_ros.backends.cameras.realsense import RealSenseCamera

    out: dict[str, Any] = {}
    for name, c in cfg.cameras.items():
        if c.source != "realsense":
            continue
        key = "world_from_optical" if c.mount == "world" else "flange_from_optical"
        ext = load_extrinsics(c.calibration, key)
        out[name] = (RealSenseCamera(c.serial, c.width_px, c.height_px, c.fps), c.mount, ext)
    return {n: _LazyMount(n, cam.grab, mount, ext) for n, (cam, mount, ext) in out.items()}


class _LazyMount:
    """Binds a camera to the backend's twin once the backend exists."""

    def __init__(self, name: str, grab: Any, mount: str, ext: Any) -> None:
        self.name, self.grab, self.mount, self.ext = name, grab, mount, ext
        self.twin: Any = None

    def __call__(self) -> Any:
        from captain_ros.backends.piper.cameras import MountedCamera

        return MountedCamera(self.name, self.grab, self.mount, self.ext, self.twin)()


def _emulated(scene: SceneSpec | None, cfg: PiperConfig, image_size_px: int) -> PiperBackend:
    """The backend against a new emulator on virtual channels of its own (``can0#3``): python-can's
    virtual channels are process-wide, and a backend rebuilt for another scene starts its emulator
    before the previous one is closed; on a shared channel the new link would read both."""
    from dataclasses import replace

    from captain_ros.backends.piper_emulator import PiperEmulator
    from captain_ros.backends.piper_emulator.camera import EmulatedCamera

    n = next(_EMULATORS)
    cfg = replace(cfg, can={arm: f"{ch}#{n}" for arm, ch in cfg.can.items()})
    emu = PiperEmulator(scene, channels=cfg.can, rig=cfg.rig, image_size_px=image_size_px)
    try:
        cams: dict[str, Any] = {}
        for name in emu.sim.spec.cameras:
            mount = (
                "world"
                if name == "head"
                else name[: -len("_wrist")]
                if name.endswith("_wrist")
                else "arm"
            )
            ec = EmulatedCamera(emu, name)
            cams[name] = _LazyMount(name, ec.grab, mount, ec.calibration(mount))
        backend = PiperBackend(cfg, cams, ground_truth=emu.privileged_state)
        for c in cams.values():
            c.twin = backend.twin
        backend.emulator = emu  # type: ignore[attr-defined]
        close = backend.close

        def close_all() -> None:
            close()
            emu.close()

        backend.close = close_all  # type: ignore[method-assign]
    except Exception:
        emu.close()
        raise
    return backend


__all__ = ["CameraConfig", "PiperBackend", "PiperConfig", "default_config_path", "make"]
