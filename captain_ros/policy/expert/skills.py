"""Cell-writing skills of the scripted expert, shared by the task plans.

A skill is a generator that yields :class:`Cell` (reasoning + code for one request) and receives
the parsed notes of that cell's output (``dict``; empty when the cell printed no note, e.g. after
an exception). Skills return a value with ``return`` (``yield from`` hands it to the plan).

Names the cells leave in the session: ``G[name]`` the latest geometry record of an object, ``D[name]``
its detection, ``GRASP[name]`` the tool-minus-object offset at the grasp.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

NOTE_RE = re.compile(r"^NOTE (\{.*\})\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Cell:
    """One request of the expert: its reasoning and one code cell."""

    reasoning: str
    code: str


Notes = dict[str, Any]
Skill = Generator[Cell, Notes, Any]


def parse_notes(output: str) -> Notes:
    """Merge every ``NOTE {json}`` line of a cell's output (later keys win)."""
    notes: Notes = {}
    for m in NOTE_RE.finditer(output or ""):
        try:
            notes.update(json.loads(m.group(1)))
        except ValueError:
            continue
    return notes


def perceive(names: dict[str, str], dest: tuple[str, str] | None = None,
             prefer: dict[str, str] | None = None, keep: bool = False) -> Skill:
    """Observe, segment each ``{name: prompt}``, measure each (``dest`` = (name, dest_name)).

    ``prefer`` ranks several matches of a name by geometry (longest, tallest, widest, smallest).
    ``keep``: an object not seen now (e.g. hidden by the arm) keeps its earlier measurement."""
    prefer = prefer or {}
    lines = ["obs = robot.observe(); H = val(obs, 'handle'); CAMS[:] = val(obs, 'cameras', default=[])",
             "G = globals().get('G', {}); D = globals().get('D', {})"]
    if keep:
        lines.append("D_OLD, G_OLD = dict(D), dict(G)")
    for name, prompt in names.items():
        lines.append(f"D[{name!r}] = find({prompt!r}, H, fallback=True, prefer={prefer.get(name)!r})")
    for name in names:
        if dest is not None and name == dest[0]:
            lines.append(f"G[{name!r}] = measure(D[{name!r}], D.get({dest[1]!r}))")
        else:
            lines.append(f"G[{name!r}] = measure(D[{name!r}])")
        if keep:
            lines.append(f"if G[{name!r}] is None and G_OLD.get({name!r}) is not None:  # hidden now: "
                         "it has not been touched")
            lines.append(f"    D[{name!r}], G[{name!r}] = D_OLD[{name!r}], G_OLD[{name!r}]")
    keys = repr(list(names))
    lines.append("note(found={n: G.get(n) is not None for n in " + keys + "}, geo={n: (None if "
                 "G.get(n) is None else {'c': [round(v, 4) for v in G[n]['center_m']], 'ext': "
                 "[round(v, 4) for v in G[n]['extents_m']], 'yaw': round(G[n]['yaw_rad'], 3), "
                 "'top': round(G[n]['top_z_m'], 4)}) for n in " + keys + "})")
    what = ", ".join(names.values())
    notes = yield Cell(f"Observe the scene and locate {what}; measure them so I plan from metric "
                       "geometry, not from the image.", "\n".join(lines))
    return notes


