"""Critic early stop (paper appendices A.2 and E), a pure decision the rollout loop calls.

"An episode is cut when V < 0.02 for 5 consecutive requests after request 5. A deterministic 5%
control slice is never cut." A cut episode settles as budget exhausted (R = -0.1).

Precisely, with ``values_after[k - 1] = V(s_{k+1}, k+1)``, the critic's value of the state after
request k (the state the next request would start from): the episode is cut after request n iff
the episode is not in the control slice, its task is not exempt, n >= 10, and the values after
requests n - 4 .. n (all later than request 5) are below 0.02. The earliest cut is therefore
after request 10.

The control slice is a hash of the episode key (sha256, not Python's salted ``hash``), so every
process and every rerun agrees on it; about ``control_fraction`` of keys fall in it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from captain_ros.core.errors import InvalidArgumentError

EARLY_STOP_OUTCOME = "budget_exhausted"
EARLY_STOP_RETURN = -0.1


def unit_hash(key: str, salt: str = "") -> float:
    """A deterministic number in [0, 1) from ``key`` (the first 8 bytes of sha256)."""
    digest = hashlib.sha256(f"{salt}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


@dataclass(frozen=True)
class EarlyStop:
    """The cut rule; :meth:`should_stop` is pure (same inputs, same answer, in any process).

    Attributes:
        threshold: Value below which a state counts as near-certain failure (0.02).
        patience: Consecutive requests below the threshold (5).
        after_request: Only requests later than this one count (5).
        control_fraction: Share of episodes that are never cut (0.05).
        salt: Changes which episodes form the control slice (keep it fixed within a run).
        exempt_tasks: Tasks never cut (the paper exempts its hard tasks).
    """

    threshold: float = 0.02
    patience: int = 5
    after_request: int = 5
    control_fraction: float = 0.05
    salt: str = "captain-early-stop"
    exempt_tasks: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold < 1.0:
            raise InvalidArgumentError(f"threshold must be in (0, 1), got {self.threshold}")
        if self.patience < 1 or self.after_request < 0:
            raise InvalidArgumentError("patience must be >= 1 and after_request >= 0")
        if not 0.0 <= self.control_fraction <= 1.0:
            raise InvalidArgumentError(
                f"control_fraction must be in [0, 1], got {self.control_fraction}"
            )

    def in_control_slice(self, episode_key: str) -> bool:
        """Whether ``episode_key`` (e.g. ``"pick_place:12:r2"``) is in the never-cut slice."""
        return unit_hash(episode_key, self.salt) < self.control_fraction

    def should_stop(self, episode_key: str, values_after: Sequence[float], task: str = "") -> bool:
        """Cut the episode now? ``values_after`` holds V after each request made so far."""
        n = len(values_after)
        if n < self.after_request + self.patience:
            return False
        if task in self.exempt_tasks or self.in_control_slice(episode_key):
            return False
        tail = np.asarray(values_after[-self.patience :], dtype=np.float64)
        if not np.all(np.isfinite(tail)):
            raise InvalidArgumentError("critic values must be finite")
        return bool(np.all(tail < self.threshold))

    def control_share(self, keys: Iterable[str]) -> float:
        """Fraction of ``keys`` in the control slice (for reporting)."""
        ks = list(keys)
        return sum(self.in_control_slice(k) for k in ks) / len(ks) if ks else 0.0
