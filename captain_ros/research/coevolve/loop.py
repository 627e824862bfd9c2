"""The CoEvolve loop (the paper's Algorithm 1) over a humanoid bridge.

From the latest trusted checkpoint: retrieve strategy records (phase situation, failure context),
let the Orchestrator commit ``z`` (or take the approved revision child), retrieve exemplars by
``(kappa, d, m)``, let the Coder write both robot programs, run them in the sandbox, validate
(structure, syntax, methods, bounds, paired consistency, the child's constraint), refuse an
identical rejected transaction by fingerprint, dispatch the joint command (one physical
transaction, charged), verify it, and then either make the new state the trusted checkpoint (plan
and milestones advance, memory promotes) or restore the checkpoint with verification, record a
counterexample and ask for a typed revision (or, without typed revision, a flat reflective
repair). Pre-dispatch failures cost model calls but no transactions. Termination: success, D (drop
limit), G (generation/repair stall), B (budget), C (conditional stop: restoration mismatch,
e-stop, wall time).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from captain_ros.core.errors import CaptainError
from captain_ros.research.coevolve.checkpoint import RestorationError, fingerprint
from captain_ros.research.coevolve.observation import observe
from captain_ros.research.coevolve.promotion import promote_accepted, promote_rejected
from captain_ros.research.coevolve.records import RunSummary
from captain_ros.research.coevolve.roles.base import RoleContext
from captain_ros.research.coevolve.run_state import RunState
from captain_ros.research.coevolve.sandbox import ProgramSandbox
from captain_ros.research.coevolve.strategy import (
    ROBOTS,
    Strategy,
    check_revision,
    params_equal,
)
from captain_ros.research.coevolve.validation import check_pair, check_program, effective_theta
from captain_ros.research.coevolve.verifier import Evidence


class CoEvolveRun(RunState):
    """One run: ``CoEvolveRun(config, roles, out_dir).run()`` -> :class:`RunSummary` (the
    arguments are :class:`~captain_ros.research.coevolve.run_state.RunState`'s)."""

    # --- the loop --------------------------------------------------------------------------------
    def run(self) -> RunSummary:
        t0 = time.perf_counter()
        sandbox = ProgramSandbox(
            (self.out_dir or Path("/tmp")) / "workspace"
            if self.out_dir
            else Path(f"/tmp/coevolve_ws_{id(self)}")
        )
        obs0 = observe(self.bridge.privileged_state(), self.layout)
        ck = self.store.commit(0, obs0, (), self.plan)
        self.log.emit(
            "start",
            config=self.cfg.to_dict(),
            roles=self.roles.name,
            milestones=list(self.layout.milestone_names),
            plan=self.plan.to_list(),
            checkpoint=ck.id,
            digest=ck.digest,
            memory_size=[len(self.memory.strategy), len(self.memory.exemplars)],
        )
        label = None
        try:
            while (label := self._termination(t0)) is None:
                try:
                    self._step(sandbox)
                except RestorationError as exc:
                    self.log.emit("restoration_failed", reason=str(exc))
                    label = "C"
                    break
        finally:
            sandbox.close()
        return self._finish(label or "C", t0)

    def _step(self, sandbox: ProgramSandbox) -> None:
        ctx = self._ctx()
        hits0 = len(self.memory.hits)
        ctx = self._ctx(
            strategy_records=tuple(
                self.memory.retrieve_strategy(
                    ctx.situation, ctx.turn, tuple(self.failures), transaction=self.charged
                )
            )
        )
        out = self.roles.orchestrator.commit(ctx)
        self._count(out)
        if out.value is None:
            return self._refuse("orchestrator", out.error or "no coordination committed")
        z = out.value
        if not z.admissible:
            return self._refuse(
                "orchestrator", f"{z.primitive} does not admit mode {z.mode} with roles {z.roles}"
            )
        if self.pending is not None and self.pending.child.z.key() != z.key():
            return self._refuse(
                "orchestrator",
                "the committed coordination ignores the approved revision "
                f"child {self.pending.child.z.key()}",
            )
        exs = tuple(
            self.memory.retrieve_exemplars(
                z.primitive,
                z.objective.kind,
                z.mode,
                ctx.situation,
                ctx.turn,
                transaction=self.charged,
            )
        )
        cctx = self._ctx(strategy_records=ctx.strategy_records, exemplars=exs, z=z)
        cout = self.roles.coder.implement(cctx)
        self._count(cout)
        if cout.value is None:
            return self._refuse("coder", cout.error or "no programs")
        programs = {r: cout.value.programs.get(r, "") for r in ROBOTS}
        static = [f"{r}: {p}" for r in ROBOTS for p in check_program(programs[r], r)]
        if static:
            return self._refuse("validation", "; ".join(static), programs=programs)
        ran = sandbox.run(programs)
        if ran.errors:
            return self._refuse(
                "sandbox", "; ".join(f"{r}: {e}" for r, e in ran.errors.items()), programs=programs
            )
        pair = check_pair(z, ran.calls)
        theta = effective_theta(ran.calls) if not pair else {}
        if (
            not pair
            and self.pending is not None
            and self.pending.scope == "parameter"
            and not all(params_equal(theta[r], self.pending.child.theta[r], 1e-6) for r in ROBOTS)
        ):
            pair.append("the effective arguments differ from the approved parameter revision")
        if pair:
            return self._refuse("validation", "; ".join(pair), programs=programs)
        fp = fingerprint(self.store.latest.id, programs, theta)
        if self.store.blocked(fp):
            self._refuse(
                "fingerprint",
                f"identical to a transaction already rejected at {self.store.latest.id}",
                fingerprint=fp,
            )
            self.attempt += 1
            parent, ev = self.rejected_ev[fp]
            return self._revise(parent, ev, ctx)
        self._dispatch(ctx, z, theta, programs, fp, exs, hits0, out.meta)

    def _dispatch(
        self,
        ctx: RoleContext,
        z: Any,
        theta: dict[str, Any],
        programs: dict[str, str],
        fp: str,
        exs: tuple[Any, ...],
        hits0: int,
        meta: dict[str, Any],
    ) -> None:
        self.charged += 1
        self.stall = 0
        pre = self.store.latest
        phase = ctx.phase
        try:
            trace = self.motor.execute(z, theta)
        except CaptainError as exc:  # e-stop latched mid-transaction: the outcome is unresolved
            self.log.emit("unresolved", transaction=self.charged, reason=str(exc))
            raise RestorationError(f"transaction {self.charged} did not complete: {exc}") from exc
        post = observe(self.bridge.privileged_state(), self.layout, self.certified)
        ev = self.verifier.verify(pre.observation, z, theta, post, trace, phase, self.certified)
        source = f"{self.cfg.layout}:{self.cfg.seed}:t{self.charged}"
        rec = {
            "transaction": self.charged,
            "checkpoint": pre.id,
            "phase": phase.name,
            "situation": ctx.situation,
            "z": z.to_dict(),
            "theta": theta,
            "programs": programs,
            "fingerprint": fp,
            "orchestrator_rule": meta.get("rule", ""),
            "constraint": self.pending.to_dict() if self.pending else None,
            "evidence": ev.to_dict(),
            "trace": trace.to_dict(),
            "memory_hits": self.memory.hits[hits0:],
            "exemplars_used": [e.id for e in exs],
        }
        self.last_ev = ev
        self.history.append(
            {
                "transaction": self.charged,
                "primitive": z.primitive,
                "objective": z.objective.kind,
                "accepted": ev.accepted,
                "failure": ev.failure_type,
            }
        )
        if ev.accepted:
            self.accepted += 1
            new = tuple(m for m in ev.certified if m not in self.certified)
            self.certified = self.certified + new
            for m in new:
                self.first.setdefault(m, self.charged)
            self.plan = self.plan.close(set(ev.completed_phases))
            obs = observe(self.bridge.privileged_state(), self.layout, self.certified)
            ck = self.store.commit(self.charged, obs, self.certified, self.plan)
            rec["promoted"] = promote_accepted(
                self.memory,
                z,
                theta,
                programs,
                ev,
                ctx.situation,
                ctx.turn,
                self.pending,
                self.pending_parent_ev,
                source,
            )
            self.log.emit(
                "transaction",
                accepted=True,
                new_checkpoint=ck.id,
                certified=list(new),
                plan=self.plan.to_list(),
                **rec,
            )
            self.pending, self.pending_parent_ev, self.reflection, self.feedback = (
                None,
                None,
                "",
                "",
            )
            self.failures, self.attempt = [], 0
            return
        self.drops += int(ev.dropped)
        self.store.reject(fp)
        self.rejected_ev[fp] = (Strategy(z, theta), ev)
        rec["promoted"] = promote_rejected(self.memory, z, ev, ctx.situation, ctx.turn, source)
        self.log.emit("transaction", accepted=False, drops=self.drops, **rec)
        ck = self.store.rollback()
        self.rollbacks += 1
        self.log.emit(
            "rollback", transaction=self.charged, checkpoint=ck.id, digest=ck.digest, verified=True
        )
        self.failures.append(ev.failure_type)
        self.attempt += 1
        self._revise(Strategy(z, theta), ev, ctx)

    def _revise(self, parent: Strategy, ev: Evidence, ctx: RoleContext) -> None:
        self.pending, self.pending_parent_ev = None, None
        if self.roles.reviser is None:  # flat reflective repair: regenerate from the evidence
            self.reflection = ev.summary
            return
        self.revisions += 1
        rctx = self._ctx(parent=parent, evidence=ev, z=parent.z)
        out = self.roles.reviser.revise(rctx)
        self._count(out)
        if out.value is None:
            self.log.emit("revision", approved=False, problems=[out.error], parent=parent.to_dict())
            self.stall += 1
            return
        problems = check_revision(parent, out.value)
        self.log.emit(
            "revision",
            approved=not problems,
            problems=problems,
            parent=parent.to_dict(),
            revision=out.value.to_dict(),
            transaction=self.charged,
        )
        if problems:
            self.stall += 1
            self.feedback = "revision refused: " + "; ".join(problems)
            return
        self.revisions_ok += 1
        self.pending, self.pending_parent_ev = out.value, ev
