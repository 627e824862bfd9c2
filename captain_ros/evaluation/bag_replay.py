"""Sim-to-real replay: a bag's robot calls re-run in simulation, and how far the simulation departs.

A bag recorded on any backend (MuJoCo, the PiPER through its CAN emulator or on hardware, the ROS
arm bridge) holds the episode's commands at the robot-API level: every robot call with its name
and arguments (the trajectory's request records) and what it did (the receipts), plus the state
streams (``/joint_states``, ``/captain/wrench/<arm>``). :func:`replay_bag` builds the simulated
scene of the bag's task and seed, restores the recorded initial joint state as far as the bag
allows (the first ``/joint_states`` sample: the arm is servoed there when the scene's start
differs; objects start where the seed puts them, the bag records no object poses on hardware),
and issues the same calls, in order, with the same arguments. Perception calls run too (later
calls may name their handles and detections).

After every call the replay samples the simulated state (all calls, perception included: an arm still settling
after a motion shows there); the recorded state of the same call is
the first ``/joint_states`` (and wrench) sample at or after that call's receipt, i.e. the state
right after the call (the in-process bag samples there; the ROS graph at 10 Hz, so within
~0.1 s). The report (:class:`ReplayReport`): per joint the tracking error (RMS and largest, over
the calls), the jaw opening and contact force differences, the calls whose success
differs, gripper timing (the calls at which each side starts and stops holding, the recorded
times and both durations of those calls), how long the physical calls took on each side, and the
task outcome (the recorded host success against the simulated
predicate on the final state). Replaying a MuJoCo bag in MuJoCo is the identity check.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.api.registry import CAPABILITY_BY_NAME, PHYSICAL
from captain_ros.bags.lerobot.episode import Episode, ExportError, Samples

HARNESS_CALLS = frozenset({"finish"})
"""Calls the harness answers itself (the completion gate), not the robot: not replayed."""


@dataclass(frozen=True)
class CallRow:
    """One replayed call beside its recording (times: recorded, from the first joint state [s])."""

    request: int
    call: int
    name: str
    t_s: float
    success: tuple[bool, bool]
    joints_rad: tuple[list[float], list[float]]
    jaw_m: tuple[list[float], list[float]]
    force_n: tuple[list[float], list[float]]
    holding: tuple[bool | None, bool | None]
    duration_s: tuple[float | None, float | None]


@dataclass(frozen=True)
class ReplayReport:
    """The departure of the simulation from a recorded episode (see the module doc)."""

    source: str
    recorded_backend: str
    task: str
    seed: int
    joint_names: list[str]
    initial_restore: str
    calls: list[CallRow]
    joint_rms_rad: list[float]
    joint_max_rad: list[float]
    jaw_max_m: float
    force_max_n: float
    success_mismatches: list[dict[str, Any]]
    gripper: dict[str, Any]
    timing: dict[str, Any]
    outcome: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _recorded_calls(ep: Episode) -> list[tuple[int, int, str, dict[str, Any], dict[str, Any]]]:
    """``(request, call index, name, kwargs, result)`` of every robot call, in order; the call
    index counts the episode's calls from 1, as the receipts do."""
    out = []
    k = 0
    for r in ep.requests:
        for cell in r.get("calls") or []:
            for call in cell.get("robot_calls") or []:
                k += 1
                out.append(
                    (
                        int(r.get("t", 0)),
                        k,
                        str(call["name"]),
                        dict(call.get("kwargs") or {}),
                        dict(call.get("result") or {}),
                    )
                )
    return out


def _after(s: Samples, t_ns: int) -> np.ndarray:
    i = min(int(np.searchsorted(s.t_ns, t_ns, side="left")), len(s.t_ns) - 1)
    return s.values[i]


def _value(result: dict[str, Any], key: str) -> Any:
    value = result.get("value")
    return value.get(key) if isinstance(value, dict) else None


def _bool(v: Any) -> bool | None:
    return None if v is None else bool(v)


