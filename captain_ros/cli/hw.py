"""``captain hw check``: bring-up checks of a hardware rig without moving anything.

Checks, per arm: the CAN link (frames arrive, feedback age), the motors' enable state and the
controller status (e-stop, collision, faults), the measured joints against the joint limits, the
kinematic twin against the controller's own pose; then one frame of every camera (size, valid
depth); and the e-stop latch. Nothing is enabled or commanded. Exit status: 0 all checks pass,
1 a check failed, 2 the rig could not be reached or the configuration is invalid.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from captain_ros.backends.registry import info, names
from captain_ros.core.errors import InvalidArgumentError


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("hw", help="hardware bring-up: `captain hw check`", parents=[common])
    hw = p.add_subparsers(dest="hw_command", required=True)
    c = hw.add_parser(
        "check",
        help="verify links, enable state, limits, cameras, e-stop (no motion)",
        parents=[common],
    )
    add_rig_args(c)
    c.add_argument(
        "--backend",
        default="piper",
        choices=names(hardware=True),
        help="piper (CAN, default) or ros_arm (a ROS 2 arm driver; --config xr1.yaml)",
    )
    c.add_argument("--json", action="store_true", help="print the checks as JSON")
    c.set_defaults(fn=cmd_check)


def add_rig_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        default=None,
        help="rig config (default config/piper.yaml; --backend ros_arm: config/xr1.yaml)",
    )
    p.add_argument("--can", default=None, help="CAN interface(s): can0 or can0,can1")
    p.add_argument(
        "--emulate",
        action="store_true",
        help="start the CAN emulator (python-can virtual bus) instead of hardware",
    )
    p.add_argument("--rig", default=None, choices=("piper", "piper_dual"))


RIG_ARGS = {name: info(name).rig_args for name in names(hardware=True)}
"""The rig arguments each hardware backend takes (the others take none): the registry's."""


def check_rig_args(ns: argparse.Namespace) -> None:
    """Refuse rig arguments that the chosen ``--backend`` would silently ignore."""
    backend = getattr(ns, "backend", "piper")
    given = [k for k in ("config", "can", "emulate", "rig") if getattr(ns, k, None)]
    wrong = [k for k in given if k not in RIG_ARGS.get(backend, ())]
    if wrong:
        takes = ", ".join(f"--{k}" for k in RIG_ARGS.get(backend, ())) or "none"
        raise InvalidArgumentError(
            f"{', '.join('--' + k for k in wrong)} does not apply to --backend "
            f"{backend} (its rig arguments: {takes}); "
            "--emulate, --can and --rig are for --backend piper"
        )


def rig_backend(ns: argparse.Namespace) -> Any:
    """The :class:`~captain_ros.evaluation.config.BackendConfig` of ``--backend`` and the rig
    arguments it takes (PiPER: ``--config``/``--can``/``--rig``/``--emulate``; ros_arm:
    ``--config``)."""
    from captain_ros.evaluation.config import BackendConfig

    args = {k: getattr(ns, k, None) for k in ("config", "can", "rig", "emulate")}
    return BackendConfig.from_rig_args(getattr(ns, "backend", "piper"), **args)


def run_checks(backend: Any) -> list[dict[str, Any]]:
    """Each check: ``{"name", "ok", "detail"}``. Reads only; never commands the arm."""
    out: list[dict[str, Any]] = []

    def add(name: str, ok: bool, detail: str) -> None:
        out.append({"name": name, "ok": bool(ok), "detail": detail})

    for arm in backend.spec.arm_names:
        st = backend.link_status(arm)
        add(
            f"{arm}: link",
            st.connected and st.feedback_age_s <= backend.config.max_feedback_age_s,
            f"feedback age {st.feedback_age_s * 1e3:.1f} ms",
        )
        add(
            f"{arm}: enable state",
            True,
            "enabled"
            if st.enabled
            else "disabled (enable before running; `captain run` enables after these checks)",
        )
        add(
            f"{arm}: controller",
            not st.hardware_estop and not st.faults,
            st.hardware_estop or (", ".join(st.faults) if st.faults else "normal"),
        )
        spec = backend.spec.arm(arm)
        q = np.asarray(backend.joint_state(arm).position_rad)
        bad = [
            f"J{k + 1}" for k in range(len(q)) if not spec.lower_rad[k] <= q[k] <= spec.upper_rad[k]
        ]
        add(
            f"{arm}: joint limits",
            not bad,
            "all joints inside their limits" if not bad else f"outside limits: {', '.join(bad)}",
        )
        add(
            f"{arm}: twin",
            st.twin_error_m <= backend.config.twin_tolerance_m
            and st.joint_disagreement_rad <= backend.config.twin_tolerance_rad,
            f"twin vs controller pose {st.twin_error_m * 1e3:.2f} mm, joint vs encoder "
            f"{st.joint_disagreement_rad:.4f} rad",
        )
    for cam in backend.spec.cameras:
        try:
            f = backend.capture([cam])[cam]
            valid = float(np.mean(np.asarray(f.depth_m) > 0))
            add(f"camera {cam}", valid > 0.1, f"{f.width}x{f.height}, {valid:.0%} valid depth")
        except Exception as exc:  # noqa: BLE001 - reported as a failed check
            add(f"camera {cam}", False, f"{type(exc).__name__}: {exc}")
    add("e-stop", not backend.estopped, backend.latch.message() or "not latched")
    return out


def cmd_check(ns: argparse.Namespace) -> int:
    from captain_ros.evaluation.episode import make_robot_backend

    try:
        backend = make_robot_backend(rig_backend(ns), enable=False)
    except Exception as exc:  # noqa: BLE001 - one clear line, traceback with --debug
        if getattr(ns, "debug", False):
            raise
        print(f"captain hw check: {exc}", file=sys.stderr)
        return 2
    try:
        checks = run_checks(backend)
    finally:
        backend.close()
    if ns.json:
        print(json.dumps(checks, indent=2))
    else:
        for c in checks:
            print(f"[{'ok' if c['ok'] else 'FAIL':>4}] {c['name']}: {c['detail']}")
    return 0 if all(c["ok"] for c in checks) else 1
