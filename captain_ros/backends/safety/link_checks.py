"""What a hardware link's status forbids: the safety layer's link checks.

Functions of one arm's :class:`LinkStatus` and the :class:`SafetyConfig`, used by
:class:`~captain_ros.backends.safety.layer.SafeBackend` before every command
(:func:`command_problem`) and when it enables the motors (:func:`fresh_link_status`, then
:func:`enable_refusal`). Simulators have no link, so none of this runs for them.
"""

from __future__ import annotations

import time

from captain_ros.backends.safety.config import SafetyConfig
from captain_ros.backends.safety.link import HardwareLink, LinkStatus
from captain_ros.core.errors import CaptainError, HardwareError, SafetyLimitError

ENABLE_FEEDBACK_WAIT_S = 1.0
"""How long enabling waits for stale feedback to turn fresh [s]."""


def faults_text(st: LinkStatus) -> str:
    """The link's own fault descriptions, as `` (a; b)`` (empty when it reports none)."""
    return f" ({'; '.join(st.faults)})" if st.faults else ""


def command_problem(arm: str, st: LinkStatus, config: SafetyConfig) -> str:
    """Why ``arm`` must not be commanded now (a lost link, stale feedback, disabled motors), or
    ``""``. The controller's own stop (``st.hardware_estop``) is the caller's: it latches."""
    if not st.connected:
        return f"{arm}: no link to the controller (bus down or unplugged){faults_text(st)}"
    if st.feedback_age_s > config.max_feedback_age_s:
        return (
            f"{arm}: joint feedback is stale ({st.feedback_age_s * 1e3:.0f} ms old, "
            f"limit {config.max_feedback_age_s * 1e3:.0f} ms)"
        )
    if not st.enabled:
        off = ", ".join(f"J{j}" for j in st.disabled_motors)
        which = f" (motor {off} disabled)" if off else ""
        return (
            f"{arm}: motors are not enabled{which}{faults_text(st)}; check the arm, then "
            "reset the e-stop to re-enable its motors"
        )
    return ""


def fresh_link_status(
    link: HardwareLink, arm: str, max_age_s: float, wait_s: float = ENABLE_FEEDBACK_WAIT_S
) -> LinkStatus:
    """``arm``'s link status once its feedback is at most ``max_age_s`` old, or after ``wait_s``.

    One late frame (a scheduling hiccup on a busy host, the bus just opened) is not a dead link:
    enabling waits a moment for the next one. Feedback that stays stale is refused by
    :func:`enable_refusal`. A disconnected link is returned at once.
    """
    deadline = time.monotonic() + wait_s
    st = link.link_status(arm)
    while st.connected and st.feedback_age_s > max_age_s and time.monotonic() < deadline:
        time.sleep(0.01)
        st = link.link_status(arm)
    return st


def enable_refusal(
    arm: str, st: LinkStatus, config: SafetyConfig, waited_s: float = ENABLE_FEEDBACK_WAIT_S
) -> CaptainError | None:
    """The error that refuses enabling ``arm``'s motors with status ``st`` (read by
    :func:`fresh_link_status` after up to ``waited_s``), or None when enabling is safe."""
    if not st.connected:
        return HardwareError(
            f"{arm}: no link to the controller{faults_text(st)}; check the bus and power"
        )
    if st.feedback_age_s > config.max_feedback_age_s:
        return HardwareError(
            f"{arm}: feedback is stale ({st.feedback_age_s:.2f} s, still after "
            f"{waited_s:.1f} s of waiting); refusing to enable"
        )
    if st.twin_error_m > config.twin_tolerance_m:
        return SafetyLimitError(
            f"{arm}: the kinematic twin disagrees with the arm's own pose by "
            f"{st.twin_error_m * 1e3:.1f} mm (limit {config.twin_tolerance_m * 1e3:.1f} "
            "mm): wrong model, mount or calibration; refusing to enable"
        )
    if st.joint_disagreement_rad > config.twin_tolerance_rad:
        return SafetyLimitError(
            f"{arm}: joint feedback and motor encoders disagree by "
            f"{st.joint_disagreement_rad:.3f} rad (limit {config.twin_tolerance_rad} "
            "rad); refusing to enable"
        )
    return None
