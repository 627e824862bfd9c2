"""Retrieval keys and the promotion rules that turn executed transactions into memory entries.

Situation: the active phase kind, refined for traverse phases by the route (``traverse_corner``
when a corner whose turn is still ahead lies within 1.6 m of the payload, else
``traverse_straight``); turn: ``left``/``right`` at a corner, else ``none``.

Promotion (only after physical execution):

* accepted -> an action exemplar (code and effective arguments) keyed by primitive, objective kind,
  mode, role rule and situation; a positive strategy record with the coordination principle; and,
  when the accepted strategy was the approved child of a typed revision, a repair record whose
  failure context is the parent's failure and whose repair direction is the revision's changes. Its
  claim ("this repair resolves that failure here") agrees with the outcome only because the
  verifier accepted the child; a child that is rejected is not promoted as a repair.
* rejected -> a counterexample: the failed principle, the failure pattern, the situation.
"""

from __future__ import annotations

from captain_ros.backends.humanoid.types import wrap_angle
from captain_ros.research.coevolve.memory import ActionExemplar, Memory, StrategyRecord
from captain_ros.research.coevolve.observation import Observation
from captain_ros.research.coevolve.plan import Phase
from captain_ros.research.coevolve.strategy import Coordination, Revision
from captain_ros.research.coevolve.verifier import Evidence


def situation_of(phase: Phase, obs: Observation) -> tuple[str, str]:
    """Retrieval keys ``(situation, turn)`` of the active phase at ``obs``."""
    if phase.kind != "traverse" and phase.kind != "enter_target":
        return phase.kind, "none"
    corner = obs.route["next_corner"]
    if corner is not None and corner["remaining_m"] <= 1.6:
        err = wrap_angle(corner["next_heading_rad"] - obs.formation["travel_heading_rad"])
        if abs(err) > 0.5:
            return f"{phase.kind}_corner", "left" if corner["turn_rad"] > 0 else "right"
    return f"{phase.kind}_straight", "none"


def role_rule_of(z: Coordination, turn: str) -> str:
    """The abstract role rule of ``z`` (no robot identities, no numbers)."""
    if z.primitive == "coordinated_pivot":
        if z.mode == "synchronous":
            return "co_rotate"
        inner = "robot_a" if z.roles[0] == "inner_support" else "robot_b"
        turn_side = "robot_b" if turn == "left" else "robot_a"
        return "inner=turn_side" if inner == turn_side or turn == "none" else "inner=far_side"
    if z.primitive == "coordinated_alignment":
        return "corrector=any"
    return "peer"


def _pattern(ev: Evidence) -> str:
    culprit = (
        ev.culprit.split("(")[-1].rstrip(")") if "(" in ev.culprit else ev.culprit.split(".")[0]
    )
    word = "".join(ch if ch.isalpha() or ch == "_" else "_" for ch in culprit).strip("_")
    return f"{ev.failure_type}_by_{word}" if word else ev.failure_type


def promote_accepted(
    memory: Memory,
    z: Coordination,
    theta: dict,
    programs: dict[str, str],
    ev: Evidence,
    situation: str,
    turn: str,
    revision: Revision | None,
    parent_evidence: Evidence | None,
    source: str,
) -> list[str]:
    """Exemplar and strategy records of an accepted transaction; returns the ids written."""
    if not memory.enabled or not ev.accepted:
        return []
    rule = role_rule_of(z, turn)
    out = [
        memory.add_exemplar(
            ActionExemplar(
                "",
                z.primitive,
                z.objective.kind,
                z.mode,
                rule,
                situation,
                turn,
                dict(programs),
                {r: dict(v) for r, v in theta.items()},
                ev.summary[:200],
                sources=(source,),
            )
        ).id
    ]
    if not ev.setup_only or z.primitive == "coordinated_alignment":
        out.append(
            memory.add_strategy(
                StrategyRecord(
                    "",
                    "positive",
                    situation,
                    turn,
                    (),
                    z.primitive,
                    z.objective.kind,
                    z.mode,
                    rule,
                    sources=(source,),
                )
            ).id
        )
    if revision is not None and parent_evidence is not None and parent_evidence.failure_type:
        out.append(
            memory.add_strategy(
                StrategyRecord(
                    "",
                    "positive",
                    situation,
                    turn,
                    (parent_evidence.failure_type,),
                    z.primitive,
                    z.objective.kind,
                    z.mode,
                    rule,
                    _pattern(parent_evidence),
                    revision.scope,
                    tuple(c.replace("-", "_") for c in revision.changes),
                    sources=(source,),
                )
            ).id
        )
    return out


def promote_rejected(
    memory: Memory, z: Coordination, ev: Evidence, situation: str, turn: str, source: str
) -> list[str]:
    """A counterexample record of a rejected transaction; returns the ids written."""
    if not memory.enabled or ev.accepted:
        return []
    return [
        memory.add_strategy(
            StrategyRecord(
                "",
                "counterexample",
                situation,
                turn,
                (ev.failure_type,),
                z.primitive,
                z.objective.kind,
                z.mode,
                role_rule_of(z, turn),
                _pattern(ev),
                sources=(source,),
            )
        ).id
    ]
