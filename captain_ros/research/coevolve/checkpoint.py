"""Trusted checkpoints, verified rollback and fingerprints of rejected transactions.

Every accepted transition becomes the next trusted checkpoint: the bridge snapshot, its state
digest and the host's view at that point (observation, certified milestones, plan). After a
rejection the host restores the *latest* accepted checkpoint (never an earlier one; recovery does
not search ancestors), clears the transient execution state, resynchronises the controllers (zero
velocity commands) and verifies the restoration: the bridge's state digest after the restore must
equal the checkpoint's digest bit for bit. Rollback never refunds the physical budget.

A fingerprint hashes the checkpoint id, the normalised programs of both robots and their effective
arguments; a fingerprint whose transaction was rejected blocks an identical transaction at that
checkpoint (with the restored random state it would fail the same way).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from captain_ros.backends.humanoid.bridge import HumanoidBridge
from captain_ros.core.errors import CaptainError
from captain_ros.research.coevolve.motor import MotorInterface
from captain_ros.research.coevolve.observation import Observation
from captain_ros.research.coevolve.plan import Plan
from captain_ros.research.coevolve.strategy import ROBOTS
from captain_ros.research.coevolve.validation import normalize_program


class RestorationError(CaptainError):
    """The restored state does not match the checkpoint (the run must stop: label C)."""


@dataclass(frozen=True)
class Checkpoint:
    """A trusted state.

    Attributes:
        id: ``ckpt_<n>``.
        transaction: Cumulative transactions when it was made (0 = the initial state).
        snapshot: The bridge's snapshot (simulation) - opaque to everyone but the bridge.
        digest: The bridge's state digest at the checkpoint.
        observation: The host's observation of that state.
        certified: Milestones certified up to it.
        plan: The plan at it.
    """

    id: str
    transaction: int
    snapshot: Any
    digest: str
    observation: Observation
    certified: tuple[str, ...]
    plan: Plan


def fingerprint(
    checkpoint_id: str, programs: dict[str, str], theta: dict[str, dict[str, Any]]
) -> str:
    """Hash of (checkpoint, normalised policy, effective arguments)."""

    def canon(v: Any) -> Any:
        if isinstance(v, float):
            return round(v, 9)
        if isinstance(v, (list, tuple)):
            return [canon(x) for x in v]
        if isinstance(v, dict):
            return {k: canon(x) for k, x in sorted(v.items())}
        return v

    body = {
        "checkpoint": checkpoint_id,
        "programs": {r: normalize_program(programs.get(r, "")) for r in ROBOTS},
        "arguments": canon(theta),
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]


class CheckpointStore:
    """Checkpoints of one run and the fingerprints rejected at each."""

    def __init__(self, bridge: HumanoidBridge, motor: MotorInterface) -> None:
        self.bridge = bridge
        self.motor = motor
        self.checkpoints: list[Checkpoint] = []
        self.rejected: dict[str, set[str]] = {}

    @property
    def latest(self) -> Checkpoint:
        return self.checkpoints[-1]

    def commit(
        self, transaction: int, observation: Observation, certified: tuple[str, ...], plan: Plan
    ) -> Checkpoint:
        """Make the current bridge state the latest trusted checkpoint."""
        snap = self.bridge.snapshot()
        ck = Checkpoint(
            f"ckpt_{len(self.checkpoints)}",
            transaction,
            snap,
            str(snap.digest),
            observation,
            tuple(certified),
            plan,
        )
        self.checkpoints.append(ck)
        return ck

    def blocked(self, fp: str) -> bool:
        return fp in self.rejected.get(self.latest.id, set())

    def reject(self, fp: str) -> None:
        self.rejected.setdefault(self.latest.id, set()).add(fp)

    def rollback(self) -> Checkpoint:
        """Restore the latest checkpoint, resynchronise the controllers and verify the restoration.

        Raises:
            RestorationError: The digest after the restore differs from the checkpoint's.
        """
        ck = self.latest
        digest = str(self.bridge.restore(ck.snapshot))
        if digest != ck.digest:
            raise RestorationError(
                f"restored state digest {digest} != checkpoint {ck.id} digest {ck.digest}"
            )
        self.motor.resync()
        return ck
