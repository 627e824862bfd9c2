"""Terminal returns and per-request costs, exactly as CaPtain section 3.3 and appendix E.

Torch-free record keeping: the harness and the ROS policy node write them into the episode's
privileged record; the critic and RL (``captain_ros.learn``) read them back (and may recompute
the costs from the recorded per-request counts with other constants).

Terminal return R (eq. 7): 1 success with ``finish()``, 0.25 missed finish, 0 other failure,
-0.1 budget exhausted, -0.3 false finish. For the tasks marked hard, a failed episode that is
settled as ``other_failure`` and reached rung d of the task's n-rung milestone ladder also gets
the one-shot staged reward 0.15 d / (n + 1) <= 0.1125 (appendix E: rungs judged from hidden
snapshots; placing/opening rungs must still hold at the end). It is not added to budget
exhaustion or false finishes, so the paper's ordering holds: success > missed finish > partial
progress > 0 > budget exhaustion > false finish.

Costs c_t <= 0 of request t:
- -0.02 for each failed or rejected physical action of the request (refusals because a budget is
  spent are not counted: the terminal return already prices them);
- -0.008 for each physical action beyond 1.5x the median action count of the task's SFT
  episodes (counted over the episode, charged to the request that makes it);
- -0.005 for the request and for each of its physical actions once the host has judged the
  scene solved at some state s_k, k <= t; this post-success part is capped at -0.45 in total.
  (Appendix E words it as -0.008 per action plus -0.005 per request; we follow the issue's and
  section 3.3's reading: -0.005 per request and per action, capped.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

RETURNS: Mapping[str, float] = {
    "success_with_finish": 1.0,
    "missed_finish": 0.25,
    "other_failure": 0.0,
    "budget_exhausted": -0.1,
    "false_finish": -0.3,
    "error": 0.0,
}

HARD_TASKS = frozenset({"restack", "open_drawer", "two_arm_lift", "insertion"})
"""Tasks that get the staged sub-goal reward: the long-horizon ones (restack moves two cubes) and
the three whose first expert figures were lowest (open_drawer, two_arm_lift, insertion)."""

SFT_MEDIAN_ACTIONS: Mapping[str, float] = {
    "pick_place": 11.5,
    "stack": 26.0,
    "restack": 23.0,
    "open_drawer": 15.0,
    "two_arm_lift": 20.0,
    "insertion": 13.0,
}
"""Median physical actions per episode of the scripted expert (the SFT teacher) on train seeds
0-39 per task (benchmarks/results/sft.md, "Action medians"); ``captain learn dataset`` writes the
medians of the actual SFT data into ``stats.json``, which the RL configuration uses instead."""


@dataclass(frozen=True)
class CostConfig:
    """Constants of the per-request costs (paper values by default).

    Attributes:
        failed_action: Cost of each failed or rejected physical action.
        extra_action: Cost of each physical action beyond ``extra_factor`` x the task median.
        extra_factor: Multiple of the median action count that is free.
        median_actions: Per task, the median physical actions of its SFT episodes.
        post_solve: Cost of each request and each physical action after the scene is first solved.
        post_solve_cap: Lower bound of the summed post-solve costs of an episode.
    """

    failed_action: float = -0.02
    extra_action: float = -0.008
    extra_factor: float = 1.5
    median_actions: Mapping[str, float] = field(default_factory=lambda: dict(SFT_MEDIAN_ACTIONS))
    post_solve: float = -0.005
    post_solve_cap: float = -0.45


@dataclass(frozen=True)
class RequestCounts:
    """What request t did, as the costs need it.

    Attributes:
        physical_actions: Physical actions it executed.
        failed_physical: Its failed or rejected physical actions.
        solved_before: The host had judged the scene solved at some state s_k with k <= t.
    """

    physical_actions: int
    failed_physical: int
    solved_before: bool


def request_costs(
    task: str, requests: Sequence[RequestCounts], config: CostConfig | None = None
) -> list[float]:
    """c_t for each request of one episode of ``task`` (list of floats <= 0)."""
    cfg = config or CostConfig()
    median = cfg.median_actions.get(task)
    free = None if median is None else cfg.extra_factor * float(median)
    costs: list[float] = []
    cum = 0
    post_total = 0.0
    for r in requests:
        c = cfg.failed_action * r.failed_physical
        before, cum = cum, cum + r.physical_actions
        if free is not None:
            c += cfg.extra_action * (max(0.0, cum - free) - max(0.0, before - free))
        if r.solved_before:
            post = cfg.post_solve * (1 + r.physical_actions)
            post = max(post, cfg.post_solve_cap - post_total)  # both negative: clip at the cap
            post_total += post
            c += post
        costs.append(float(c))
    return costs


def staged_reward(rung: int, n_rungs: int, coefficient: float = 0.15) -> float:
    """One-shot sub-goal reward of a failed episode at rung ``rung`` of ``n_rungs``."""
    if n_rungs <= 0 or rung <= 0:
        return 0.0
    return coefficient * min(rung, n_rungs) / (n_rungs + 1)


def terminal_return(
    outcome: str,
    task: str = "",
    rung: int = 0,
    n_rungs: int = 0,
    hard_tasks: frozenset[str] = HARD_TASKS,
) -> float:
    """R of an episode with ``outcome`` (plus the staged reward for hard tasks' other failures)."""
    if outcome not in RETURNS:
        raise ValueError(f"unknown outcome {outcome!r}; valid: {', '.join(RETURNS)}")
    r = RETURNS[outcome]
    if outcome == "other_failure" and task in hard_tasks:
        r += staged_reward(rung, n_rungs)
    return r
