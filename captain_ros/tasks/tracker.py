"""Per-episode memory a task needs across steps: initial poses, ever-held flags, milestone ladder.

Usage (the harness, once per request, on the hidden snapshot it records anyway)::

    tracker = task.tracker()
    for each request:
        state = backend.privileged_state()
        tracker.update(state)              # first call fixes the initial state
        x = task.features(state, tracker)  # 36 floats for the critic
        rung = tracker.ladder              # highest milestone reached so far, in order

The tracker only remembers *physical* facts (where things were at the start, whether an object has
ever been pinched, which milestones were reached); it never counts the policy's own calls.
It is restorable: ``tracker.restore(tracker.snapshot())`` (store it beside backend snapshots
when rolling out counterfactuals from a saved state).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from captain_ros.core.privileged import PrivilegedState

Milestones = Callable[[PrivilegedState], Sequence[bool]]


class EpisodeTracker:
    """Physical memory of one episode (built by :meth:`captain_ros.tasks.base.Task.tracker`).

    Args:
        milestones: The task's milestone predicate (``task.milestones``).
        milestone_names: The task's ordered milestone names.
        persistent_milestones: Names that count for the staged reward only if they still hold at
            the end.

    Attributes:
        initial_positions_m: ``{body: position}`` at the first :meth:`update` [m].
        initial_joints: ``{joint: position}`` at the first :meth:`update`.
        ever_held: Bodies that have been pinched between both fingers of an arm at some update.
        ladder: Number of leading milestones reached (a one-shot monotone ladder: rung ``k`` counts
            once milestones ``0..k-1`` have each been true at some update, in order).
        milestones_ever: Per milestone, whether it has been true at some update.
    """

    def __init__(
        self,
        milestones: Milestones,
        milestone_names: Sequence[str],
        persistent_milestones: frozenset[str] = frozenset(),
    ) -> None:
        self._milestones = milestones
        self.milestone_names = tuple(milestone_names)
        self.persistent_milestones = frozenset(persistent_milestones)
        self.initial_positions_m: dict[str, np.ndarray] = {}
        self.initial_joints: dict[str, float] = {}
        self.ever_held: set[str] = set()
        self.ladder = 0
        self.milestones_ever: list[bool] = [False] * len(self.milestone_names)
        self.updates = 0

    @property
    def started(self) -> bool:
        return self.updates > 0

    def update(self, state: PrivilegedState) -> None:
        """Fold one privileged state into the memory."""
        if not self.started:
            for body, obj in state.objects.items():
                self.initial_positions_m[body] = obj.position_m.copy()
            self.initial_joints.update(state.joints)
        self.updates += 1
        for body, obj in state.objects.items():
            if obj.held or obj.ever_held:
                self.ever_held.add(body)
        now = list(self._milestones(state))
        self.milestones_ever = [a or b for a, b in zip(self.milestones_ever, now, strict=True)]
        while self.ladder < len(now) and now[self.ladder]:
            self.ladder += 1

    def final_rung(self, final_state: PrivilegedState) -> int:
        """Rung reached for the staged sub-goal reward (paper appendix A.2/E): the number of leading
        milestones that were reached in order, where a persistent milestone (placing, opening,
        moving toward the goal) also has to hold in ``final_state``. The paper's one-shot reward of
        a failed episode at rung ``d`` of ``n`` is ``0.15 * d / (n + 1)``."""
        now = list(self._milestones(final_state))
        rung = 0
        for k, name in enumerate(self.milestone_names[: self.ladder]):
            if name in self.persistent_milestones and not now[k]:
                break
            rung = k + 1
        return rung

    def initial_position_m(self, state: PrivilegedState, body: str) -> np.ndarray:
        """Position of ``body`` at the start [m]: the state's own record if it has one, else the
        tracker's first update, else the current position."""
        recorded = state.object(body).initial_position_m
        if recorded is not None:
            return recorded
        if body in self.initial_positions_m:
            return self.initial_positions_m[body]
        return state.object(body).position_m

    def initial_joint(self, state: PrivilegedState, joint: str) -> float:
        """Position of ``joint`` at the start (current one before the first update)."""
        if joint in self.initial_joints:
            return self.initial_joints[joint]
        return state.joint(joint, 0.0)

    def snapshot(self) -> dict[str, Any]:
        """A deep copy of the memory (for restoring alongside a backend snapshot)."""
        return copy.deepcopy({k: v for k, v in self.__dict__.items() if k in _MEMORY})

    def restore(self, snap: Mapping[str, Any]) -> None:
        """Restore a :meth:`snapshot`."""
        for k, v in copy.deepcopy(dict(snap)).items():
            if k in _MEMORY:
                setattr(self, k, v)


_MEMORY = (
    "initial_positions_m",
    "initial_joints",
    "ever_held",
    "ladder",
    "milestones_ever",
    "updates",
)
