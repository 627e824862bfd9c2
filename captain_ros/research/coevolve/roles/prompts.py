"""Prompts and output schemas of the model-backed roles.

Each role is one system prompt (the task, the role's job, the output schema) and one user message
(the serialised context: measurements and route references, the plan, retrieved memory, the last
evidence, the approved revision child that constrains the answer, and why the previous answer was
refused). The roles share one backbone and differ only by prompt and schema, as in the paper.
"""

from __future__ import annotations

import json
from typing import Any

from captain_ros.research.coevolve.roles.base import RoleContext
from captain_ros.research.coevolve.skills import MODES, PRIMITIVES, ROLES, catalog_text
from captain_ros.research.coevolve.strategy import OBJECTIVE_KINDS, SCOPES

TASK = (
    "Two humanoid robots, robot_a and robot_b, face each other and carry one free rigid payload "
    "on their palms (torque-limited posture regulation, not a rigid grasp: unsynchronised motion "
    "tilts or drops it) through a corridor to a target pedestal. The formation axis "
    "robot_a -> robot_b is perpendicular to the travel direction (robot_b is on the left of "
    "travel), so transport is sideways stepping and a corner needs a pivot. Each physical "
    "transaction is one joint command; a verifier accepts or rejects it from measurements and a "
    "rejection restores the last accepted checkpoint. Angles are radians, lengths metres, world "
    "frame x/y with yaw counter-clockwise."
)
COORDINATION_SCHEMA = {
    "primitive": f"one of {list(PRIMITIVES)}",
    "objective": {
        "kind": f"one of {list(OBJECTIVE_KINDS)}",
        "target": "gate name, 'segment_<k>', 'target', 'formation' or ''",
    },
    "mode": f"one of {list(MODES)}",
    "roles": {"robot_a": f"one of {list(ROLES)}", "robot_b": "same vocabulary"},
    "intent": "formation intent (short text)",
    "evidence": "completion evidence you expect",
    "constraints": "execution constraints (short text)",
}
ORCHESTRATOR = (
    "You are the Orchestrator. Commit the coordination of the next subtask: which primitive, which "
    "semantic objective, which coordination mode and the temporary role of each robot. Numbers are "
    "chosen by the Coder, not by you. If an approved revision child is given, commit exactly its "
    "primitive, objective, mode and roles. Primitives admit: linear transport, placement, release, "
    "retreat and initialization: synchronous with roles peer/peer; pivot: asymmetric with "
    "inner_support + outer_mover, or synchronous with co_rotator + co_rotator; alignment: "
    "asymmetric with reference + corrector.\nReply with ONE JSON object, no prose:\n"
    + json.dumps(COORDINATION_SCHEMA, indent=1)
)
CODER = (
    "You are the Coder. Implement the committed coordination as two robot programs. Each program is "
    "Python for one robot: optional assignments of arithmetic, exactly ONE skill call on its own "
    "handle (robot_a or robot_b) with keyword arguments, then `<handle>.stop()` as the last line. "
    "No imports, loops, other calls or other names (math.<fn>, abs, min, max, round are allowed). "
    "Both programs call the committed primitive; shared arguments must be identical; pass the "
    "committed roles. If an approved parameter revision is given, use exactly its numbers.\n"
    "Skills:\n"
    + catalog_text()
    + '\nReply with ONE JSON object, no prose: {"robot_a": "<program>", "robot_b": "<program>", '
    '"note": "<short>"}'
)
REVISER = (
    "You are the Reviser. The last transaction was rejected and the state was restored. Propose a "
    "TYPED revision of the failed strategy. scope 'strategy' changes primitive and/or objective "
    "(keep mode and roles if the new primitive admits them); 'coordination' changes mode and/or "
    "roles (keep primitive and objective); 'parameter' keeps all coordination fields and gives new "
    "bounded numbers for both robots in child.theta. Change only fields inside the scope.\nReply "
    'with ONE JSON object, no prose: {"scope": one of ' + json.dumps(list(SCOPES)) + ', "child": '
    '{<coordination fields as the Orchestrator schema>, "theta": {"robot_a": {<skill '
    'arguments>}, "robot_b": {...}} (parameter scope only)}, "rationale": "<short>", '
    '"changes": ["field:direction", ...]}'
)
SYSTEM = {"orchestrator": ORCHESTRATOR, "coder": CODER, "reviser": REVISER}


def context_message(role: str, ctx: RoleContext) -> str:
    """The user message of ``role`` for ``ctx`` (JSON, with a one-line lead)."""
    body: dict[str, Any] = {
        "transaction": ctx.transaction,
        "budget": ctx.budget,
        "active_phase": ctx.phase.to_dict(),
        "plan": [{"name": p.name, "status": p.status} for p in ctx.plan.phases],
        "observation": ctx.observation.data,
        "retrieval": {"situation": ctx.situation, "turn": ctx.turn},
        "strategy_records": [r.to_prompt() for r in ctx.strategy_records],
        "recent_failures": list(ctx.recent_failures),
        "history": list(ctx.history),
    }
    if ctx.evidence is not None:
        ev = ctx.evidence.to_dict()
        body["last_evidence"] = {
            k: ev[k]
            for k in (
                "accepted",
                "failure_type",
                "failure_level",
                "culprit",
                "summary",
                "measurements",
            )
        }
        body["last_evidence"]["failed_checks"] = [c for c in ev["checks"] if not c["ok"]]
    if ctx.constraint is not None:
        body["approved_revision_child"] = ctx.constraint.to_dict()
    if ctx.reflection:
        body["reflection_on_last_failure"] = ctx.reflection
    if ctx.feedback:
        body["previous_answer_refused_because"] = ctx.feedback
    if role in ("coder", "reviser") and ctx.z is not None:
        body["committed_coordination"] = ctx.z.to_dict()
        body["exemplars"] = [e.to_prompt() for e in ctx.exemplars]
    if role == "reviser" and ctx.parent is not None:
        body["failed_strategy"] = ctx.parent.to_dict()
    lead = {
        "orchestrator": "Commit the next coordination.",
        "coder": "Write both robot programs.",
        "reviser": "Propose a typed revision.",
    }[role]
    return lead + "\n" + json.dumps(body, default=str)


def extract_json(text: str) -> Any:
    """The first JSON object in ``text`` (code fences and prose around it are ignored).

    Raises:
        ValueError: No JSON object could be decoded.
    """
    dec = json.JSONDecoder()
    i = text.find("{")
    while i != -1:
        try:
            obj, _ = dec.raw_decode(text[i:])
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            return obj
        i = text.find("{", i + 1)
    raise ValueError("the reply contains no JSON object")
