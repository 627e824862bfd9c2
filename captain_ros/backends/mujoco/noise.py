"""The stochastic simulation mode: seeded per-rollout noise xi shared by the arms of a pair (RE-0).

Deterministic simulation is the default (evaluation, identity tests): without a draw nothing
here runs and the backend is bit for bit what it was. A :class:`NoiseDraw` (a :class:`NoiseSpec`
of magnitudes plus a seed) makes one rollout's randomness:

- **object mass and friction**: every task object's mass (and inertia, so its shape of inertia
  stays) and sliding friction are scaled by factors drawn uniformly in ``1 +- mass_scale`` and
  ``1 +- friction_scale``;
- **actuation**: a constant per-joint offset of the position targets (calibration error,
  ``actuation_bias_rad``) and a fresh per-tick offset (``actuation_jitter_rad``);
- **cameras**: Gaussian RGB noise (``rgb_sigma`` grey levels) and depth noise (``depth_sigma_m``)
  on every captured frame (pixels without depth stay at 0).

Each part draws from its own generator seeded by ``(seed, part)``, so the same draw applied to
the two arms of a paired comparison gives both the same perturbations and the same noise
streams, whatever each arm does. The draw and the streams' states travel in the backend's
snapshot: restoring a snapshot restores the noise exactly (bit-identical continuation in the
stochastic mode too); applying a new draw after a restore starts the counterfactual continuation
of that draw.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import mujoco
import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.types import CameraFrame

PARTS = ("model", "bias", "actuation", "camera")


@dataclass(frozen=True)
class NoiseSpec:
    """Magnitudes of the stochastic mode (0 switches a part off).

    Attributes:
        rgb_sigma: Per-pixel RGB noise, standard deviation [grey levels of 255].
        depth_sigma_m: Per-pixel depth noise, standard deviation [m].
        actuation_bias_rad: Per-joint constant target offset, standard deviation [rad].
        actuation_jitter_rad: Per-tick target offset, standard deviation [rad].
        friction_scale: Half-width of the uniform friction factor around 1 [-].
        mass_scale: Half-width of the uniform mass factor around 1 [-].
    """

    rgb_sigma: float = 2.0
    depth_sigma_m: float = 0.001
    actuation_bias_rad: float = 0.002
    actuation_jitter_rad: float = 0.0005
    friction_scale: float = 0.15
    mass_scale: float = 0.15

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not math.isfinite(v)
                or v < 0
            ):
                raise InvalidArgumentError(
                    f"NoiseSpec.{f.name} must be a finite number >= 0, got {v!r}"
                )
            object.__setattr__(self, f.name, float(v))
        if self.friction_scale >= 1 or self.mass_scale >= 1:
            raise InvalidArgumentError("NoiseSpec friction_scale and mass_scale must be < 1")


@dataclass(frozen=True)
class NoiseDraw:
    """One draw xi of the stochastic mode: magnitudes and the seed of every noise stream."""

    spec: NoiseSpec
    seed: int

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise InvalidArgumentError(f"NoiseDraw.seed must be an integer >= 0, got {self.seed!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"spec": asdict(self.spec), "seed": self.seed}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NoiseDraw:
        try:
            return cls(NoiseSpec(**dict(data.get("spec") or {})), int(data["seed"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"not a noise draw ({exc}); need {{'spec': {{...}}, 'seed': int}}"
            ) from exc

    @classmethod
    def coerce(cls, value: NoiseDraw | Mapping[str, Any] | None) -> NoiseDraw | None:
        """A draw from a draw, its dict (plain data crosses process boundaries) or None."""
        if value is None or isinstance(value, NoiseDraw):
            return value
        if isinstance(value, Mapping):
            return cls.from_dict(value)
        raise InvalidArgumentError(
            f"noise must be a NoiseDraw, its dict or None, got {type(value).__name__}"
        )

    def rng(self, part: str) -> np.random.Generator:
        return np.random.default_rng([self.seed, PARTS.index(part)])


@dataclass(frozen=True)
class BaseParams:
    """The compiled model's values the draw scales (so a new draw starts from them)."""

    bodies: np.ndarray
    mass: np.ndarray
    inertia: np.ndarray
    geoms: np.ndarray
    friction: np.ndarray

    @classmethod
    def of(cls, model: mujoco.MjModel, object_bodies: list[int]) -> BaseParams:
        bodies = np.array(sorted(object_bodies), dtype=int)
        geoms = np.array(
            [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) in set(bodies)], dtype=int
        )
        return cls(
            bodies,
            model.body_mass[bodies].copy(),
            model.body_inertia[bodies].copy(),
            geoms,
            model.geom_friction[geoms, 0].copy(),
        )

    def apply(
        self, model: mujoco.MjModel, mass_factor: np.ndarray, friction_factor: np.ndarray
    ) -> None:
        model.body_mass[self.bodies] = self.mass * mass_factor
        model.body_inertia[self.bodies] = self.inertia * mass_factor[:, None]
        model.geom_friction[self.geoms, 0] = self.friction * friction_factor
        mujoco.mj_setConst(model, mujoco.MjData(model))  # derived constants of the new masses

    def reset(self, model: mujoco.MjModel) -> None:
        """Back to the compiled values (the deterministic mode)."""
        self.apply(model, np.ones(len(self.bodies)), np.ones(len(self.geoms)))


