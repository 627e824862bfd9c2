"""Episode budgets: requests, wall time and physical actions (paper defaults 60 / 1,080 s / 150;
120 physical actions during RL, CaPtain appendix B)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Budgets:
    """Limits of one episode.

    Attributes:
        max_requests: Policy requests (model calls) [count].
        max_wall_s: Wall time of the whole episode, model time included [s].
        max_physical_actions: Calls of physical capabilities (move_to, hold, recover, release) [count].
    """

    max_requests: int = 60
    max_wall_s: float = 1080.0
    max_physical_actions: int = 150

    def __post_init__(self) -> None:
        if self.max_requests < 1 or self.max_physical_actions < 0 or not self.max_wall_s > 0:
            raise ValueError("budgets must be positive")

    @classmethod
    def rl(cls) -> Budgets:
        """The RL budget mode: the paper's 120 physical actions (requests and wall time as at
        test time)."""
        return cls(max_physical_actions=120)

    def replace(self, **changes: Any) -> Budgets:
        """A copy with some limits changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_requests": self.max_requests,
            "max_wall_s": self.max_wall_s,
            "max_physical_actions": self.max_physical_actions,
        }


class BudgetTracker:
    """Counts what an episode used. Lives in the harness process only (never in the session)."""

    def __init__(self, budgets: Budgets, clock: Callable[[], float] = time.monotonic) -> None:
        self.budgets = budgets
        self._clock = clock
        self._t0 = clock()
        self.requests = 0
        self.physical_actions = 0

    def elapsed_s(self) -> float:
        return self._clock() - self._t0

    def requests_left(self) -> int:
        return self.budgets.max_requests - self.requests

    def physical_left(self) -> int:
        return self.budgets.max_physical_actions - self.physical_actions

    def wall_left_s(self) -> float:
        return self.budgets.max_wall_s - self.elapsed_s()

    def exhausted(self) -> str | None:
        """Which budget is spent (``"requests"``, ``"wall_time"``, ``"physical_actions"``) or None."""
        if self.requests >= self.budgets.max_requests:
            return "requests"
        if self.wall_left_s() <= 0:
            return "wall_time"
        if self.physical_actions >= self.budgets.max_physical_actions:
            return "physical_actions"
        return None

    def snapshot(self) -> dict[str, Any]:
        """What every Result reports under ``budget``."""
        return {
            "requests_used": self.requests,
            "requests_left": self.requests_left(),
            "physical_actions_used": self.physical_actions,
            "physical_actions_left": self.physical_left(),
            "wall_s_used": round(self.elapsed_s(), 3),
            "wall_s_left": round(max(0.0, self.wall_left_s()), 3),
        }
