"""``report.html`` of a CoEvolve run: one self-contained page from the run folder.

Shows the outcome and configuration, the corridor with the payload's path over the trusted
checkpoints (SVG), the milestones with their first-attainment transaction, the final plan, and a
timeline of every transaction (coordination fields, effective arguments, accept/reject with the
verifier's evidence and failed checks), the refusals before dispatch, the rollbacks with their
verified digests, the typed revisions (scope, parent and child, approval) and the memory hits and
promotions. Everything from the run log is HTML-escaped (model output is untrusted text).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from captain_ros.backends.humanoid.layouts import get_layout
from captain_ros.core.episode_folder import EpisodeFiles, read_jsonl
from captain_ros.research.coevolve.records import RUN_LOG

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1150px;color:#222}
h1{font-size:1.4em} h2{font-size:1.1em;border-bottom:1px solid #ccc;padding-bottom:.2em}
.ok{color:#1a7f37;font-weight:600} .bad{color:#c62828;font-weight:600} .meta{color:#666;font-size:.85em}
table{border-collapse:collapse;font-size:.85em} td,th{border-bottom:1px solid #eee;padding:.2em .5em;
vertical-align:top;text-align:left} pre{background:#f6f8fa;padding:.4em;margin:.2em 0;white-space:pre-wrap;
font-size:.8em} .rev{background:#fff4e5} .pre{background:#fdecea} .rb{background:#eef3fb}
"""


def _e(v: Any) -> str:
    return html.escape("" if v is None else str(v))


def _events(folder: Path) -> list[dict[str, Any]]:
    return read_jsonl(folder / RUN_LOG, lenient=True)


def _svg(layout_name: str, points: list[tuple[float, float, bool]]) -> str:
    lay = get_layout(layout_name)
    walls = lay.wall_segments()
    xs = [float(c) for w in walls for p in w for c in p[:1]]
    ys = [float(p[1]) for w in walls for p in w]
    x0, x1, y0, y1 = min(xs) - 0.3, max(xs) + 0.3, min(ys) - 0.3, max(ys) + 0.3
    scale = 560.0 / max(x1 - x0, y1 - y0)
    w, h = (x1 - x0) * scale, (y1 - y0) * scale

    def tx(x: float, y: float) -> str:
        return f"{(x - x0) * scale:.1f},{(y1 - y) * scale:.1f}"

    parts = [
        f'<svg width="{w:.0f}" height="{h:.0f}" style="border:1px solid #ccc;background:#fafafa">'
    ]
    for a, b in walls:
        (ax, ay), (bx, by) = tx(*a).split(","), tx(*b).split(",")
        parts.append(
            f'<line x1="{ax}" y1="{ay}" x2="{bx}" y2="{by}" stroke="#888" stroke-width="3"/>'
        )
    route = " ".join(tx(*p) for p in lay.waypoints)
    parts.append(f'<polyline points="{route}" fill="none" stroke="#bbb" stroke-dasharray="4 4"/>')
    half = lay.width_m / 2
    for g in lay.gates:
        c, n = lay.gate_line(g)
        left = (c[0] - n[1] * half, c[1] + n[0] * half)
        right = (c[0] + n[1] * half, c[1] - n[0] * half)
        (ax, ay), (bx, by) = tx(*left).split(","), tx(*right).split(",")
        parts.append(
            f'<line x1="{ax}" y1="{ay}" x2="{bx}" y2="{by}" stroke="#3b82f6" stroke-width="1.5"/>'
            f'<text x="{ax}" y="{ay}" font-size="10" fill="#3b82f6">{_e(g.name)}</text>'
        )
    t = lay.target_xy
    cx, cy = tx(t[0], t[1]).split(",")
    parts.append(
        f'<circle cx="{cx}" cy="{cy}" r="{0.30 * scale:.1f}" fill="#22c55e33" stroke="#22c55e"/>'
    )
    for x, y, ok in points:
        px, py = tx(x, y).split(",")
        parts.append(f'<circle cx="{px}" cy="{py}" r="3" fill="{"#1a7f37" if ok else "#c62828"}"/>')
    parts.append("</svg>")
    return "".join(parts)