class NoiseState:
    """A draw applied to one backend: its model factors, joint biases and live noise streams."""

    def __init__(self, draw: NoiseDraw, base: BaseParams, arms: Mapping[str, int]) -> None:
        self.draw = draw
        s = draw.spec
        model_rng = draw.rng("model")
        self.mass_factor = 1.0 + model_rng.uniform(-s.mass_scale, s.mass_scale, len(base.bodies))
        self.base = base
        self._by_body = dict(
            zip(
                base.bodies.tolist(),
                1.0 + model_rng.uniform(-s.friction_scale, s.friction_scale, len(base.bodies)),
                strict=True,
            )
        )
        bias_rng = draw.rng("bias")
        self.bias = {
            a: bias_rng.normal(0.0, s.actuation_bias_rad, n) for a, n in sorted(arms.items())
        }
        self.actuation = draw.rng("actuation")
        self.camera = draw.rng("camera")

    def apply_model(self, model: mujoco.MjModel) -> None:
        geom_body = model.geom_bodyid[self.base.geoms]
        self.base.apply(
            model, self.mass_factor, np.array([self._by_body[int(b)] for b in geom_body])
        )

    def ctrl_offset(self, arm: str) -> np.ndarray:
        """The offset added to ``arm``'s position targets this tick [rad]."""
        jitter = self.draw.spec.actuation_jitter_rad
        bias = self.bias[arm]
        return bias + self.actuation.normal(0.0, jitter, bias.size) if jitter > 0 else bias

    def perturb(self, frame: CameraFrame) -> CameraFrame:
        """The frame with this draw's RGB and depth noise (a new frame; the input is unchanged)."""
        s = self.draw.spec
        rgb, depth = frame.rgb, frame.depth_m
        if s.rgb_sigma > 0:
            n = self.camera.standard_normal(rgb.shape, dtype=np.float32) * np.float32(s.rgb_sigma)
            rgb = np.clip(np.rint(rgb.astype(np.float32) + n), 0, 255).astype(np.uint8)
        if s.depth_sigma_m > 0:
            n = self.camera.standard_normal(depth.shape, dtype=np.float32) * np.float32(
                s.depth_sigma_m
            )
            depth = np.where(depth > 0, np.maximum(depth + n, np.float32(1e-4)), depth).astype(
                np.float32
            )
        return replace(frame, rgb=rgb, depth_m=depth)

    def state(self) -> dict[str, Any]:
        """The draw and the streams' positions (for the backend snapshot)."""
        return {
            "draw": self.draw.to_dict(),
            "actuation": dict(self.actuation.bit_generator.state),
            "camera": dict(self.camera.bit_generator.state),
        }

    def set_streams(self, state: Mapping[str, Any]) -> None:
        self.actuation.bit_generator.state = dict(state["actuation"])
        self.camera.bit_generator.state = dict(state["camera"])


def switch_noise(
    model: mujoco.MjModel,
    base: BaseParams | None,
    object_bodies: list[int],
    draw: NoiseDraw | None,
    arms: Mapping[str, int],
) -> tuple[BaseParams, NoiseState | None]:
    """Apply ``draw`` to ``model`` (``None``: the compiled values); returns the base values and
    the new noise state (``arms``: arm name -> number of position actuators)."""
    base = base or BaseParams.of(model, object_bodies)
    if draw is None:
        base.reset(model)
        return base, None
    state = NoiseState(draw, base, arms)
    state.apply_model(model)
    return base, state