def _float(v: Any) -> float | None:
    return None if v is None else float(v)


def replay_bag(ep: Episode, backend_name: str = "mujoco") -> ReplayReport:
    """Re-run ``ep``'s robot calls on ``backend_name`` and compare (see the module doc)."""
    from captain_ros.evaluation.episode import build_robot

    task_name, seed = str(ep.start.get("task", "")), int(ep.start.get("seed", 0))
    calls = _recorded_calls(ep)
    if not calls:
        raise ExportError(f"{ep.source}: no robot call recorded (nothing to replay)")
    receipts = {(r.request_index, r.call_index): r for r in ep.receipts}
    task, backend, service = build_robot(task_name, seed, backend_name)
    try:
        arms = list(backend.spec.arm_names)
        names = [n for a in arms for n in backend.joint_state(a).names]
        if names != list(ep.joint_names):
            raise ExportError(
                f"{ep.source}: recorded joints {list(ep.joint_names)}, {backend_name} has {names}"
            )
        restore = _restore(backend, arms, ep.position.values[0])
        notes = []
        if ep.start.get("initial_images"):  # the harness's observation before request 1
            service.call("observe", {})
            notes.append("the initial observation (before request 1) was taken again")
        rows = []
        t0 = int(ep.position.t_ns[0])
        for req, k, name, kwargs, result in calls:
            if name in HARNESS_CALLS or name not in CAPABILITY_BY_NAME:
                notes.append(f"request {req} call {k}: {name} is the harness's, not replayed")
                continue
            res = service.call(name, kwargs)
            rec = receipts.get((req, k))
            t = rec.t_ns if rec is not None else t0
            q_sim = [float(v) for a in arms for v in backend.joint_state(a).position_rad]
            rows.append(
                CallRow(
                    req,
                    k,
                    name,
                    (t - t0) / 1e9,
                    (bool(result.get("success")), bool(res.success)),
                    ([float(v) for v in _after(ep.position, t)], q_sim),
                    (
                        [float(v) for v in _after(ep.gripper, t)],
                        [float(backend.gripper(a).opening_m) for a in arms],
                    ),
                    (
                        [float(_after(ep.wrench[a], t)[0]) for a in arms],
                        [float(backend.contact_force_n(a)) for a in arms],
                    ),
                    (
                        _bool(_value(result, "holding")),
                        _bool(_value({"value": res.value}, "holding")),
                    ),
                    (
                        _float(_value(result, "duration_s")),
                        _float(_value({"value": res.value}, "duration_s")),
                    ),
                )
            )
        sim_success = bool(task.success(backend.privileged_state()))
    finally:
        backend.close()
    return _report(ep, backend_name, task_name, seed, restore, rows, sim_success, notes)


def _restore(backend: Any, arms: list[str], q0: np.ndarray, tol_rad: float = 1e-4) -> str:
    """Servo the arms to the recorded first joint state (when the scene starts elsewhere)."""
    from captain_ros.core.types import ForceGuard

    sizes = [len(backend.joint_state(a).names) for a in arms]
    split = np.split(np.asarray(q0, float), np.cumsum(sizes)[:-1])
    target = dict(zip(arms, split, strict=True))
    err = max(float(np.abs(backend.joint_state(a).position_rad - target[a]).max()) for a in arms)
    if err <= tol_rad:
        return f"the scene starts at the recorded joint state (largest difference {err:.2e} rad)"
    for _ in range(500):  # 10 s of 20 ms ticks at most
        backend.servo(target, 0.02, ForceGuard())
        now = max(
            float(np.abs(backend.joint_state(a).position_rad - target[a]).max()) for a in arms
        )
        if now <= tol_rad:
            break
    return f"servoed from {err:.4f} rad to the recorded joint state (left {now:.2e} rad)"


