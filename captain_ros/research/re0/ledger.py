"""The admission ledger: one JSON line per audited event, and a validating reader.

Schema ``re0-ledger/1`` (every key required; numbers are JSON numbers, ``null`` where stated):

    schema            "re0-ledger/1"
    event_id          unique id of the audited event (string)
    generation        RE-0 generation k (int >= 0)
    history_id        the audited history h-hat, e.g. "restack:17:student:t4" (string)
    task, seed        the episode's task (string) and seed (int)
    evidence          [{"source": exception|unrealized_effect|milestone_regression|other,
                        "t": int >= 1, "detail": string}, ...]   (the diagnostic's z)
    contract          {"boundary_t", "allowed_symbols", "max_segment_requests", "kappa"}
    candidates        [{"id": string, "code_sha256": string}, ...]
    pairs             [{"candidate", "xi", "teacher_return", "student_return"}, ...]
    method            betting | hoeffding;  candidates_mode  fresh | reused
    alpha             this test's share of the generation's alpha (0 < alpha < 1)
    eps               admission threshold (RE-0: 0)
    return_bound      R_bar
    delta_hat         mean paired difference over ALL candidates and draws (null if invalid)
    radius            Hoeffding radius b, or null for betting
    lcb, ucb          confidence bounds (null if invalid)
    log_e_value       log e-value for H0: Delta <= eps (betting), or null
    looks             pair counts M at which the evidence was looked at
    verdict           admitted | rejected | insufficient | invalid
    valid, valid_reason   the Valid predicate (snapshot identity, contract support) and why not
    rollouts_spent    rollouts this event cost (teacher arms + student arms)

The reader re-derives what can be re-derived (Delta-hat from the pairs, the verdict from the LCB
and the Valid predicate, the rollouts from the pairs) and rejects lines that disagree, so a
ledger that post-selected a best candidate, or admitted below the threshold, fails to load.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from captain_ros.learn.errors import LedgerError
from captain_ros.research.re0.contracts import RepairContract
from captain_ros.research.re0.verify import CANDIDATE_MODES, METHODS, VERDICTS, Verification

SCHEMA = "re0-ledger/1"
EVIDENCE_SOURCES = ("exception", "unrealized_effect", "milestone_regression", "other")
_NUM = (int, float)


def _num(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def ledger_entry(
    *,
    event_id: str,
    generation: int,
    history_id: str,
    task: str,
    seed: int,
    evidence: Sequence[Mapping[str, Any]],
    contract: RepairContract,
    candidates: Sequence[Mapping[str, str]],
    verification: Verification,
    return_bound: float,
    eps: float = 0.0,
) -> dict[str, Any]:
    """One ledger line (a dict) from a verification; validated before it is returned."""
    v = verification
    entry = {
        "schema": SCHEMA,
        "event_id": event_id,
        "generation": generation,
        "history_id": history_id,
        "task": task,
        "seed": seed,
        "evidence": [dict(e) for e in evidence],
        "contract": contract.to_dict(),
        "candidates": [dict(c) for c in candidates],
        "pairs": [
            {
                "candidate": d.candidate,
                "xi": d.xi,
                "teacher_return": d.teacher_return,
                "student_return": d.student_return,
            }
            for d in v.draws
        ],
        "method": v.method,
        "candidates_mode": v.candidates_mode,
        "alpha": v.alpha,
        "eps": eps,
        "return_bound": return_bound,
        "delta_hat": _num(v.delta_hat),
        "radius": _num(v.radius) if v.radius is not None else None,
        "lcb": _num(v.lcb),
        "ucb": _num(v.ucb),
        "log_e_value": _num(v.log_e_value) if v.log_e_value is not None else None,
        "looks": list(v.looks),
        "verdict": v.verdict,
        "valid": v.valid,
        "valid_reason": v.valid_reason,
        "rollouts_spent": v.rollouts_spent,
    }
    validate_entry(entry)
    return entry


def _fail(where: str, msg: str) -> LedgerError:
    return LedgerError(f"{where}: {msg}")


def _need(
    e: Mapping[str, Any],
    key: str,
    types: type | tuple[type, ...],
    where: str,
    nullable: bool = False,
) -> Any:
    if key not in e:
        raise _fail(where, f"missing field {key!r}")
    val = e[key]
    if val is None and nullable:
        return None
    if isinstance(val, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise _fail(where, f"field {key!r} must be {types}, got a bool")
    if not isinstance(val, types):
        raise _fail(where, f"field {key!r} must be {types}, got {type(val).__name__}")
    return val


def validate_entry(e: Mapping[str, Any], where: str = "ledger entry") -> None:
    """Raise :class:`LedgerError` unless ``e`` follows schema re0-ledger/1 and is consistent."""
    if not isinstance(e, Mapping):
        raise _fail(where, "an entry must be a JSON object")
    if e.get("schema") != SCHEMA:
        raise _fail(where, f"schema must be {SCHEMA!r}, got {e.get('schema')!r}")
    for key in ("event_id", "history_id", "task", "valid_reason"):
        _need(e, key, str, where)
    for key in ("generation", "seed", "rollouts_spent"):
        if _need(e, key, int, where) < 0:
            raise _fail(where, f"{key} must be >= 0")
    if _need(e, "method", str, where) not in METHODS:
        raise _fail(where, f"method must be one of {METHODS}")
    if _need(e, "candidates_mode", str, where) not in CANDIDATE_MODES:
        raise _fail(where, f"candidates_mode must be one of {CANDIDATE_MODES}")
    verdict = _need(e, "verdict", str, where)
    if verdict not in VERDICTS:
        raise _fail(where, f"verdict must be one of {VERDICTS}, got {verdict!r}")
    valid = _need(e, "valid", bool, where)
    alpha = _need(e, "alpha", _NUM, where)
    if not 0 < alpha < 1:
        raise _fail(where, "alpha must be in (0, 1)")
    eps, rb = _need(e, "eps", _NUM, where), _need(e, "return_bound", _NUM, where)
    if not rb > 0:
        raise _fail(where, "return_bound must be > 0")
    for ev in _need(e, "evidence", list, where):
        if (
            not isinstance(ev, Mapping)
            or ev.get("source") not in EVIDENCE_SOURCES
            or not isinstance(ev.get("t"), int)
            or ev["t"] < 1
            or not isinstance(ev.get("detail"), str)
        ):
            raise _fail(where, f"evidence items need source in {EVIDENCE_SOURCES}, t >= 1, detail")
    c = _need(e, "contract", Mapping, where)
    try:
        RepairContract(
            boundary_t=c["boundary_t"],
            allowed_symbols=tuple(c["allowed_symbols"]),
            max_segment_requests=c["max_segment_requests"],
            kappa=c["kappa"],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise _fail(where, f"bad contract: {exc}") from exc
    cand_ids = []
    for cd in _need(e, "candidates", list, where):
        if (
            not isinstance(cd, Mapping)
            or not isinstance(cd.get("id"), str)
            or not isinstance(cd.get("code_sha256"), str)
        ):
            raise _fail(where, "candidates need string id and code_sha256")
        cand_ids.append(cd["id"])
    pairs = _need(e, "pairs", list, where)
    diffs, xis = [], set()
    for p in pairs:
        if (
            not isinstance(p, Mapping)
            or p.get("candidate") not in cand_ids
            or not isinstance(p.get("xi"), int)
            or not all(
                isinstance(p.get(k), _NUM) and math.isfinite(p[k])
                for k in ("teacher_return", "student_return")
            )
        ):
            raise _fail(where, "pairs need a listed candidate, int xi and finite returns")
        d = p["teacher_return"] - p["student_return"]
        if abs(d) > rb * (1 + 1e-9):
            raise _fail(where, f"a paired difference {d} exceeds return_bound {rb}")
        diffs.append((p["xi"], d))
        xis.add(p["xi"])
    _need(e, "looks", list, where)
    if not valid and verdict != "invalid":
        raise _fail(where, "an event failing the Valid predicate must have verdict 'invalid'")
    if verdict == "invalid":
        return
    if not pairs:
        raise _fail(where, "a verified event needs paired returns")
    per_xi: dict[int, list[float]] = {}
    for xi, d in diffs:
        per_xi.setdefault(xi, []).append(d)
    mean = math.fsum(math.fsum(v) / len(v) for v in per_xi.values()) / len(per_xi)
    dh = _need(e, "delta_hat", _NUM, where)
    if abs(dh - mean) > 1e-9 * max(1.0, abs(mean)):
        raise _fail(
            where,
            f"delta_hat {dh} is not the mean over all candidates and draws "
            f"({mean}); candidates must not be post-selected",
        )
    lcb, ucb = _need(e, "lcb", _NUM, where), _need(e, "ucb", _NUM, where)
    if lcb > ucb:
        raise _fail(where, "lcb exceeds ucb")
    expected = "admitted" if lcb > eps else "rejected" if ucb <= eps else "insufficient"
    if verdict != expected:
        raise _fail(
            where,
            f"verdict {verdict!r} disagrees with lcb {lcb} / ucb {ucb} vs eps "
            f"{eps} (expected {expected!r})",
        )
    if e["method"] == "hoeffding":
        r = _need(e, "radius", _NUM, where)
        if abs((dh - r) - lcb) > 1e-9:
            raise _fail(where, "hoeffding lcb must equal delta_hat - radius")
    if e["rollouts_spent"] < len(pairs) + len(xis):
        raise _fail(
            where,
            f"rollouts_spent {e['rollouts_spent']} is below the "
            f"{len(pairs) + len(xis)} rollouts the pairs need",
        )


class LedgerWriter:
    """Appends validated entries to a JSONL ledger (one line each, flushed)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def append(self, entry: Mapping[str, Any]) -> None:
        validate_entry(entry)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, allow_nan=False, sort_keys=True) + "\n")


def iter_ledger(path: str | Path) -> Iterator[dict[str, Any]]:
    """Entries of a ledger, each validated; a bad line raises naming its line number."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise LedgerError(f"cannot read ledger {p}: {exc.strerror or exc}") from exc
    seen: set[str] = set()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{p}:{i}"
        try:
            e = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _fail(where, f"not JSON ({exc.msg})") from exc
        validate_entry(e, where)
        if e["event_id"] in seen:
            raise _fail(where, f"duplicate event_id {e['event_id']!r}")
        seen.add(e["event_id"])
        yield e


def read_ledger(path: str | Path) -> list[dict[str, Any]]:
    """All entries of a ledger (validated)."""
    return list(iter_ledger(path))
