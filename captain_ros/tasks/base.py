"""The :class:`Task` contract (docs/contracts.md, "Tasks").

A task is a seeded scene distribution plus a judge:

- ``sample(seed) -> SceneSpec`` and ``instruction(seed) -> str`` are deterministic in the seed;
  ``train_seeds`` and ``heldout_seeds`` are disjoint ranges;
- ``success(state)``, ``milestones(state)`` and ``features(state, tracker)`` read only the typed
  :class:`~captain_ros.core.privileged.PrivilegedState` of ``backend.privileged_state()`` (the
  policy never sees it);
- ``gate_check(measurements)`` reads only the agent's own ``measure_object_geometry`` records;
- ``tolerances`` are the numbers both the predicate and the gate use; :meth:`Task.task_md` states
  them in words and numbers for TASK.md.

Goal roles are fixed per task (e.g. pick_place always moves ``red_cube`` onto ``plate``) so that
``success`` and ``gate_check`` need no seed; layouts, distractors, plate colours, materials,
lighting and camera pose vary with the seed.
"""

from __future__ import annotations

import abc
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.privileged import PrivilegedState
from captain_ros.core.scene import SceneSpec
from captain_ros.tasks.features import FEATURE_NAMES, critic_features
from captain_ros.tasks.goals import Goal
from captain_ros.tasks.tracker import EpisodeTracker
from captain_ros.tasks.workspace import Workspace, workspace


class Task(abc.ABC):
    """One manipulation task.

    Class attributes set by subclasses: ``name``, ``rig`` (``"piper"`` | ``"piper_dual"``),
    ``goals`` (ordered), ``milestone_names`` (ordered), ``tolerances`` ({name: value}, SI units).
    """

    name: str = ""
    rig: str = "piper"
    train_seeds: range = range(0, 1000)
    heldout_seeds: range = range(1000, 2000)
    tolerances: Mapping[str, float] = {}
    milestone_names: tuple[str, ...] = ()
    #: Milestones that count for the staged reward only if they still hold at the end (placing,
    #: moving toward the goal, opening); the others (reaching, grasping, lifting) count once reached.
    persistent_milestones: frozenset[str] = frozenset()
    feature_names: tuple[str, ...] = FEATURE_NAMES

    # --- scenes ----------------------------------------------------------------------------
    @property
    def workspace(self) -> Workspace:
        """Table and arm placement of this task's rig."""
        return workspace(self.rig)

    def rng(self, seed: int, stream: int = 0) -> np.random.Generator:
        """The task's random stream ``stream`` for ``seed`` (independent across tasks)."""
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise InvalidArgumentError(f"seed must be a non-negative int, got {seed!r}")
        return np.random.default_rng([zlib.crc32(self.name.encode()), int(seed), stream])

    @abc.abstractmethod
    def sample(self, seed: int) -> SceneSpec:
        """The scene for ``seed`` (layout, distractors, materials, lighting, camera jitter)."""

    @abc.abstractmethod
    def instruction(self, seed: int) -> str:
        """The natural-language instruction for ``seed`` (one of several phrasings)."""

    def split(self, seed: int) -> str:
        """``"train"``, ``"heldout"`` or ``"other"``."""
        if seed in self.train_seeds:
            return "train"
        if seed in self.heldout_seeds:
            return "heldout"
        return "other"

    # --- judging ---------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def goals(self) -> tuple[Goal, ...]:
        """Ordered goals; success is their conjunction."""

    def success(self, state: PrivilegedState) -> bool:
        """The host success predicate over ``backend.privileged_state()``."""
        return all(g.satisfied(state) for g in self.goals)

    @abc.abstractmethod
    def milestones(self, state: PrivilegedState) -> list[bool]:
        """Which of ``milestone_names`` hold in ``state`` (ordered; for progress and staged reward)."""

    def tracker(self) -> EpisodeTracker:
        """A fresh per-episode memory (initial poses, ever-held flags, milestone ladder)."""
        return EpisodeTracker(self.milestones, self.milestone_names, self.persistent_milestones)

    def features(self, state: PrivilegedState, tracker: EpisodeTracker | None = None) -> np.ndarray:
        """The critic's 36 privileged features (float32, names in ``feature_names``).

        ``tracker`` supplies initial poses and ever-held flags; it is updated with ``state`` here
        if it has not seen any state yet. Without a tracker the current state counts as initial.
        """
        if tracker is None:
            tracker = self.tracker()
        if not tracker.started:
            tracker.update(state)
        return critic_features(self.goals, state, tracker)

    @abc.abstractmethod
    def gate_check(self, measurements: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
        """Completion gate over the agent's own measurement records: ``(passed, reason)``."""

    # --- TASK.md ---------------------------------------------------------------------------
    @abc.abstractmethod
    def standard(self) -> list[str]:
        """Bullet lines of the success standard, with the tolerances in words and numbers."""

    def task_md(self, seed: int) -> str:
        """The task part of TASK.md for ``seed`` (the harness appends the API section): instruction,
        the success standard with its tolerances in words and numbers, frames and rig geometry."""
        ws = self.workspace
        lines = [
            f"# TASK: {self.name}",
            "",
            "## Instruction",
            "",
            self.instruction(seed),
            "",
            "## Success standard",
            "",
            "The final scene is judged by this standard:",
            "",
        ]
        lines += [f"- {s}" for s in self.standard()]
        lines += [
            "",
            "`finish()` is checked against your own `measure_object_geometry` results (the "
            "latest ones count: measure on a fresh observation after the last motion) with "
            "these tolerances:",
            "",
        ]
        lines += [f"- `{k}`: {_num(v)}" for k, v in self.tolerances.items()]
        bases = ", ".join(f"`{a}` at ({x:.2f}, {y:.2f}) m" for a, (x, y, _) in ws.arm_bases.items())
        lines += [
            "",
            "## Frames",
            "",
            "World frame (REP 103): x forward from the robot base toward the table centre, y left, "
            "z up, metres. Quaternions [w, x, y, z]. Camera optical frames: x right, y down, "
            "z forward. A tool orientation of [0, 1, 0, 0] points the gripper straight down.",
            f"The table top is at z = {ws.table_top_z_m:.3f} m. Arm bases: {bases}.",
        ]
        return "\n".join(lines) + "\n"


def _num(v: float) -> str:
    return f"{v:g}"


def cm(x_m: float) -> str:
    """Format a length [m] in centimetres for TASK.md."""
    return f"{x_m * 100:.1f} cm"


def deg(x_rad: float) -> str:
    """Format an angle [rad] in degrees for TASK.md."""
    return f"{np.rad2deg(x_rad):.0f} deg"