def _report(
    ep: Episode,
    backend_name: str,
    task: str,
    seed: int,
    restore: str,
    rows: list[CallRow],
    sim_success: bool,
    notes: list[str],
) -> ReplayReport:
    phys = rows  # after every call: a settling arm after a motion shows in the calls that follow
    err = np.array([np.subtract(r.joints_rad[1], r.joints_rad[0]) for r in phys])
    jaw = np.array([np.subtract(r.jaw_m[1], r.jaw_m[0]) for r in phys])
    force = np.array([np.subtract(r.force_n[1], r.force_n[0]) for r in phys])

    def holds(side: int) -> dict[str, Any]:
        changes, last = [], False
        for r in rows:
            h = r.holding[side]
            if h is not None and h != last:
                changes.append(
                    {
                        "request": r.request,
                        "call": r.call,
                        "name": r.name,
                        "t_s": round(r.t_s, 3),
                        "holding": h,
                        "call_duration_s": r.duration_s[side],
                    }
                )
                last = h
        return {"changes": changes}

    rec, sim = holds(0), holds(1)
    same = [(a["request"], a["call"], a["holding"]) for a in rec["changes"]] == [
        (b["request"], b["call"], b["holding"]) for b in sim["changes"]
    ]
    return ReplayReport(
        ep.source,
        ep.backend,
        task,
        seed,
        list(ep.joint_names),
        restore,
        rows,
        np.sqrt((err**2).mean(0)).round(6).tolist(),
        np.abs(err).max(0).round(6).tolist(),
        float(np.abs(jaw).max()),
        float(np.abs(force).max()),
        [
            {
                "request": r.request,
                "call": r.call,
                "name": r.name,
                "recorded": r.success[0],
                "replayed": r.success[1],
            }
            for r in rows
            if r.success[0] != r.success[1]
        ],
        {"recorded": rec, "replayed": sim, "same_calls": same},
        _timing(rows),
        {
            "recorded_host_success": bool(ep.summary.get("host_success")),
            "replayed_success": sim_success,
            "recorded_outcome": str(ep.summary.get("outcome", "")),
        },
        notes,
    )


def _timing(rows: list[CallRow]) -> dict[str, Any]:
    """How long the physical calls took, recorded against replayed (their own ``duration_s``)."""
    both = [r.duration_s for r in rows if r.name in PHYSICAL and None not in r.duration_s]
    rec = sum(float(d[0] or 0.0) for d in both)
    sim = sum(float(d[1] or 0.0) for d in both)
    return {
        "physical_calls": len(both),
        "recorded_s": round(rec, 3),
        "replayed_s": round(sim, 3),
        "replayed_over_recorded": round(sim / rec, 4) if rec > 0 else None,
    }


def write_report(report: ReplayReport, out: Path) -> tuple[Path, Path]:
    """``replay.json`` and ``replay.png`` (per joint: recorded and replayed position after each call,
    then the tracking error over the recorded time) into ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    (out / "replay.json").write_text(json.dumps(report.to_dict(), indent=1) + "\n")
    t = [r.t_s for r in report.calls]
    rec = np.array([r.joints_rad[0] for r in report.calls])
    sim = np.array([r.joints_rad[1] for r in report.calls])
    n = len(report.joint_names)
    fig, axes = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for j in range(n):
        line = axes[0].step(t, rec[:, j], where="post", label=report.joint_names[j])[0]
        axes[0].step(t, sim[:, j], where="post", linestyle="--", color=line.get_color())
        axes[1].step(t, np.abs(sim[:, j] - rec[:, j]), where="post", color=line.get_color())
    axes[0].set_ylabel("joint position [rad]\n(solid: recorded, dashed: replayed)")
    axes[0].legend(ncol=min(n, 6), fontsize=7)
    axes[1].set_ylabel("|replayed - recorded| [rad]")
    axes[1].set_xlabel("recorded time of the call [s]")
    fig.suptitle(
        f"{report.task} seed {report.seed}: {report.recorded_backend} bag replayed in simulation"
    )
    fig.tight_layout()
    fig.savefig(out / "replay.png", dpi=100)
    plt.close(fig)
    return out / "replay.json", out / "replay.png"
