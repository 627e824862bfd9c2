"""Run events as receipts: what an operator (or a bag) sees of a CoEvolve run.

One receipt per dispatched transaction (the verifier's decision, its evidence and the committed
coordination), per rollback (the restored checkpoint and its verified digest), per typed revision,
per refusal before dispatch, and one at the end (the termination label). Failure categories map
onto :class:`~captain_ros.core.result.FailureCategory`; the verifier's exact failure type is in the
message and the diagnostics.
"""

from __future__ import annotations

from typing import Any

from captain_ros.core.result import FailureCategory, Result

_LEVEL = {
    "contact": FailureCategory.COLLISION,
    "drop": FailureCategory.PRECONDITION,
    "support": FailureCategory.PRECONDITION,
    "stability": FailureCategory.PRECONDITION,
    "robot": FailureCategory.PRECONDITION,
    "phase": FailureCategory.PRECONDITION,
    "progress": FailureCategory.PRECONDITION,
}


def event_result(ev: dict[str, Any]) -> tuple[str, Result] | None:
    """``(capability, Result)`` of a run event, or ``None`` for events without a receipt."""
    t = ev.get("type")
    if t == "transaction":
        e = ev["evidence"]
        z = ev["z"]
        text = (
            f"T{ev['transaction']} {z['primitive']} ({z['objective']['kind']}, {z['mode']}): "
            + e["summary"]
        )
        value = {
            "transaction": ev["transaction"],
            "checkpoint": ev["checkpoint"],
            "z": z,
            "theta": ev["theta"],
            "certified": ev.get("certified", []),
            "fingerprint": ev["fingerprint"],
        }
        diag = {
            "checks": e["checks"],
            "failure_type": e["failure_type"],
            "culprit": e["culprit"],
            "measurements": e["measurements"],
        }
        if ev["accepted"]:
            return "coevolve.transaction", Result.ok(
                e["summary"], value, executed=True, receipt=text, diagnostics=diag
            )
        return "coevolve.transaction", Result.fail(
            _LEVEL.get(e["failure_level"], FailureCategory.PRECONDITION),
            e["summary"],
            executed=True,
            value=value,
            receipt=text,
            diagnostics=diag,
        )
    if t == "rollback":
        msg = f"restored {ev['checkpoint']} after transaction {ev['transaction']}; digest {ev['digest']} verified"
        return "coevolve.rollback", Result.ok(
            msg,
            {"checkpoint": ev["checkpoint"], "digest": ev["digest"]},
            executed=True,
            receipt=msg,
        )
    if t == "revision":
        rev = ev.get("revision") or {}
        msg = f"typed revision {rev.get('scope', '-')}: {rev.get('rationale', '')}"
        if ev["approved"]:
            return "coevolve.revision", Result.ok(msg, rev, receipt=msg)
        return "coevolve.revision", Result.fail(
            FailureCategory.INVALID_ARGUMENT,
            msg + " refused: " + "; ".join(ev.get("problems") or []),
            value=rev,
            receipt=msg,
        )
    if t == "prevalidation":
        msg = f"refused before dispatch ({ev['stage']}): {ev['reason']}"
        return "coevolve.prevalidation", Result.fail(
            FailureCategory.INVALID_ARGUMENT, msg[:600], receipt=msg
        )
    if t == "end":
        msg = f"run ended: {ev['label']}"
        return "coevolve.end", Result.ok(msg, ev.get("outcome"), receipt=msg)
    return None
