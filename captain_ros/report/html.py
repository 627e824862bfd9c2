"""``report.html``: one self-contained page per episode, built from its folder.

Read top to bottom as an operator reads it: the episode's result, a one-screen overview of the
requests (outcome, physical actions, failed calls, gate decisions; :mod:`.overview`), TASK.md
folded away, then per request the reasoning, each code cell, its output and receipts, the
attached images (relative links into the episode folder, so the page opens offline), a plot of
the request's motions (tool path, height, force; :mod:`.plots`), gate decisions and the time
split. Everything from the folder is HTML-escaped: policy output and logs are untrusted text.
"""

from __future__ import annotations

import html
import json
import logging
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.report.overview import render_overview
from captain_ros.report.plots import episode_has_traces, motion_traces, render_motion_svg
from captain_ros.report.record import EpisodeFolder

log = logging.getLogger(__name__)

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1100px;color:#222}
h1{font-size:1.4em} h2{font-size:1.1em;border-bottom:1px solid #ccc;padding-bottom:.2em}
.ok{color:#1a7f37;font-weight:600} .bad{color:#c62828;font-weight:600} .warn{color:#9a6700}
table.s td{padding:.15em .8em .15em 0} pre{background:#f6f8fa;padding:.6em;overflow-x:auto;
white-space:pre-wrap;font-size:.85em} pre.code{background:#eef3fb} .reason{font-style:italic;
white-space:pre-wrap} .req{margin-bottom:1.6em} img{max-width:256px;margin:.2em;border:1px solid #ccc}
.meta{color:#666;font-size:.85em} .gate{background:#fff4e5;padding:.3em}
div.ov{max-height:60vh;overflow-y:auto} table.ov{border-collapse:collapse;font-size:.85em;width:100%}
table.ov th,table.ov td{border-bottom:1px solid #eee;padding:.1em .5em;text-align:left;vertical-align:top}
details.task summary{cursor:pointer;font-weight:600} .plot svg{max-width:100%;height:auto}
"""


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text))


def _img(ref: Any) -> str:
    if not isinstance(ref, dict):
        return ""
    src = _e(ref.get("path", ""))
    cap = _e(" ".join(str(ref.get(k, "")) for k in ("camera", "handle")).strip())
    return f'<a href="{src}"><img src="{src}" alt="{cap}" title="{cap}"></a>'


def _flag(value: Any) -> str:
    if value is None:
        return "unknown"
    return f"<span class='{'ok' if value else 'bad'}'>{_e(bool(value))}</span>"


def _seconds(ep: EpisodeFolder) -> str:
    """Wall time split into model, robot calls and the rest (computed here from the three
    measured totals, so both ``harness_s`` definitions of the front ends read the same)."""
    wall, model, backend = ep.number("wall_s"), ep.number("model_s"), ep.number("backend_s")
    if wall is None:
        return "unknown"
    text = f"{wall:.1f} s"
    if model is not None and backend is not None:
        text += (
            f" (model {model:.1f} s, robot calls {backend:.1f} s, session and harness "
            f"{max(0.0, wall - model - backend):.1f} s)"
        )
    return _e(text)


def _summary_table(ep: EpisodeFolder) -> str:
    unknown = "unknown (not recorded)"
    gate = ep.field("gate_rejections")
    rows = [
        ("outcome", _e(ep.field("outcome", "unknown"))),
        ("host success", _flag(ep.field("host_success"))),
        ("strict success", _flag(ep.field("strict_success"))),
        ("finish() accepted", _flag(ep.field("finished"))),
        ("policy", _e(ep.field("policy", unknown))),
        ("backend", _e(ep.field("backend", unknown))),
        ("requests", _e(ep.field("requests", len(ep.requests)))),
        ("physical actions", _e(ep.field("physical_actions", "unknown"))),
        ("gate rejections", _e("unknown" if gate is None else gate)),
        ("end reason", _e(ep.field("end_reason", "unknown"))),
        ("wall time", _seconds(ep)),
    ]
    return (
        "<table class='s'>"
        + "".join(f"<tr><td>{_e(k)}</td><td>{v}</td></tr>" for k, v in rows)
        + "</table>"
    )


def _task(ep: EpisodeFolder) -> str:
    md = str(ep.start.get("task_md") or "")
    task_md = EpisodeFiles(ep.root).task_md
    if not md and task_md.exists():
        md = task_md.read_text(errors="replace")
    out = ""
    if md:
        out += (
            f"<details class='task'><summary>TASK.md ({len(md.splitlines())} lines, as the "
            f"policy saw it)</summary><pre>{_e(md)}</pre></details>"
        )
    imgs = ep.start.get("initial_images") or []
    if isinstance(imgs, list) and imgs:
        out += "<div>" + "".join(_img(r) for r in imgs) + "</div>"
    return out


def _plot(req: dict[str, Any], use_reads: bool) -> str:
    traces = motion_traces(req, use_reads)
    if not traces:
        return ""
    try:
        svg = render_motion_svg(traces)
    except Exception:  # noqa: BLE001 - a plot problem never loses the page
        log.exception("motion plot of request %s failed", req.get("t"))
        return "<p class='meta'>(motion plot failed; see the log)</p>"
    return f"<div class='plot'>{svg}</div>"


def _request(req: dict[str, Any], use_reads: bool) -> str:
    t = _e(req.get("t"))
    parts = [
        f"<div class='req' id='req-{t}'><h2>Request {t}</h2>"
        f"<div class='meta'>model {float(req.get('model_s') or 0):.2f} s, backend "
        f"{float(req.get('backend_s') or 0):.2f} s, harness "
        f"{float(req.get('harness_s') or 0):.3f} s</div>"
    ]
    if req.get("reasoning"):
        parts.append(f"<p class='reason'>{_e(req['reasoning'])}</p>")
    for call in req.get("calls") or []:
        if not isinstance(call, dict):
            continue
        parts.append(f"<pre class='code'>{_e(call.get('code', ''))}</pre>")
        parts.append(f"<pre>{_e(call.get('output', ''))}</pre>")
        imgs = call.get("images") or []
        if isinstance(imgs, list) and imgs:
            parts.append("<div>" + "".join(_img(r) for r in imgs) + "</div>")
    parts.append(_plot(req, use_reads))
    for m in req.get("malformed") or []:
        parts.append(f"<p class='bad'>malformed: {_e(m)}</p>")
    for g in req.get("gate") or []:
        parts.append(f"<p class='gate'>gate: {_e(json.dumps(g, default=str))}</p>")
    if req.get("notice"):
        parts.append(f"<p class='meta'>{_e(req['notice'])}</p>")
    parts.append("</div>")
    return "".join(parts)


def render_report(episode_dir: str | Path) -> str:
    """The HTML text of an episode folder's report."""
    ep = EpisodeFolder.load(episode_dir)
    title = _e(ep.title)
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{_CSS}</style></head><body><h1>Episode {title}</h1>",
        _summary_table(ep),
        render_overview(ep.requests),
        _task(ep),
    ]
    use_reads = not episode_has_traces(ep.requests)
    parts += [_request(r, use_reads) for r in ep.requests]
    parts.append("</body></html>\n")
    return "".join(parts)


def write_report(episode_dir: str | Path) -> Path:
    """Write ``report.html`` into the episode folder and return its path."""
    out = EpisodeFiles.of(episode_dir).report
    out.write_text(render_report(episode_dir))
    return out
