"""Markdown tables (docs/libraries.md, RESULTS.md) from a ``bench_libraries.py --out`` JSON.

Usage: ``python benchmarks/libraries_table.py libs.json``.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _m(
    metrics: dict[str, Any], key: str, stat: str = "median", scale: float = 1.0, nd: int = 2
) -> str:
    s = metrics.get(key)
    if not s or stat not in s:
        return "-"
    return f"{s[stat] * scale:.{nd}f}"


def _names(metrics: dict[str, Any], job: str) -> list[str]:
    return sorted(
        {k.split("|")[1] for k in metrics if k.startswith(job + "|")},
        key=lambda n: (not n.startswith("hand"), n.startswith("floor"), n),
    )


def tables(res: dict[str, Any]) -> str:
    m = res["metrics"]
    out = [
        "Connected components (per frame, every camera; object / part thresholds):",
        "",
        "| candidate | same partition as hand-written | identical labels | pixels lost (median) "
        "| ms median | ms p95 |",
        "|---|---|---|---|---|---|",
    ]
    for n in _names(m, "cc"):
        k = f"cc|{n}|"
        if n.startswith("floor"):
            out.append(f"| {n} | | | | {_m(m, k + 'ms')} | {_m(m, k + 'ms', 'p95')} |")
            continue
        out.append(
            f"| {n} | {_m(m, k + 'same_partition_object', 'mean', 100, 0)} % / "
            f"{_m(m, k + 'same_partition_part', 'mean', 100, 0)} % | "
            f"{_m(m, k + 'identical_labels_object', 'mean', 100, 0)} % / "
            f"{_m(m, k + 'identical_labels_part', 'mean', 100, 0)} % | "
            f"{_m(m, k + 'pixels_lost_object', nd=0)} / {_m(m, k + 'pixels_lost_part', nd=0)} | "
            f"{_m(m, k + 'ms')} | {_m(m, k + 'ms', 'p95')} |"
        )
    out += [
        "",
        "Region growing from a click (IoU with the segmentation render):",
        "",
        "| candidate | IoU median | IoU mean | restack median | open_drawer mean | first click ms "
        "| later click ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in _names(m, "grow"):
        k = f"grow|{n}|"
        out.append(
            f"| {n} | {_m(m, k + 'iou', nd=3)} | {_m(m, k + 'iou', 'mean', nd=3)} | "
            f"{_m(m, k + 'iou_restack', nd=3)} | {_m(m, k + 'iou_open_drawer', 'mean', nd=3)} | "
            f"{_m(m, k + 'first_click_ms', nd=1)} | {_m(m, k + 'later_click_ms', nd=3)} |"
        )
    out += [
        "",
        "Minimum-area rectangle of a detection's xy footprint (differences to the hand-written):",
        "",
        "| candidate | area rel. diff max | yaw diff max [rad] | size diff max [m] | us median "
        "| us p95 |",
        "|---|---|---|---|---|---|",
    ]
    for n in _names(m, "rect"):
        k = f"rect|{n}|"
        out.append(
            f"| {n} | {_m(m, k + 'area_rel_diff', 'max', nd=7)} | "
            f"{_m(m, k + 'yaw_diff_rad', 'max', nd=7)} | {_m(m, k + 'size_diff_m', 'max', nd=9)} | "
            f"{_m(m, k + 'us', nd=0)} | {_m(m, k + 'us', 'p95', nd=0)} |"
        )
    out += [
        "",
        "Box fit of a detection's points against the simulator's geoms [mm]:",
        "",
        "| candidate | centre median | centre p95 | extents median | extents p95 | ms median |",
        "|---|---|---|---|---|---|",
    ]
    for n in _names(m, "box"):
        k = f"box|{n}|"
        out.append(
            f"| {n} | {_m(m, k + 'centre_err_mm')} | {_m(m, k + 'centre_err_mm', 'p95')} | "
            f"{_m(m, k + 'extents_err_mm')} | {_m(m, k + 'extents_err_mm', 'p95')} | "
            f"{_m(m, k + 'ms')} |"
        )
    out += [
        "",
        "IK of the tool site (converged = 1 mm / 0.01 rad inside the joint limits):",
        "",
        "| solver | start | n | converged | pos. error median [mm] | ms median | ms p95 | "
        "iterations median |",
        "|---|---|---|---|---|---|---|---|",
    ]
    starts = ("warm", "cold", "restarts_joint-space", "restarts_task")
    for n in _names(m, "ik"):
        for st in starts:
            k = f"ik|{n}|{st}|"
            if k + "converged" not in m:
                continue
            out.append(
                f"| {n} | {st} | {m[k + 'converged']['n']} | "
                f"{_m(m, k + 'converged', 'mean', 100, 1)} % | {_m(m, k + 'pos_err_mm')} | "
                f"{_m(m, k + 'ms', nd=3)} | {_m(m, k + 'ms', 'p95', nd=1)} | "
                f"{_m(m, k + 'iterations', nd=0)} |"
            )
    for n in _names(m, "ik"):
        for st in ("restarts_joint-space", "restarts_task"):
            k = f"ik|{n}|{st}|"
            if k + "only_mink_converged" in m:
                out.append(
                    f"\n{n}, {st}: only mink converged on "
                    f"{_m(m, k + 'only_mink_converged', 'mean', 100, 1)} % of the goals, only "
                    f"DLS on {_m(m, k + 'only_dls_converged', 'mean', 100, 1)} %."
                )
    floor = "ik|floor: mj_kinematics + mj_comPos + mj_jacSite|all|us"
    limit = "ik|DLS (captain_ros.motion.ik)|cold|failed_at_a_joint_limit"
    out.append(
        f"\nFloor of one Jacobian iteration (kinematics + Jacobian at a new configuration): "
        f"{_m(m, floor, nd=0)} us median. Unconverged cold DLS solves stopped at a joint limit: "
        f"{_m(m, limit, 'mean', 100, 0)} % of {m.get(limit, {}).get('n', 0)}."
    )
    out.append(
        f"\nVersions: {res.get('versions')}; machine: {res.get('machine')}; "
        f"wall {res.get('wall_s')} s; command: `{res.get('command')}`."
    )
    return "\n".join(out) + "\n"


def main() -> None:
    with open(sys.argv[1]) as f:
        print(tables(json.load(f)), end="")


if __name__ == "__main__":
    main()
