"""What one episode is made of: :class:`EpisodeParts` and :class:`EpisodeOptions` (typed, frozen),
and the running :class:`Totals` of its requests.

:class:`~captain_ros.harness.episode.loop.Episode` runs over one :class:`EpisodeParts`;
:class:`~captain_ros.harness.episode.setup.EpisodeSetup` and :func:`~captain_ros.harness.episode.loop.run_episode`
build it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captain_ros.api.service import RobotCaller
from captain_ros.harness.episode.budgets import Budgets
from captain_ros.harness.episode.context import ContextConfig
from captain_ros.harness.episode.observers import EpisodeObserver
from captain_ros.harness.episode.resume import EpisodeResume
from captain_ros.harness.record.privileged_log import PrivilegedSource
from captain_ros.harness.record.returns import CostConfig, RequestCounts
from captain_ros.harness.sandbox.session import PythonSession, SessionConfig
from captain_ros.policy.base import Policy


@dataclass(frozen=True)
class EpisodeOptions:
    """How the loop runs beyond budgets.

    Attributes:
        policy_name / backend_name: What the record names as policy and backend.
        missed_finish_after: With privileged state, stop once every goal has held for this many
            consecutive requests without ``finish()`` (0: never).
        costs: Constants of the per-request costs.
        end_on_finish: End the episode when ``finish()`` is accepted.
        profile: The prompt profile (:mod:`captain_ros.harness.episode.profiles`): system prompt,
            TASK.md API section and history limits; collection, training and deployment use the
            same one.
        system_prompt: Overrides the profile's system message when not empty.
    """

    policy_name: str = ""
    backend_name: str = ""
    missed_finish_after: int = 15
    costs: CostConfig = field(default_factory=CostConfig)
    end_on_finish: bool = True
    profile: str = "default"
    system_prompt: str = ""


@dataclass(frozen=True)
class EpisodeParts:
    """What one episode is made of.

    Attributes:
        task: A task per docs/contracts.md (``name``, ``instruction(seed)``, ``tolerances``,
            ``gate_check``, ``success``; with ``privileged`` also ``goals``, ``milestones``,
            ``features``, ``tracker``).
        seed: Scene seed (the scene must already be set up on the robot side).
        robot: Executes robot calls (``RobotService`` in-process, or a ROS client).
        policy: Produces one reply per request.
        out_dir: Episode folder; ``out_dir/workspace`` is the policy's file area.
        budgets: Requests / wall time / physical actions (paper defaults).
        options: Names, missed-finish stop, costs (:class:`EpisodeOptions`).
        privileged: Ground truth (simulation): recorded before every request, judges success.
        host_success: The task predicate on the final state when there is no ``privileged``
            source (e.g. a service); without either, host success is unknown (False).
        observers: See :mod:`captain_ros.harness.episode.observers`.
        session_config / context_config: The sandbox's and the context renderer's settings
            (``None``: the profile's).
        clock: Monotonic time source [s].
        session: An existing session to reuse (else one is started and closed by the episode).
        resume: Start at a restored decision point (:class:`EpisodeResume`) instead of request 1.
    """

    task: Any
    seed: int
    robot: RobotCaller
    policy: Policy
    out_dir: Path = Path("episode")
    budgets: Budgets = field(default_factory=Budgets)
    options: EpisodeOptions = field(default_factory=EpisodeOptions)
    privileged: PrivilegedSource | None = None
    host_success: Callable[[], bool] | None = None
    observers: tuple[EpisodeObserver, ...] = ()
    session_config: SessionConfig | None = None
    context_config: ContextConfig | None = None
    clock: Callable[[], float] = time.monotonic
    session: PythonSession | None = None
    resume: EpisodeResume | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "out_dir", Path(self.out_dir))
        object.__setattr__(self, "observers", tuple(self.observers))


@dataclass
class Totals:
    """What the requests so far add up to (a resumed episode starts from its prefix's totals)."""

    model_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    malformed: int = 0
    counts: list[RequestCounts] = field(default_factory=list)

    @classmethod
    def before(cls, resume: EpisodeResume | None) -> Totals:
        if resume is None:
            return cls()
        return cls(
            resume.model_s,
            resume.prompt_tokens,
            resume.completion_tokens,
            resume.malformed,
            list(resume.counts),
        )
