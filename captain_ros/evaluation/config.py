"""What one episode is built from: a typed, frozen :class:`EpisodeConfig`, validated once.

Every front end maps onto it: ``captain run | eval`` flags (:meth:`EpisodeConfig.from_cli`), the
ROS node parameters (:meth:`EpisodeConfig.from_ros_parameters`) and the plain mapping an
evaluation or RL worker receives across a process boundary (:meth:`EpisodeConfig.from_mapping`,
the inverse of :meth:`EpisodeConfig.to_mapping`). The composition root
(:mod:`captain_ros.evaluation.episode`) builds the episode from it.

The groups: :class:`PolicyConfig` (the policy spec and its engine options), :class:`BackendConfig`
(the backend and its ``make_backend`` options), :class:`BudgetConfig`,
:class:`~captain_ros.perception.models.PerceptionModels` and :class:`RecordingConfig`. A bad value
(an unknown key, a negative seed, a wrong type, an unknown task or backend) is one
:class:`~captain_ros.core.errors.InvalidArgumentError` (or ``UnknownNameError``) naming it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Self

from captain_ros.backends.registry import info
from captain_ros.backends.rig_config import check_keys
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.validate import check_choice, check_limit, check_types
from captain_ros.harness.episode.budgets import Budgets
from captain_ros.harness.episode.profiles import PROFILES
from captain_ros.perception.models import PerceptionModels
from captain_ros.policy.config import PolicyConfig

BUDGET_MODES = ("default", "rl")
RIG_ARGS = ("config", "can", "rig", "emulate")


@dataclass(frozen=True)
class BackendConfig:
    """The backend and its ``make_backend`` keyword options (a rig's ``config``/``can``/
    ``emulate``/``rig``, the MuJoCo ``noise``; each backend's ``config.py`` checks its own keys
    when it is built).

    Attributes:
        name: A registered backend (:data:`~captain_ros.backends.registry.BACKENDS`).
        options: Its options (read-only).
    """

    name: str = "mujoco"
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        check_types(self, "backend")
        info(self.name)  # an unknown backend: UnknownNameError listing them
        if not all(isinstance(k, str) for k in self.options):
            raise InvalidArgumentError(f"backend.options keys must be strings: {self.options!r}")
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    @classmethod
    def from_rig_args(cls, name: str, **args: Any) -> BackendConfig:
        """The backend with the rig arguments it takes (the registry's ``rig_args``: PiPER
        ``config``/``can``/``rig``/``emulate``, ros_arm ``config``); empty or false ones, and
        those another backend takes, are left out."""
        takes = info(name).rig_args
        opts = {k: v for k, v in args.items() if k in RIG_ARGS and k in takes and v}
        if "emulate" in opts:
            opts["emulate"] = True
        return cls(name, opts)

    def to_mapping(self) -> dict[str, Any]:
        return {"name": self.name, "options": dict(self.options)}


@dataclass(frozen=True)
class BudgetConfig:
    """The episode's budgets (``None``: the mode's default; :class:`Budgets`).

    Attributes:
        mode: ``default`` (test time) or ``rl`` (the paper's RL budget of 120 actions).
        max_requests: Policy requests [count].
        max_wall_s: Wall time of the episode [s].
        max_physical_actions: Physical capability calls [count].
    """

    mode: str = "default"
    max_requests: int | None = None
    max_wall_s: float | None = None
    max_physical_actions: int | None = None

    def __post_init__(self) -> None:
        check_types(self, "budgets")
        check_choice("budgets", "mode", self.mode, BUDGET_MODES)
        try:
            self.budgets()
        except ValueError as exc:
            raise InvalidArgumentError(f"budgets: {exc} ({self})") from None

    def budgets(self) -> Budgets:
        base = Budgets.rl() if self.mode == "rl" else Budgets()
        kw = {
            k: getattr(self, k)
            for k in ("max_requests", "max_wall_s", "max_physical_actions")
            if getattr(self, k) is not None
        }
        return base.replace(**kw) if kw else base


@dataclass(frozen=True)
class RecordingConfig:
    """What the episode folder gets besides its summary and trajectory.

    Attributes:
        bag: Record ``bag/`` (rosbag2 MCAP).
        bag_images: Camera frames in the bag.
        report: Render ``report.html`` (evaluation folders: off; ``captain report`` later).
        overwrite: Replace a non-empty folder (refused otherwise).
    """

    bag: bool = True
    bag_images: bool = True
    report: bool = True
    overwrite: bool = False

    def __post_init__(self) -> None:
        check_types(self, "recording")


POLICY_FLAGS = tuple(
    f.name for f in fields(PolicyConfig) if f.name not in ("spec", "max_retries", "stream")
)
"""The ``captain run | eval`` flags of :class:`PolicyConfig` (``--policy`` is its spec)."""
PERCEPTION_FLAGS = (
    "segmenter",
    "sam_folder",
    "pointer",
    "vlm_folder",
    "vlm_url",
    "vlm_model",
    "vlm_coords",
)
"""The perception flags (and node parameters) of :class:`PerceptionModels`."""

SECTIONS: dict[str, type] = {
    "policy": PolicyConfig,
    "backend": BackendConfig,
    "budgets": BudgetConfig,
    "perception": PerceptionModels,
    "recording": RecordingConfig,
}


@dataclass(frozen=True)
class EpisodeConfig:
    """One episode, as every front end describes it (see the module docstring).

    Attributes:
        task / seed: The task and its scene seed (a non-negative int).
        out_dir: The episode folder.
        policy / backend / budgets / perception / recording: The groups.
        profile: The prompt profile (:mod:`captain_ros.harness.episode.profiles`; ``None`` or
            ``auto``: the one the policy's student was trained with, else ``default``).
        strict_sandbox: Refuse to start without every OS isolation layer of the sandbox.
        missed_finish_after: With privileged state, stop once every goal held this many
            consecutive requests without ``finish()`` [requests] (0: never).
    """

    task: str = "pick_place"
    seed: int = 1000
    out_dir: str = "runs/episode"
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    backend: BackendConfig = field(default_factory=BackendConfig)
    budgets: BudgetConfig = field(default_factory=BudgetConfig)
    perception: PerceptionModels = field(default_factory=PerceptionModels)
    recording: RecordingConfig = field(default_factory=RecordingConfig)
    profile: str | None = None
    strict_sandbox: bool = False
    missed_finish_after: int = 15

    def __post_init__(self) -> None:
        if isinstance(self.out_dir, Path):
            object.__setattr__(self, "out_dir", str(self.out_dir))
        check_types(self, "episode")
        if self.seed < 0:
            raise InvalidArgumentError(f"seed must be a non-negative int, got {self.seed!r}")
        check_limit("episode", "missed_finish_after", self.missed_finish_after, 0, strict=False)
        check_choice("episode", "profile", self.profile, ("auto", *PROFILES))
        from captain_ros.tasks import get_task

        get_task(self.task, self.backend.name)  # an unknown task: UnknownNameError listing them

    def replace(self, **changes: Any) -> EpisodeConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    # --- plain data (worker jobs, JSON) ---------------------------------------------------------
    def to_mapping(self) -> dict[str, Any]:
        """Plain JSON-able data; :meth:`from_mapping` reads it back to an equal config."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, BackendConfig):
                out[f.name] = value.to_mapping()
            elif dataclasses.is_dataclass(value):
                out[f.name] = dataclasses.asdict(value)  # type: ignore[arg-type]
            else:
                out[f.name] = value
        return out

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Self:
        """The config of a :meth:`to_mapping` (missing keys: defaults; an unknown key, at the top
        or in a group, is refused with the valid ones)."""
        top = check_keys("episode config", data, cls)
        for name, kind in SECTIONS.items():
            if name in top and not isinstance(top[name], kind):
                top[name] = kind(**check_keys(name, top[name], kind))
        return cls(**top)

    # --- front ends -----------------------------------------------------------------------------
    @classmethod
    def from_cli(cls, ns: Any, **overrides: Any) -> Self:
        """The config of ``captain run | eval`` flags (an ``argparse.Namespace``; a flag the
        subcommand lacks is the default). ``overrides``: fields set here instead (``captain
        eval`` sets each job's task, seed and folder)."""

        def given(names: tuple[str, ...]) -> dict[str, Any]:
            return {n: getattr(ns, n) for n in names if getattr(ns, n, None) is not None}

        policy = PolicyConfig(getattr(ns, "policy", None) or "scripted", **given(POLICY_FLAGS))
        name = getattr(ns, "backend", None) or "mujoco"
        perception = {k: getattr(ns, k) for k in PERCEPTION_FLAGS if getattr(ns, k, None)}
        top: dict[str, Any] = {
            "task": getattr(ns, "task", None) or "pick_place",
            "seed": 1000 if getattr(ns, "seed", None) is None else ns.seed,
            "out_dir": str(getattr(ns, "out", None) or "runs/episode"),
            "profile": getattr(ns, "profile", None),
            **overrides,
        }
        return cls(
            **top,
            policy=policy,
            backend=BackendConfig.from_rig_args(name, **given(RIG_ARGS)),
            budgets=BudgetConfig(**given(("max_requests", "max_wall_s", "max_physical_actions"))),
            perception=PerceptionModels(**perception),
            recording=RecordingConfig(
                bag=not getattr(ns, "no_bag", False), overwrite=bool(getattr(ns, "overwrite", 0))
            ),
            strict_sandbox=bool(getattr(ns, "strict_sandbox", False)),
        )

    @classmethod
    def from_ros_parameters(cls, values: Mapping[str, Any]) -> Self:
        """The config of ROS node parameters (the robot node's ``backend``/``task``/``seed``/
        ``backend_config``/``can``/``emulate``, the perception node's model parameters, the
        policy node's ``policy``/``model_folder``/``engine``/``profile``/``output_dir``/
        ``overwrite_output``); a node's other parameters are not the episode's and are ignored,
        an empty string is the default."""
        v = {k: x for k, x in values.items() if x != ""}
        name = str(v.get("backend", "mujoco"))
        keys = (*PERCEPTION_FLAGS, "vlm_api_key_env")
        perception: dict[str, Any] = {k: v[k] for k in keys if k in v}
        if "model_device" in v:
            perception["device"] = v["model_device"]
        policy = {k: v[k] for k in ("model_folder", "engine") if k in v}
        return cls(
            task=str(values.get("task", "pick_place")),  # an empty task is refused, not defaulted
            seed=values.get("seed", 1000),
            out_dir=str(v.get("output_dir", "runs/episode")),
            policy=PolicyConfig(str(v.get("policy", "scripted")), **policy),
            backend=BackendConfig.from_rig_args(
                name,
                config=v.get("backend_config"),
                can=v.get("can"),
                emulate=v.get("emulate"),
                rig=v.get("rig"),
            ),
            perception=PerceptionModels(**perception),
            recording=RecordingConfig(overwrite=bool(v.get("overwrite_output", False))),
            profile=v.get("profile"),
        )


__all__ = ["BackendConfig", "BudgetConfig", "EpisodeConfig", "PolicyConfig", "RecordingConfig"]
