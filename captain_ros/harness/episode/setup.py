"""One episode, assembled: :class:`EpisodeSetup` is what every front end builds and runs.

``captain run`` and every ``captain eval`` worker (:func:`captain_ros.evaluation.episode.local_setup`)
and the ROS policy node (:mod:`captain_ros.ros.policy_node`) all describe an episode the same way:
the task and seed, a robot (an in-process ``RobotService`` or a ROS client), a policy, budgets, the
episode folder, the observers that watch it (live display, bag writer, receipt publisher, report,
cancel) and, in simulation, the privileged source the hidden per-request record is read from.
:meth:`EpisodeSetup.run` prepares the folder (refusing to mix two episodes in one folder) and runs
the loop; the result is the one :class:`~captain_ros.harness.record.episode_record.EpisodeRecord`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captain_ros.api.service import RobotCaller
from captain_ros.core.errors import InvalidArgumentError
from captain_ros.harness.episode.budgets import Budgets
from captain_ros.harness.episode.loop import Episode
from captain_ros.harness.episode.observers import EpisodeObserver
from captain_ros.harness.episode.parts import EpisodeOptions, EpisodeParts
from captain_ros.harness.record.episode_record import EpisodeRecord
from captain_ros.harness.record.privileged_log import PrivilegedSource
from captain_ros.harness.sandbox.session import SessionConfig
from captain_ros.policy.base import Policy


def prepare_folder(path: Path, overwrite: bool) -> bool:
    """Make ``path`` an empty episode folder; returns whether it was created here.

    A non-empty folder is refused (two episodes would mix their files) unless ``overwrite``,
    which empties it first."""
    if path.exists() and not path.is_dir():
        raise InvalidArgumentError(f"{path} exists and is not a folder")
    if path.is_dir() and any(path.iterdir()):
        if not overwrite:
            raise InvalidArgumentError(
                f"{path} is not empty (it holds an earlier episode?); "
                "choose another folder or pass --overwrite"
            )
        shutil.rmtree(path)
    created = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write_test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise InvalidArgumentError(f"cannot write to {path}: {exc.strerror or exc}") from exc
    return created


@dataclass
class EpisodeSetup:
    """Everything one episode needs (see the module docstring)."""

    task: Any
    seed: int
    robot: RobotCaller
    policy: Policy
    out_dir: Path
    budgets: Budgets = field(default_factory=Budgets)
    options: EpisodeOptions = field(default_factory=EpisodeOptions)
    privileged: PrivilegedSource | None = None
    host_success: Callable[[], bool] | None = None
    observers: list[EpisodeObserver] = field(default_factory=list)
    session_config: SessionConfig | None = None
    overwrite: bool = False
    _created: bool | None = field(default=None, init=False, repr=False)

    def prepare(self) -> None:
        """Make the episode folder (idempotent; raises :class:`InvalidArgumentError` for a
        non-empty folder without ``overwrite`` or an unwritable one). Front ends that start other
        writers into the folder (the ROS recorder's bag) call it before announcing the episode."""
        if self._created is None:
            self._created = prepare_folder(Path(self.out_dir), self.overwrite)

    def parts(self) -> EpisodeParts:
        """The episode's :class:`EpisodeParts` (typed, frozen)."""
        return EpisodeParts(
            self.task,
            self.seed,
            self.robot,
            self.policy,
            Path(self.out_dir),
            self.budgets,
            self.options,
            self.privileged,
            self.host_success,
            tuple(self.observers),
            self.session_config,
        )

    def run(self) -> EpisodeRecord:
        """Prepare the folder and run the episode (a failure before the first file is written
        leaves no empty folder behind)."""
        out = Path(self.out_dir)
        self.prepare()
        created = bool(self._created)
        try:
            return Episode(self.parts()).run()
        except BaseException:
            if created and out.is_dir() and not any(out.iterdir()):
                out.rmdir()
            raise
