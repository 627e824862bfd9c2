"""The episode record as the critic, credit and RL code read it (torch-free).

:func:`~captain_ros.harness.record.privileged_log.load_episode_record` is the only reader of
episode folders for learning (the learning view of :mod:`captain_ros.core.episode_folder`). This
module converts one :class:`~captain_ros.harness.record.privileged_log.EpisodeLearningRecord` into
:class:`EpisodeArrays`, the validated numpy view everything else here consumes:

- ``features[k]`` is x(s_{k+1}) for the states s_1 .. s_{T+1} (row 0 is s_1, the state before
  request 1; row T is the final state);
- ``costs[k]``, ``error_only[k]``, ... describe request k + 1 (t = 1 .. T).

Episodes from different front ends (CLI, ROS node, evaluation worker) all arrive through the same
record, so nothing below parses logs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from captain_ros.core.episode_folder import PRIVILEGED, EpisodeFiles
from captain_ros.learn.errors import RecordError

if TYPE_CHECKING:  # the harness package is imported when a folder is read (default_loader)
    from captain_ros.harness.record.privileged_log import EpisodeLearningRecord

OUTCOMES = (
    "success_with_finish",
    "missed_finish",
    "false_finish",
    "budget_exhausted",
    "other_failure",
)


@dataclass(frozen=True)
class EpisodeArrays:
    """One episode as validated arrays (see the module docstring for the indexing).

    Attributes:
        episode_id: Unique id of the episode (``task:seed:policy:out_dir`` unless given).
        group: Start-state group (rollouts sharing a start state share it).
        task: Task name (the critic's one-hot).
        features: (T + 1, F) float32 privileged features of s_1 .. s_{T+1}.
        held: (T + 1,) whether an object is held in s_1 .. s_{T+1}.
        costs: (T,) per-request costs c_t <= 0.
        return_R: Terminal return R (1 / 0.25 / 0 / -0.1 / -0.3).
        success: Host success (the critic's label y).
        error_only: (T,) the request's cells only produced Python errors.
        perception_only: (T,) the request made no physical action, only perception calls.
        physical_actions: (T,) executed physical actions per request.
        failed_physical: (T,) failed or rejected physical actions per request.
        capabilities: per request, the robot calls made, in order.
    """

    episode_id: str
    group: str
    task: str
    features: np.ndarray
    held: np.ndarray
    costs: np.ndarray
    return_R: float
    success: bool
    error_only: np.ndarray
    perception_only: np.ndarray
    physical_actions: np.ndarray
    failed_physical: np.ndarray
    capabilities: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        f = np.asarray(self.features)
        if f.ndim != 2 or f.shape[0] < 2:
            raise RecordError(
                f"{self.episode_id}: features must be (T+1, F) with T >= 1, got shape {f.shape}"
            )
        if not np.all(np.isfinite(f)):
            raise RecordError(f"{self.episode_id}: features contain non-finite values")
        n = f.shape[0] - 1
        for name in (
            "costs",
            "error_only",
            "perception_only",
            "physical_actions",
            "failed_physical",
        ):
            a = np.asarray(getattr(self, name))
            if a.shape != (n,):
                raise RecordError(
                    f"{self.episode_id}: {name} must have shape ({n},), got {a.shape}"
                )
        if np.asarray(self.held).shape != (n + 1,):
            raise RecordError(f"{self.episode_id}: held must have shape ({n + 1},)")
        if len(self.capabilities) != n:
            raise RecordError(f"{self.episode_id}: capabilities must list {n} requests")
        c = np.asarray(self.costs, dtype=float)
        if not np.all(np.isfinite(c)) or np.any(c > 0):
            raise RecordError(f"{self.episode_id}: costs must be finite and <= 0")
        if not np.isfinite(self.return_R):
            raise RecordError(f"{self.episode_id}: return_R must be finite")
        if not self.task or not self.group:
            raise RecordError(f"{self.episode_id}: task and group must be non-empty")

    @property
    def n_requests(self) -> int:
        """T, the number of requests."""
        return int(self.features.shape[0] - 1)

    @property
    def episode_return(self) -> float:
        """G = R + sum_t c_t (paper eq. 6)."""
        return float(self.return_R + float(np.sum(self.costs)))


def episode_arrays(record: EpisodeLearningRecord, episode_id: str | None = None) -> EpisodeArrays:
    """Convert one episode record (records.md) into validated :class:`EpisodeArrays`."""
    eid = episode_id or f"{record.task}:{record.seed}:{record.policy}:{record.out_dir}"
    states, requests = list(record.states), list(record.requests)
    n = len(requests)
    if n < 1:
        raise RecordError(f"{eid}: an episode needs at least one request")
    if len(states) != n + 1:
        raise RecordError(f"{eid}: {n} requests need {n + 1} states, got {len(states)}")
    if [s.t for s in states] != list(range(1, n + 2)):
        raise RecordError(f"{eid}: state indices must be 1..{n + 1} in order")
    if [r.t for r in requests] != list(range(1, n + 1)):
        raise RecordError(f"{eid}: request indices must be 1..{n} in order")
    if record.outcome not in OUTCOMES:
        raise RecordError(
            f"{eid}: unknown outcome {record.outcome!r}; valid: {', '.join(OUTCOMES)}"
        )
    try:
        feats = np.stack([np.asarray(s.features, dtype=np.float32) for s in states])
    except ValueError as exc:
        raise RecordError(f"{eid}: states have features of different lengths ({exc})") from exc
    return EpisodeArrays(
        episode_id=eid,
        group=str(record.group),
        task=str(record.task),
        features=feats,
        held=np.array([bool(s.held) for s in states]),
        costs=np.array([float(r.cost) for r in requests], dtype=np.float64),
        return_R=float(record.return_R),
        success=bool(record.host_success),
        error_only=np.array([bool(r.python_error_only) for r in requests]),
        perception_only=np.array([bool(r.perception_only) for r in requests]),
        physical_actions=np.array([int(r.physical_actions) for r in requests], dtype=np.int64),
        failed_physical=np.array([int(r.failed_physical) for r in requests], dtype=np.int64),
        capabilities=tuple(tuple(str(c) for c in r.capabilities) for r in requests),
    )


def default_loader() -> Callable[[str], EpisodeLearningRecord]:
    """The project's torch-free reader of an episode folder's learning record."""
    from captain_ros.harness.record.privileged_log import load_episode_record

    return load_episode_record


def episode_folders(run_dirs: Iterable[str | Path]) -> list[Path]:
    """Episode folders under ``run_dirs``: each folder holding a ``privileged.jsonl``, sorted.

    A run dir may itself be an episode folder. Missing paths raise :class:`RecordError`.
    """
    found: set[Path] = set()
    for d in run_dirs:
        p = Path(d)
        if not p.exists():
            raise RecordError(f"no such run dir: {p}")
        if EpisodeFiles(p).privileged.is_file():
            found.add(p)
        found.update(q.parent for q in p.rglob(PRIVILEGED))
    return sorted(found)


@dataclass(frozen=True)
class LoadReport:
    """Episodes read from run dirs, and the folders that could not be read (with why)."""

    episodes: tuple[EpisodeArrays, ...]
    skipped: tuple[tuple[str, str], ...]


def load_run_dirs(
    run_dirs: Iterable[str | Path], loader: Callable[[str], EpisodeLearningRecord] | None = None
) -> LoadReport:
    """Read every episode folder under ``run_dirs`` through ``loader`` (default: the project's).

    A folder whose record cannot be read or is malformed is skipped and reported, never fatal.
    """
    load = loader or default_loader()
    eps: list[EpisodeArrays] = []
    skipped: list[tuple[str, str]] = []
    for folder in episode_folders(run_dirs):
        try:
            eps.append(episode_arrays(load(str(folder)), episode_id=str(folder)))
        except Exception as exc:  # untrusted folders: report and continue
            skipped.append((str(folder), f"{type(exc).__name__}: {exc}"))
    return LoadReport(tuple(eps), tuple(skipped))