def grasp_top_down(name: str, prompt: str, sym: str = "math.pi / 2", lift_m: float = 0.10,
                   grasp_from_top_m: float | None = None, arm: str | None = None,
                   approach_m: float = 0.08) -> Skill:
    """Open, approach above ``G[name]``, descend guarded, close, lift; retries once on a miss.

    Returns True when the object is held after the lift.
    """
    arm_s = repr(arm)
    if grasp_from_top_m is None:
        z_expr = "max(g['center_m'][2], 0.014)"
    else:
        z_expr = f"max(g['top_z_m'] - {grasp_from_top_m}, 0.014)"
    for attempt in range(2):
        code = "\n".join([
            f"g = G[{name!r}]; c = np.array(g['center_m'], dtype=float)",
            f"gz = {z_expr}",
            f"jaw('open', arm={arm_s})",
            f"Q, gz = approach(c, g['top_z_m'], gz, g['yaw_rad'], {arm_s}, {sym}, {approach_m})",
            "r_above = {'value': {'stop_reason': 'aligned' if Q is not None else 'no_orientation'}, 'success': Q is not None}",
            f"r_down = go([c[0], c[1], gz], None, speed=0.03, arm={arm_s}) if Q is not None else "
            "{'success': False, 'failure_category': 'no_feasible_orientation'}",
            "note(above=stop_reason(r_above), down=stop_reason(r_down), "
            "down_ok=bool(r_down.get('success')), gz=gz)",
        ])
        notes = yield Cell(
            f"Grasp the {name.replace('_', ' ')} from above: open the jaw, align the jaw with its "
            "faces (yaw from the measurement, nearest the arm's bearing), move above it, then "
            "descend guarded to the grasp height." + (" Second attempt after a miss." if attempt
                                                      else ""), code)
        if not notes.get("down_ok"):
            notes = yield Cell(
                f"The descent stopped early ({notes.get('down')}): back off, re-observe and "
                "re-measure before trying again.",
                "\n".join([f"r = robot.recover(distance_m=0.03, arm={arm_s})",
                           f"go(tcp({arm_s}) + [0, 0, 0.06], arm={arm_s})",
                           f"r2 = ready({arm_s})",
                           "note(recovered=stop_reason(r), ready=stop_reason(r2))"]))
            yield from perceive({name: prompt})
            continue
        code = "\n".join([
            f"r_close = jaw('close', arm={arm_s})",
            "GRASP = globals().get('GRASP', {})",
            f"t = tcp({arm_s}); GRASP[{name!r}] = (t - c).tolist()",
            f"held = holding({arm_s})",
            f"for L in ({lift_m!r}, {round(0.6 * lift_m, 3)!r}, 0.04):  # as high as the joints allow",
            f"    r_lift = go(t + [0, 0, L], None, speed=0.05, mode='manipulation', arm={arm_s})",
            "    if r_lift.get('success'): break",
            f"note(held_closed=held, held=holding({arm_s}), lift=stop_reason(r_lift), "
            "jaw_after=val(r_close, 'jaw_after_m'))",
        ])
        notes = yield Cell(f"Close the jaw on the {name.replace('_', ' ')}, check the gripper reports "
                           "holding, and lift in manipulation mode.", code)
        if notes.get("held"):
            return True
        yield Cell("The jaw closed empty: open it, back up and re-measure.",
                   "\n".join([f"jaw('open', arm={arm_s})",
                              f"go(tcp({arm_s}) + [0, 0, 0.06], arm={arm_s})",
                              f"ready({arm_s})", "note(reset=True)"]))
        yield from perceive({name: prompt})
    return False


def place_on(name: str, support_xy: str, support_top: str, margin_m: float = 0.004,
             carry_z_m: float = 0.14) -> Skill:
    """Carry the held ``name`` above ``support_xy`` and lower it onto ``support_top``, then release.

    ``support_xy`` / ``support_top`` are session expressions (e.g. ``"G['plate']['center_m'][:2]"``).
    """
    code = "\n".join([
        f"g = G[{name!r}]; h = g['extents_m'][2]",
        f"off = np.array(GRASP[{name!r}], dtype=float)",
        f"txy = np.array({support_xy}, dtype=float)[:2] + off[:2]",
        f"rest_z = float({support_top}) + h / 2 + off[2]",
        "t = tcp()",
        f"r_up = go([t[0], t[1], max(t[2], {carry_z_m})], None, speed=0.05, mode='manipulation')",
        "# a feasible orientation above the support (turning about the vertical keeps the grasp)",
        f"Qp, z_ok = approach(txy, rest_z, rest_z + {margin_m}, None, None, math.pi / 2, "
        f"max({carry_z_m} - rest_z, 0.06), mode='manipulation')",
        "r_lower = go([txy[0], txy[1], z_ok], None, speed=0.03, mode='manipulation') if Qp is not None "
        "else {'success': False, 'failure_category': 'no_feasible_orientation'}",
        "placed = bool(r_lower.get('success')) and holding()",
        "r_rel = robot.release() if placed else None",
        "# straight up off it, then (when the joints stop a vertical tool low, near the base) tilted:",
        "# going home from just above it would sweep the fingers through what I just placed",
        "z_rel = float(tcp()[2]); up = rise(mode='guarded' if placed else 'manipulation')",
        "if placed and up < 0.07: climb(z_rel + 0.08)",
        "if placed: robot.hold(duration_s=0.5)  # stay above it: the wrist camera looks straight down",
        "note(placed=placed, lower=stop_reason(r_lower), released=val(r_rel, 'released'), "
        "z=z_ok, target=[round(v, 4) for v in txy])",
    ])
    notes = yield Cell(f"Carry the {name.replace('_', ' ')} by the measured offset between the tool and "
                       "the object at the grasp, lower it onto the support with a few millimetres "
                       "to spare, release and retreat.", code)
    return notes


def finish(summary: str) -> Skill:
    """Call finish(); return True when accepted (the gate may reject with a reason)."""
    notes = yield Cell("Fresh measurements show the standard of TASK.md is met: declare completion.",
                       f"f = robot.finish(summary={summary!r})\n"
                       "note(accepted=bool(val(f, 'accepted', default=f.get('success'))), "
                       "reason=val(f, 'reason', default=f.get('message')))")
    return bool(notes.get("accepted"))

