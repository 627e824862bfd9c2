"""Shared helpers of the RE-0 tests: record an episode with decision points, compare logs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captain_ros.evaluation.config import BackendConfig
from captain_ros.evaluation.episode import build_robot
from captain_ros.harness.episode import EpisodeOptions, run_episode
from captain_ros.harness.episode.budgets import Budgets
from captain_ros.harness.record.episode_record import EpisodeRecord
from captain_ros.harness.sandbox.session import SessionConfig
from captain_ros.policy.base import Policy
from captain_ros.policy.replay import ReplayPolicy
from captain_ros.policy.scripted import ScriptedPolicy
from captain_ros.research.re0.decision_points import DecisionPointSource, RecordedEpisode

WALL_KEYS = ("wall_s_used", "wall_s_left")
TESTBED_STUDENT = "scripted-faulty:place_offset=1,skip_verify=1,offset_m=0.12"
"""The testbed student: its placement 12 cm off the plate and not verified (it always fails)."""


def faulty_student_loop(out: Path, **settings: Any) -> Any:
    """A generation's settings for the testbed student on seed 3 of pick_place (fake robot,
    deterministic pairs), with ``settings`` on top."""
    from captain_ros.research.re0.loop import LoopConfig

    base: dict[str, Any] = {"task": "pick_place", "seeds": (3,), "student": TESTBED_STUDENT}
    return LoopConfig(**{**base, "out": str(out), "noise": None, "backend": "fake", **settings})


def frozen_clock() -> float:
    """A clock that never moves: the wall-time budget fields of every Result are then the same
    in a recorded run and its continuation (with the real clock they are the only difference)."""
    return 0.0


@dataclass
class Recorded:
    """One recorded episode and the live robot it ran on."""

    rec: RecordedEpisode
    record: EpisodeRecord
    task: Any
    backend: Any
    service: Any
    source: DecisionPointSource
    final: Any


def record(
    out: Path,
    task_name: str = "pick_place",
    seed: int = 3,
    backend: str = "fake",
    policy: Policy | None = None,
    rng_seed: int | None = None,
    budgets: Budgets | None = None,
    backend_options: dict[str, Any] | None = None,
    session_config: SessionConfig | None = None,
    profile: str = "default",
) -> Recorded:
    """Run one episode with a :class:`DecisionPointSource` (the robot stays open: close it)."""
    task, bk, service = build_robot(task_name, seed, BackendConfig(backend, backend_options or {}))
    source = DecisionPointSource(service)
    cfg = session_config or SessionConfig(rng_seed=rng_seed)
    result = run_episode(
        task,
        seed,
        service,
        policy or ScriptedPolicy(),
        budgets or Budgets(),
        out,
        options=EpisodeOptions(profile=profile),
        privileged=source,
        observers=[source],
        session_config=cfg,
        clock=frozen_clock,
    )
    return Recorded(RecordedEpisode.load(out), result, task, bk, service, source, bk.snapshot())


def replay_policy(cells: list[str]) -> ReplayPolicy:
    return ReplayPolicy([{"code": c, "reasoning": f"step {i + 1}"} for i, c in enumerate(cells)])


def strip_timing(line: dict[str, Any]) -> dict[str, Any]:
    """A ``request`` line without what depends on the wall clock (times, wall budget)."""
    r = json.loads(json.dumps(line))
    for k in ("model_s", "backend_s", "harness_s"):
        r.pop(k, None)
    for k in WALL_KEYS:
        r["budget"].pop(k, None)
    for cell in r["calls"]:
        cell.pop("duration_s", None)
        cell.pop("call_s", None)
        for call in cell.get("robot_calls") or []:
            for k in WALL_KEYS:
                call["result"]["budget"].pop(k, None)
    return r