def render(folder: str | Path) -> str:
    """The report page of the run in ``folder``."""
    f = Path(folder)
    evs = _events(f)
    files = EpisodeFiles(f)
    summary = files.read_summary() if files.has_summary() else {}
    start = next((e for e in evs if e["type"] == "start"), {})
    cfg = summary.get("config") or start.get("config") or {}
    out = summary.get("outcome") or {}
    label = out.get("termination", "?")
    body = [
        f"<h1>CoEvolve run: layout {_e(cfg.get('layout'))}, seed {_e(cfg.get('seed'))}, roles "
        f"{_e(summary.get('roles', start.get('roles')))}</h1>",
        f"<p class='{'ok' if label == 'success' else 'bad'}'>termination: {_e(label)}</p>",
        "<p class='meta'>"
        + _e(
            f"accepted {out.get('accepted')}/{out.get('charged')} charged transactions; "
            f"milestones {out.get('milestones_final')}/{out.get('milestones_total')} at the "
            f"final trusted checkpoint; rollbacks {summary.get('rollbacks')}; revisions "
            f"{summary.get('revisions_approved')}/{summary.get('revisions')} approved; drops "
            f"{summary.get('drops')}; model calls {summary.get('model_calls')}; wall "
            f"{summary.get('wall_s')} s; simulated {summary.get('sim_s')} s"
        )
        + "</p>",
        "<pre>" + _e(json.dumps(cfg)) + "</pre>",
    ]
    tx = [e for e in evs if e["type"] == "transaction"]
    pts = [
        (
            float(e["evidence"]["measurements"].get("payload_xy", [0, 0])[0]),
            float(e["evidence"]["measurements"].get("payload_xy", [0, 0])[1]),
            bool(e["accepted"]),
        )
        for e in tx
        if "payload_xy" in e["evidence"].get("measurements", {})
    ]
    if cfg.get("layout"):
        body += [
            "<h2>Corridor and payload after each transaction</h2>",
            _svg(cfg["layout"], pts),
            "<p class='meta'>green: accepted (trusted checkpoint); red: rejected (restored)</p>",
        ]
    names = summary.get("milestones") or start.get("milestones") or []
    firsts = out.get("first_attainment") or [None] * len(names)
    body.append(
        "<h2>Milestones</h2><table><tr><th>milestone</th><th>first certified at transaction</th></tr>"
        + "".join(
            f"<tr><td>{_e(n)}</td><td>{_e(t if t is not None else 'never')}</td></tr>"
            for n, t in zip(names, firsts, strict=False)
        )
        + "</table>"
    )
    plan: list[dict[str, Any]] = next((e["plan"] for e in reversed(evs) if e.get("plan")), [])
    body.append(
        "<h2>Plan</h2><table><tr><th>phase</th><th>completion evidence</th><th>status</th></tr>"
        + "".join(
            f"<tr><td>{_e(p['name'])}</td><td>{_e(p['evidence'])}</td><td>{_e(p['status'])}</td></tr>"
            for p in plan
        )
        + "</table>"
    )
    body.append(
        "<h2>Timeline</h2><table><tr><th>#</th><th>phase</th><th>coordination</th><th>arguments"
        "</th><th>verifier</th></tr>"
    )
    for e in evs:
        body.append(_row(e))
    body.append("</table>")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>CoEvolve run</title><style>{_CSS}"
        f"</style></head><body>{''.join(body)}</body></html>"
    )


def _row(e: dict[str, Any]) -> str:
    t = e["type"]
    if t == "transaction":
        z = e["z"]
        ev = e["evidence"]
        failed = [c for c in ev["checks"] if not c["ok"]]
        mark = (
            "<span class='ok'>ACCEPTED</span>"
            if e["accepted"]
            else "<span class='bad'>REJECTED</span>"
        )
        mem = "; ".join(f"{h['store']}: {', '.join(h['ids'])}" for h in e.get("memory_hits", []))
        return (
            f"<tr><td>{e['transaction']}</td><td>{_e(e['phase'])}<br><span class='meta'>"
            f"{_e(e.get('situation'))} {_e(e['checkpoint'])}</span></td><td>{_e(z['primitive'])}<br>"
            f"{_e(z['objective'])}<br>{_e(z['mode'])} {_e(z['roles'])}<br><span class='meta'>"
            f"{_e(e.get('orchestrator_rule'))}</span></td><td><pre>{_e(json.dumps(e['theta']))}</pre>"
            f"<span class='meta'>memory hits: {_e(mem or 'none')}; promoted: "
            f"{_e(', '.join(e.get('promoted') or []) or 'none')}</span></td><td>{mark} {_e(ev['summary'])}"
            + "".join(
                f"<br>- {_e(c['name'])}: {_e(c['value'])} (limit {_e(c['limit'])}) {_e(c['detail'])}"
                for c in failed
            )
            + "</td></tr>"
        )
    if t == "prevalidation":
        return (
            f"<tr class='pre'><td></td><td colspan='4'>refused before dispatch ({_e(e['stage'])}, no "
            f"transaction charged): {_e(e['reason'])}</td></tr>"
        )
    if t == "rollback":
        return (
            f"<tr class='rb'><td></td><td colspan='4'>rollback to {_e(e['checkpoint'])}: restoration "
            f"verified (digest {_e(e['digest'])}); the budget is not refunded</td></tr>"
        )
    if t == "revision":
        rev = e.get("revision") or {}
        child = (rev.get("child") or {}).get("z", {})
        state = "approved" if e["approved"] else "refused: " + "; ".join(e.get("problems") or [])
        return (
            f"<tr class='rev'><td></td><td colspan='4'>typed revision <b>{_e(rev.get('scope', '-'))}</b> "
            f"({_e(state)}): {_e(rev.get('rationale'))}<br><span class='meta'>child: "
            f"{_e(child.get('primitive'))} {_e(child.get('objective'))} {_e(child.get('mode'))} "
            f"{_e(child.get('roles'))} theta {_e(json.dumps((rev.get('child') or {}).get('theta')))}; "
            f"changes {_e(rev.get('changes'))}</span></td></tr>"
        )
    if t in ("restoration_failed", "unresolved"):
        return f"<tr class='pre'><td></td><td colspan='4'>{_e(t)}: {_e(e.get('reason'))}</td></tr>"
    return ""


def write_report(folder: str | Path) -> Path:
    """Write ``report.html`` into ``folder`` and return its path."""
    p = EpisodeFiles.of(folder).report
    p.write_text(render(folder))
    return p
