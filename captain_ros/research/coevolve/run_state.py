"""The state of one CoEvolve run and its bookkeeping: the components (bridge, motor interface,
checkpoint store, verifier, memory, plan, log), the counters, the role contexts, the termination
labels (success, D drop limit, G generation/repair stall, B budget, C conditional stop) and the
run summary. :class:`~captain_ros.research.coevolve.loop.CoEvolveRun` is the algorithm over it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from captain_ros.backends.humanoid.bridge import HumanoidBridge
from captain_ros.backends.humanoid.layouts import get_layout
from captain_ros.research.coevolve.checkpoint import CheckpointStore
from captain_ros.research.coevolve.memory import Memory
from captain_ros.research.coevolve.metrics import RunOutcome
from captain_ros.research.coevolve.motor import MotorInterface
from captain_ros.research.coevolve.plan import Plan
from captain_ros.research.coevolve.promotion import situation_of
from captain_ros.research.coevolve.records import RunConfig, RunLog, RunSummary
from captain_ros.research.coevolve.roles.base import RoleContext, RoleOutput, RoleSet
from captain_ros.research.coevolve.strategy import Revision, Strategy
from captain_ros.research.coevolve.verifier import Evidence, Verifier


class RunState:
    """What a run holds between transactions, and its bookkeeping.

    Args:
        config: The run's configuration.
        roles: Orchestrator, Coder and (typed revision) Reviser.
        out_dir: Run folder (``None``: nothing written).
        bridge: A humanoid bridge (default: a fresh MuJoCo pair for the layout and seed).
        listeners: Called with every event (live display, ROS receipts).
        should_stop: Polled before every step; ``True`` ends the run (label C, e.g. an operator's
            cancel).
    """

    def __init__(
        self,
        config: RunConfig,
        roles: RoleSet,
        out_dir: str | Path | None = None,
        bridge: HumanoidBridge | None = None,
        listeners: list[Any] | None = None,
        should_stop: Any = None,
    ) -> None:
        from captain_ros.backends.humanoid.sim import MujocoHumanoidPair

        self.cfg = config
        self.roles = roles
        self.should_stop = should_stop
        self.out_dir = Path(out_dir) if out_dir else None
        self.layout = get_layout(config.layout)
        self.bridge = bridge or MujocoHumanoidPair(
            self.layout, seed=config.seed, noise=config.noise
        )
        self.motor = MotorInterface(self.bridge)
        self.store = CheckpointStore(self.bridge, self.motor)
        self.verifier = Verifier(self.layout, config.endpoint)
        self.memory = Memory.load(config.memory_in) if config.memory_in else Memory()
        self.memory.enabled = config.memory
        self.log = RunLog(self.out_dir, listeners)
        self.plan = Plan.for_layout(self.layout, config.endpoint)
        self.certified: tuple[str, ...] = ()
        self.first: dict[str, int] = {}
        self.charged = self.accepted = self.drops = 0
        self.stall = self.attempt = self.model_calls = self.prevalidation = 0
        self.rollbacks = self.revisions = self.revisions_ok = 0
        self.pending: Revision | None = None
        self.pending_parent_ev: Evidence | None = None
        self.reflection = ""
        self.feedback = ""
        self.failures: list[str] = []
        self.history: list[dict[str, Any]] = []
        self.last_ev: Evidence | None = None
        self.rejected_ev: dict[str, tuple[Strategy, Evidence]] = {}

    # --- bookkeeping -----------------------------------------------------------------------------
    def _count(self, out: RoleOutput[Any]) -> None:
        self.model_calls += out.model_calls or 0

    def _refuse(self, stage: str, why: str, **extra: Any) -> None:
        self.stall += 1
        self.prevalidation += 1
        self.feedback = f"{stage}: {why}"[:600]
        self.log.emit(
            "prevalidation", stage=stage, reason=why[:600], transaction=self.charged, **extra
        )

    def _ctx(self, **kw: Any) -> RoleContext:
        ck = self.store.latest
        phase = self.plan.active()
        assert phase is not None
        situation, turn = situation_of(phase, ck.observation)
        base: dict[str, Any] = dict(
            observation=ck.observation,
            plan=self.plan,
            phase=phase,
            situation=situation,
            turn=turn,
            evidence=self.last_ev,
            recent_failures=tuple(self.failures),
            constraint=self.pending,
            reflection=self.reflection,
            feedback=self.feedback,
            transaction=self.charged,
            budget=self.cfg.budget,
            history=tuple(self.history[-6:]),
            attempt=self.attempt,
        )
        base.update(kw)
        return RoleContext(**base)

    def _termination(self, t0: float) -> str | None:
        if self.plan.finished:
            return "success"
        if self.charged >= self.cfg.budget:
            return "B"
        if self.drops >= self.cfg.drop_limit:
            return "D"
        if (
            self.stall >= self.cfg.stall_limit
            or self.attempt >= self.cfg.repair_limit
            or self.model_calls >= self.cfg.max_model_calls
        ):
            return "G"
        if (
            time.perf_counter() - t0 > self.cfg.max_wall_s
            or self.bridge.estopped
            or (self.should_stop is not None and self.should_stop())
        ):
            return "C"
        return None

    def _finish(self, label: str, t0: float) -> RunSummary:
        names = self.layout.milestone_names
        final = self.store.latest.certified
        outcome = RunOutcome(
            label == "success",
            len(names),
            len(final),
            tuple(self.first.get(m) for m in names),
            self.accepted,
            self.charged,
            0,
            label,
        )
        wall = time.perf_counter() - t0
        steps = int(getattr(self.bridge, "ticks", 0)) * 10
        summary = RunSummary(
            self.cfg,
            self.roles.name,
            outcome,
            names,
            final,
            self.model_calls,
            self.prevalidation,
            self.rollbacks,
            self.revisions,
            self.revisions_ok,
            self.drops,
            round(wall, 2),
            round(self.bridge.time_s(), 2),
            steps,
            len(self.memory.hits),
            (len(self.memory.strategy), len(self.memory.exemplars)),
            str(self.out_dir or ""),
        )
        self.log.emit(
            "end", label=label, outcome=summary.to_dict()["outcome"], certified=list(final)
        )
        self.log.close()
        if self.out_dir is not None:
            summary.save(self.out_dir)
            if self.cfg.memory:
                self.memory.save(self.out_dir / "memory")
        return summary
