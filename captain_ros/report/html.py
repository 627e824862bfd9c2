"""``report.html``: one self-contained page per episode, built from its folder.

Reads ``summary.json`` and the harness's ``trajectory.jsonl`` and shows, per request, the
reasoning, each code cell, its output and receipts, the attached images (relative links into the
episode folder, so the page opens offline), gate decisions and the time split. Everything from the
trajectory is HTML-escaped: policy output is untrusted text.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1100px;color:#222}
h1{font-size:1.4em} h2{font-size:1.1em;border-bottom:1px solid #ccc;padding-bottom:.2em}
.ok{color:#1a7f37;font-weight:600} .bad{color:#c62828;font-weight:600}
table.s td{padding:.15em .8em .15em 0} pre{background:#f6f8fa;padding:.6em;overflow-x:auto;
white-space:pre-wrap;font-size:.85em} pre.code{background:#eef3fb} .reason{font-style:italic;
white-space:pre-wrap} .req{margin-bottom:1.6em} img{max-width:256px;margin:.2em;border:1px solid #ccc}
.meta{color:#666;font-size:.85em} .gate{background:#fff4e5;padding:.3em}
"""


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def _img(ref: dict[str, Any]) -> str:
    src = _e(ref.get("path", ""))
    cap = _e(" ".join(str(ref.get(k, "")) for k in ("camera", "handle")).strip())
    return f'<a href="{src}"><img src="{src}" alt="{cap}" title="{cap}"></a>'


def render_report(episode_dir: str | Path) -> str:
    """The HTML text of an episode folder's report."""
    root = Path(episode_dir)
    summary: dict[str, Any] = {}
    if (root / "summary.json").exists():
        summary = json.loads((root / "summary.json").read_text())
    records = _read_jsonl(root / "trajectory.jsonl")
    start = next((r for r in records if r.get("type") == "episode_start"), {})
    requests = [r for r in records if r.get("type") == "request"]
    end = next((r for r in records if r.get("type") == "episode_end"), {})
    s = summary or end.get("summary", {})
    title = f"{s.get('task', start.get('task', '?'))} seed {s.get('seed', start.get('seed', '?'))}"
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
             f"<style>{_CSS}</style></head><body><h1>Episode {_e(title)}</h1>"]
    host, strict = s.get("host_success"), s.get("strict_success")
    rows = [("outcome", s.get("outcome")),
            ("host success", f"<span class='{'ok' if host else 'bad'}'>{_e(host)}</span>"),
            ("strict success", f"<span class='{'ok' if strict else 'bad'}'>{_e(strict)}</span>"),
            ("policy / backend", f"{s.get('policy', '')} / {s.get('backend', '')}"),
            ("requests", s.get("requests")), ("physical actions", s.get("physical_actions")),
            ("gate rejections", s.get("gate_rejections")),
            ("wall time", f"{float(s.get('wall_s', 0)):.1f} s (model {float(s.get('model_s', 0)):.1f} s, "
                          f"harness {float(s.get('harness_s', 0)):.1f} s of which backend "
                          f"{float(s.get('backend_s', 0)):.1f} s)")]
    parts.append("<table class='s'>" + "".join(
        f"<tr><td>{_e(k)}</td><td>{v if isinstance(v, str) and v.startswith('<span') else _e(v)}</td></tr>"
        for k, v in rows) + "</table>")
    if start:
        parts.append("<h2>Task</h2><pre>" + _e(start.get("task_md", "")) + "</pre>")
        imgs = start.get("initial_images") or []
        if imgs:
            parts.append("<div>" + "".join(_img(r) for r in imgs) + "</div>")
    for req in requests:
        parts.append(f"<div class='req'><h2>Request {_e(req.get('t'))}</h2>"
                     f"<div class='meta'>model {float(req.get('model_s') or 0):.2f} s, backend "
                     f"{float(req.get('backend_s') or 0):.2f} s, harness "
                     f"{float(req.get('harness_s') or 0):.3f} s</div>")
        if req.get("reasoning"):
            parts.append(f"<p class='reason'>{_e(req['reasoning'])}</p>")
        for call in req.get("calls") or []:
            parts.append(f"<pre class='code'>{_e(call.get('code', ''))}</pre>")
            parts.append(f"<pre>{_e(call.get('output', ''))}</pre>")
            imgs = call.get("images") or []
            if imgs:
                parts.append("<div>" + "".join(_img(r) for r in imgs) + "</div>")
        for m in req.get("malformed") or []:
            parts.append(f"<p class='bad'>malformed: {_e(m)}</p>")
        for g in req.get("gate") or []:
            parts.append(f"<p class='gate'>gate: {_e(json.dumps(g, default=str))}</p>")
        if req.get("notice"):
            parts.append(f"<p class='meta'>{_e(req['notice'])}</p>")
        parts.append("</div>")
    if not requests:
        parts.append("<p>(no requests recorded)</p>")
    parts.append("</body></html>\n")
    return "".join(parts)


def write_report(episode_dir: str | Path) -> Path:
    """Write ``report.html`` into the episode folder and return its path."""
    out = Path(episode_dir) / "report.html"
    out.write_text(render_report(episode_dir))
    return out
