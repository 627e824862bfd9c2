"""The one-screen overview of an episode's requests: outcome, physical actions, gate decisions.

One row per request, read from its ``request`` record in ``trajectory.jsonl``: what the request
ended in (finish accepted / rejected, a cell error, failed robot calls, malformed output), which
physical actions it executed (with their stop reasons), how many robot calls failed and with
which category, the completion gate's decision, and the first line of the reasoning.
"""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass
from typing import Any

from captain_ros.api.registry import PHYSICAL

REASONING_CHARS = 90


@dataclass(frozen=True)
class RequestRow:
    """One request in the overview (plain text; escaped when rendered)."""

    t: int
    outcome: str
    severity: str  # ok | warn | bad (colour of the outcome cell)
    physical: str
    physical_count: int
    calls: int
    failures: str
    gate: str
    reasoning: str


def _robot_calls(req: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        rc
        for call in req.get("calls") or []
        if isinstance(call, dict)
        for rc in call.get("robot_calls") or []
        if isinstance(rc, dict)
    ]


def _physical(calls: list[dict[str, Any]]) -> tuple[str, int]:
    """``"move_to x3 (1 contact), release"`` for the executed physical calls."""
    counts: Counter[str] = Counter()
    stops: dict[str, Counter[str]] = {}
    for rc in calls:
        name, res = str(rc.get("name", "?")), rc.get("result") or {}
        if name not in PHYSICAL or not res.get("executed"):
            continue
        counts[name] += 1
        stop = (
            (res.get("value") or {}).get("stop_reason")
            if isinstance(res.get("value"), dict)
            else None
        )
        if stop and stop != "reached":
            stops.setdefault(name, Counter())[str(stop)] += 1
    parts = []
    for name, n in counts.items():
        text = name if n == 1 else f"{name} x{n}"
        if name in stops:
            text += (
                " (" + ", ".join(f"{n_stop} {stop}" for stop, n_stop in stops[name].items()) + ")"
            )
        parts.append(text)
    return ", ".join(parts), sum(counts.values())


def _failures(calls: list[dict[str, Any]]) -> tuple[str, int]:
    bad: Counter[str] = Counter()
    for rc in calls:
        res = rc.get("result") or {}
        if not res.get("success", True):
            bad[f"{rc.get('name', '?')}: {res.get('failure_category') or 'failed'}"] += 1
    return ", ".join(k if n == 1 else f"{k} x{n}" for k, n in bad.items()), sum(bad.values())


def _gate(req: dict[str, Any]) -> str:
    out = []
    for g in req.get("gate") or []:
        if isinstance(g, dict):
            verdict = "accepted" if g.get("accepted") else "rejected"
            out.append(f"finish {verdict}: {str(g.get('reason', ''))[:80]}")
    return "; ".join(out)


def request_row(req: dict[str, Any]) -> RequestRow:
    """The overview row of one ``request`` record."""
    calls = _robot_calls(req)
    physical, n_phys = _physical(calls)
    failures, n_fail = _failures(calls)
    gate = _gate(req)
    cells = [c for c in req.get("calls") or [] if isinstance(c, dict)]
    errors = [c for c in cells if c.get("error") or c.get("timed_out") or c.get("crashed")]
    decisions = [g for g in req.get("gate") or [] if isinstance(g, dict)]
    if decisions and decisions[-1].get("accepted"):
        outcome, sev = "finish accepted", "ok"
    elif decisions:
        outcome, sev = "finish rejected", "bad"
    elif req.get("malformed"):
        outcome, sev = "malformed reply", "bad"
    elif errors:
        first = errors[0]
        kind = (
            "timed out"
            if first.get("timed_out")
            else ("crashed" if first.get("crashed") else "error")
        )
        outcome, sev = f"cell {kind}", "bad"
    elif not cells:
        outcome, sev = "no code", "warn"
    elif n_fail:
        outcome, sev = f"{n_fail}/{len(calls)} calls failed", "warn"
    else:
        outcome, sev = "ok", "ok"
    reasoning = " ".join(str(req.get("reasoning") or "").split())
    if len(reasoning) > REASONING_CHARS:
        reasoning = reasoning[: REASONING_CHARS - 3] + "..."
    try:
        t = int(req.get("t") or 0)
    except (TypeError, ValueError):
        t = 0
    return RequestRow(t, outcome, sev, physical, n_phys, len(calls), failures, gate, reasoning)


def render_overview(requests: list[dict[str, Any]]) -> str:
    """The overview table (links to each request's section), or a line when there is none."""
    if not requests:
        return "<p>(no requests recorded)</p>"
    rows = [request_row(r) for r in requests]
    n_phys = sum(r.physical_count for r in rows)
    head = (
        f"<h2 id='overview'>Overview: {len(rows)} requests, {n_phys} physical actions</h2>"
        "<div class='ov'><table class='ov'><tr><th>#</th><th>outcome</th>"
        "<th>physical actions</th><th>calls</th><th>failed calls</th><th>gate</th>"
        "<th>reasoning</th></tr>"
    )
    body = "".join(
        f"<tr><td><a href='#req-{r.t}'>{r.t}</a></td><td class='{r.severity}'>{html.escape(r.outcome)}"
        f"</td><td>{html.escape(r.physical)}</td><td>{r.calls}</td><td>{html.escape(r.failures)}</td>"
        f"<td>{html.escape(r.gate)}</td><td class='meta'>{html.escape(r.reasoning)}</td></tr>"
        for r in rows
    )
    return head + body + "</table></div>"
