"""Small inline SVG plots of the motions of one request: tool path (top view), height and force.

The samples come from the episode log: every executed sweep (``move_to`` with a pose,
``recover``) carries a thinned copy of its control-tick samples in its Result's
``diagnostics["trace"]`` (``{arm: {"t_s", "position_m", "jaw_m", "force_n"}}``, see
:func:`captain_ros.motion.trajectory.trace`); logs without traces fall back to the samples of the
policy's own ``read_motion_trajectory`` calls. Logs are untrusted: malformed traces are skipped.
The plots use matplotlib's object API (no pyplot state), text kept as SVG text.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from captain_ros.motion.limits import CONTACT_FORCE_N

MIN_SAMPLES = 3
"""Motions with fewer samples are not plotted (nothing to see) [-]."""
GAP_S = 0.05
"""Gap drawn between consecutive motions on the time axis [s]."""


@dataclass(frozen=True)
class MotionTrace:
    """Samples of one executed motion of one arm.

    Attributes:
        request: Request index ``t``; ``index``: 1-based motion number within the request.
        name / arm / stop_reason / mode: What moved and how it ended.
        t_s: (N,) time since the motion's start [s]; ``position_m``: (N, 3) tool positions [m];
        force_n: (N,) contact force [N].
    """

    request: int
    index: int
    name: str
    arm: str
    stop_reason: str
    mode: str
    t_s: np.ndarray
    position_m: np.ndarray
    force_n: np.ndarray

    @property
    def label(self) -> str:
        return f"{self.index} {self.name} {self.arm}: {self.stop_reason}"


def _arrays(tr: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(t, positions, force)`` of a trace dict, ``None`` when malformed or too short."""
    if not isinstance(tr, dict):
        return None
    try:
        t = np.asarray(tr.get("t_s"), dtype=float).reshape(-1)
        p = np.asarray(tr.get("position_m"), dtype=float).reshape(-1, 3)
        f = np.asarray(tr.get("force_n"), dtype=float).reshape(-1)
    except (TypeError, ValueError):
        return None
    if not (len(t) == len(p) == len(f) >= MIN_SAMPLES) or not (
        np.all(np.isfinite(t)) and np.all(np.isfinite(p)) and np.all(np.isfinite(f))
    ):
        return None
    return t, p, f


def _samples_trace(samples: Any) -> dict[str, Any] | None:
    """A ``read_motion_trajectory`` sample list as a trace dict."""
    if not isinstance(samples, list) or not all(isinstance(s, dict) for s in samples):
        return None
    return {k: [s.get(k) for s in samples] for k in ("t_s", "position_m", "force_n")}


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def motion_traces(req: dict[str, Any], use_reads: bool = False) -> list[MotionTrace]:
    """The plottable motions of one ``request`` record (traces of executed sweeps; with
    ``use_reads``, also the samples returned by ``read_motion_trajectory``)."""
    t = req.get("t")
    request = t if isinstance(t, int) else 0
    out: list[MotionTrace] = []
    for call in req.get("calls") or []:
        for rc in _dict(call).get("robot_calls") or []:
            rc = _dict(rc)
            res = _dict(rc.get("result"))
            value = _dict(res.get("value"))
            name = str(rc.get("name", "?"))[:40]
            traces = _dict(_dict(res.get("diagnostics")).get("trace"))
            if use_reads and name == "read_motion_trajectory":
                traces = {str(value.get("arm", "?")): _samples_trace(value.get("samples"))}
            for arm, tr in traces.items():
                arrays = _arrays(tr)
                if arrays is None:
                    continue
                out.append(
                    MotionTrace(
                        request,
                        len(out) + 1,
                        name,
                        str(arm)[:20],
                        str(value.get("stop_reason", "samples"))[:30],
                        str(value.get("mode", ""))[:20],
                        *arrays,
                    )
                )
    return out


def episode_has_traces(requests: list[dict[str, Any]]) -> bool:
    """Whether any request logged sweep traces (else plots fall back to read_motion_trajectory)."""
    return any(motion_traces(r) for r in requests)


def render_motion_svg(traces: list[MotionTrace]) -> str:
    """One inline ``<svg>`` with three panels (top view x-y, height z over time, force over
    time) for the motions of a request; consecutive motions follow each other in time."""
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    fig = motion_figure(traces)
    FigureCanvasSVG(fig)
    buf = io.StringIO()
    with _svg_rc():
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]


def motion_figure(traces: list[MotionTrace]) -> Any:
    """The matplotlib ``Figure`` of :func:`render_motion_svg` (no pyplot state)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    rows = (len(traces) - 1) // 4 + 1  # legend rows under the panels
    fig = Figure(figsize=(9.0, 2.2 + 0.18 * rows), layout="constrained")
    ax_xy, ax_z, ax_f = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.0, 1.4, 1.4]})
    offset = 0.0
    guarded = False
    for k, tr in enumerate(traces):
        colour = f"C{k % 10}"
        x, y, z = tr.position_m[:, 0], tr.position_m[:, 1], tr.position_m[:, 2]
        ax_xy.plot(x, y, color=colour, lw=1.2, label=tr.label)
        ax_xy.plot(x[:1], y[:1], "o", color=colour, ms=3, mfc="none")
        ax_xy.plot(x[-1:], y[-1:], "o", color=colour, ms=3)
        t = tr.t_s - tr.t_s[0] + offset
        ax_z.plot(t, z, color=colour, lw=1.2)
        ax_f.plot(t, tr.force_n, color=colour, lw=1.2)
        offset = float(t[-1]) + GAP_S
        guarded |= tr.mode == "guarded"
    if guarded:
        ax_f.axhline(CONTACT_FORCE_N, color="0.5", lw=0.8, ls="--")
        ax_f.text(0.0, CONTACT_FORCE_N, " guard", color="0.4", fontsize=7, va="bottom")
    ax_xy.set(xlabel="x [m]", ylabel="y [m]", title="tool path (top view, o start)")
    ax_xy.set_aspect("equal", adjustable="datalim")
    ax_z.set(xlabel="t [s]", ylabel="z [m]", title="tool height")
    ax_f.set(xlabel="t [s]", ylabel="force [N]", title="contact force")
    peak = max(float(tr.force_n.max()) for tr in traces)
    ax_f.set_ylim(
        bottom=0.0, top=max(1.0, math.ceil(1.1 * peak), 1.3 * CONTACT_FORCE_N if guarded else 0.0)
    )
    for ax in (ax_xy, ax_z, ax_f):
        ax.tick_params(labelsize=7)
        ax.title.set_fontsize(8)
        ax.xaxis.label.set_fontsize(7)
        ax.yaxis.label.set_fontsize(7)
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.yaxis.set_major_locator(MaxNLocator(4))
    fig.legend(
        *ax_xy.get_legend_handles_labels(),
        loc="outside lower center",
        ncol=min(len(traces), 4),
        fontsize=7,
        frameon=False,
    )
    return fig


def _svg_rc() -> Any:
    import matplotlib

    return matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "captain-report"})
