"""Synthetic episodes with a known success rule, for critic tests and the speed benchmark (numpy).

Not a simulator: a small generative story over the real 36 feature names, so the critic has
something learnable whose answer is known. Each start-state group shares its initial features;
each of its G rollouts then

1. moves the tool toward the target for a few requests (ee-to-target distance shrinks);
2. attempts a grasp at a random request: it succeeds with a per-task probability, after which
   ``held`` / ``ever_held`` are 1 and the target lifts;
3. if held, attempts a placement later: it succeeds with probability 0.8 (the target reaches its
   goal, ``n_satisfied`` rises, the jaw opens), else the object is dropped away from the goal;
4. pads the rest with perception-only requests (no state change).

Host success is exactly "placed". States before the grasp cannot tell the outcome apart (their
AUC ceiling is below 1), states after the placement can. Costs follow CaPtain's -0.02 per failed
physical action.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from captain_ros.learn.episodes import EpisodeArrays
from captain_ros.tasks.features import FEATURE_NAMES

_I = {n: i for i, n in enumerate(FEATURE_NAMES)}
DEFAULT_TASKS = ("pick_place", "stack", "restack", "open_drawer", "two_arm_lift", "insertion")


def _grasp_p(task: str, tasks: Sequence[str]) -> float:
    return 0.35 + 0.5 * (tasks.index(task) + 1) / (len(tasks) + 1)


def synthetic_episodes(
    n_groups: int,
    group_size: int = 4,
    tasks: Sequence[str] = DEFAULT_TASKS,
    mean_requests: int = 25,
    seed: int = 0,
) -> list[EpisodeArrays]:
    """``n_groups`` start states x ``group_size`` rollouts (about ``mean_requests`` each)."""
    rng = np.random.default_rng(seed)
    out: list[EpisodeArrays] = []
    for g in range(n_groups):
        task = tasks[g % len(tasks)]
        x0 = np.zeros(len(FEATURE_NAMES), np.float32)
        x0[_I["ee0_x_m"] : _I["ee0_z_m"] + 1] = rng.uniform([0.2, -0.2, 0.15], [0.4, 0.2, 0.3])
        x0[_I["jaw0_opening_m"]] = 0.08
        x0[_I["n_goals"]] = 1 + g % 2
        x0[_I["target_x_m"] : _I["target_z_m"] + 1] = rng.uniform(
            [0.25, -0.2, 0.02], [0.45, 0.2, 0.03]
        )
        x0[_I["dest_x_m"] : _I["dest_z_m"] + 1] = rng.uniform([0.25, -0.2, 0.02], [0.45, 0.2, 0.03])
        x0[_I["ee_to_target_m"]] = np.linalg.norm(
            x0[0:3] - x0[_I["target_x_m"] : _I["target_x_m"] + 3]
        )
        x0[_I["target_to_goal_m"]] = np.linalg.norm(
            x0[_I["target_x_m"] : _I["target_x_m"] + 3] - x0[_I["dest_x_m"] : _I["dest_x_m"] + 3]
        )
        x0[_I["target_to_goal_norm"]] = 1.0
        for r in range(group_size):
            out.append(
                _rollout(rng, x0, task, f"{task}:{g}", f"{task}:{g}:r{r}", tasks, mean_requests)
            )
    return out


def _rollout(
    rng: np.random.Generator,
    x0: np.ndarray,
    task: str,
    group: str,
    eid: str,
    tasks: Sequence[str],
    mean_requests: int,
) -> EpisodeArrays:
    n = int(np.clip(rng.poisson(mean_requests), 8, 4 * mean_requests))
    k_grasp = int(rng.integers(2, max(3, n // 2)))
    grasped = rng.uniform() < _grasp_p(task, tasks)
    k_place = int(rng.integers(k_grasp + 1, n)) if grasped and k_grasp + 1 < n else n
    placed = grasped and k_place < n and rng.uniform() < 0.8
    feats = np.repeat(x0[None], n + 1, axis=0)
    held = np.zeros(n + 1, bool)
    physical = np.zeros(n, np.int64)
    failed = np.zeros(n, np.int64)
    perception = np.zeros(n, bool)
    caps: list[tuple[str, ...]] = []
    cap: tuple[str, ...]
    for k in range(n):  # request k + 1 takes state k to state k + 1
        s = feats[k].copy()
        if k < k_grasp:
            s[_I["ee_to_target_m"]] *= rng.uniform(0.4, 0.8)
            physical[k], cap = 1, ("move_to",)
        elif k == k_grasp:
            s[_I["jaw0_opening_m"]] = 0.03 if grasped else 0.0
            physical[k], cap = 1, ("move_to", "move_to")
            failed[k] = 0 if grasped else 1
            if grasped:
                s[_I["held"]] = s[_I["ever_held"]] = 1.0
                s[_I["target_lift_m"]] = rng.uniform(0.05, 0.1)
        elif k == k_place and grasped:
            s[_I["held"]] = 0.0
            s[_I["jaw0_opening_m"]] = 0.08
            s[_I["target_lift_m"]] = 0.0
            if placed:
                s[_I["target_to_goal_m"]] = rng.uniform(0.0, 0.01)
                s[_I["n_satisfied"]] = s[_I["n_goals"]]
                s[_I["frac_satisfied"]] = 1.0
            else:
                s[_I["target_to_goal_m"]] += rng.uniform(0.05, 0.15)
                failed[k] = 1
            s[_I["target_to_goal_norm"]] = s[_I["target_to_goal_m"]] / max(
                float(x0[_I["target_to_goal_m"]]), 1e-3
            )
            physical[k], cap = 1, ("release",)
        elif grasped and k < k_place:
            s[_I["target_to_goal_m"]] *= rng.uniform(0.6, 0.95)
            s[_I["target_to_goal_norm"]] = s[_I["target_to_goal_m"]] / max(
                float(x0[_I["target_to_goal_m"]]), 1e-3
            )
            physical[k], cap = 1, ("move_to",)
        else:
            perception[k], cap = True, ("observe", "measure_object_geometry")
        s[0:3] += rng.normal(0, 0.005, 3).astype(np.float32)
        feats[k + 1] = s
        held[k + 1] = s[_I["held"]] > 0.5
        caps.append(cap)
    return EpisodeArrays(
        episode_id=eid,
        group=group,
        task=task,
        features=feats,
        held=held,
        costs=-0.02 * failed.astype(np.float64),
        return_R=1.0 if placed else 0.0,
        success=placed,
        error_only=np.zeros(n, bool),
        perception_only=perception,
        physical_actions=physical,
        failed_physical=failed,
        capabilities=tuple(caps),
    )
