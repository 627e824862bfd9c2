"""Paired counterfactual verification of one teacher repair: Delta-hat, bounds, escalation.

From one snapshot, shared-randomness draw xi_m runs the teacher segment -> student continuation
and a student resample -> student continuation; their return difference is one paired sample.
Both arms of a draw share xi_m (noise and sampling seed), so common noise cancels.

Candidates (RE-0 section 3.2): ``fresh`` means every draw runs its own candidate from the
contract distribution (a temperature-sampled model teacher), or the teacher is deterministic (the
scripted expert, a point mass): the per-draw differences are then i.i.d. with mean Delta. ``reused``
means K candidates are drawn once and each runs under every xi_m ((K + 1) x M rollouts, the
student arm shared per xi): the per-draw mean over candidates has mean A-bar_K, and a Hoeffding
layer over K covers the candidate sampling error (eq. B.2's outer term).

Delta-hat is always the mean over all candidates and draws: no single best candidate is ever
post-selected.

Escalation: M starts at 8 and grows 12 / 16 / 24 / 32 / 48 while the evidence is insufficient
(LCB <= eps < UCB). The betting bounds are time-uniform, so the looks cost nothing; the Hoeffding
bound is a fixed-sample bound, so each of its looks gets alpha / (number of levels) (union bound).
Verdicts: ``admitted`` (LCB > eps), ``rejected`` (UCB <= eps: not better than the student, or
harmful), ``insufficient`` (undecided at the last level). Only ``admitted`` opens the gate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.research.re0.betting import betting_bounds
from captain_ros.research.re0.bounds import hoeffding_term, two_layer_radius

ESCALATION = (8, 12, 16, 24, 32, 48)
METHODS = ("betting", "hoeffding")
CANDIDATE_MODES = ("fresh", "reused")
VERDICTS = ("admitted", "rejected", "insufficient", "invalid")


@dataclass(frozen=True)
class PairedDraw:
    """One candidate under one shared draw xi: teacher-arm and student-arm returns."""

    candidate: str
    xi: int
    teacher_return: float
    student_return: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.teacher_return) and math.isfinite(self.student_return)):
            raise InvalidArgumentError("paired returns must be finite")

    @property
    def difference(self) -> float:
        return self.teacher_return - self.student_return


@dataclass(frozen=True)
class VerifierConfig:
    """How one event is verified.

    Attributes:
        method: ``betting`` (operational, anytime-valid) or ``hoeffding`` (analytical, eq. B.2).
        return_bound: R_bar, a bound on |teacher return - student return|.
        candidates: ``fresh`` or ``reused`` (module docstring).
        eps: Minimum advantage to admit (RE-0 uses 0).
        schedule: Pair counts M at which the evidence is looked at.
    """

    method: str = "betting"
    return_bound: float = 1.0
    candidates: str = "fresh"
    eps: float = 0.0
    schedule: tuple[int, ...] = ESCALATION

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise InvalidArgumentError(
                f"unknown method {self.method!r}; valid: {', '.join(METHODS)}"
            )
        if self.candidates not in CANDIDATE_MODES:
            raise InvalidArgumentError(
                f"unknown candidates mode {self.candidates!r}; valid: {', '.join(CANDIDATE_MODES)}"
            )
        if not self.return_bound > 0:
            raise InvalidArgumentError("return_bound must be > 0")
        if (
            not self.schedule
            or list(self.schedule) != sorted(set(self.schedule))
            or self.schedule[0] < 1
        ):
            raise InvalidArgumentError("schedule must be strictly increasing positive pair counts")
        if not -self.return_bound < self.eps < self.return_bound:
            raise InvalidArgumentError("eps must lie inside (-return_bound, return_bound)")


@dataclass(frozen=True)
class Verification:
    """The outcome of verifying one (history, contract) at level ``alpha``."""

    verdict: str
    alpha: float
    method: str
    candidates_mode: str
    draws: tuple[PairedDraw, ...]
    delta_hat: float
    lcb: float
    ucb: float
    radius: float | None
    log_e_value: float | None
    looks: tuple[int, ...]
    rollouts_spent: int
    valid: bool = True
    valid_reason: str = ""
    candidates: tuple[str, ...] = field(default=())
    inner_bounds: tuple[float, float] | None = None  # betting: running CS before the outer term

    @property
    def admitted(self) -> bool:
        return self.verdict == "admitted" and self.valid


def _per_draw(draws: Sequence[PairedDraw], mode: str) -> tuple[np.ndarray, list[str]]:
    by_xi: dict[int, list[PairedDraw]] = {}
    for d in draws:
        by_xi.setdefault(d.xi, []).append(d)
    cands = sorted({d.candidate for d in draws})
    for xi, ds in by_xi.items():
        if mode == "fresh" and len(ds) != 1:
            raise InvalidArgumentError(
                f"fresh candidates: draw xi={xi} has {len(ds)} pairs, need 1"
            )
        if mode == "reused":
            if sorted(d.candidate for d in ds) != cands:
                raise InvalidArgumentError(
                    f"reused candidates: draw xi={xi} must run every candidate once"
                )
            if len({d.student_return for d in ds}) != 1:
                raise InvalidArgumentError(f"reused candidates share the student arm of xi={xi}")
    y = np.array([np.mean([d.difference for d in by_xi[xi]]) for xi in sorted(by_xi)])
    return y, cands


def decide(
    draws: Sequence[PairedDraw],
    alpha: float,
    config: VerifierConfig,
    final: bool = False,
    prior: Verification | None = None,
) -> Verification:
    """Bounds and verdict for the draws so far (``final``: no further escalation possible).

    ``prior`` is this event's decision at the previous look: the betting bounds are then only
    computed at the new sample size and combined with the earlier ones (the same running
    intersection as computing them at every look again).
    """
    if not 0.0 < alpha < 1.0:
        raise InvalidArgumentError(f"alpha must be in (0, 1), got {alpha}")
    y, cands = _per_draw(draws, config.candidates)
    if y.size == 0:
        raise InvalidArgumentError("no paired draws to decide on")
    rb, m, k = config.return_bound, y.size, len(cands)
    if np.any(np.abs(y) > rb * (1 + 1e-12)):
        raise InvalidArgumentError(f"a paired difference exceeds the return bound {rb}")
    delta_hat = float(y.mean())
    radius: float | None
    log_e: float | None
    looks = (*(s for s in config.schedule if s < m), m)
    inner: tuple[float, float] | None = None
    if config.method == "hoeffding":
        a_look = alpha / len(config.schedule)
        radius = (
            hoeffding_term(rb, m, a_look)
            if config.candidates == "fresh"
            else two_layer_radius(rb, k, m, a_look / 2, a_look / 2)
        )
        lcb, ucb, log_e = delta_hat - radius, delta_hat + radius, None
    else:
        a_inner, outer = alpha, 0.0
        if config.candidates == "reused":
            a_inner = alpha / 2
            outer = hoeffding_term(rb, k, alpha / 2)
        if prior is not None and prior.inner_bounds is not None and prior.looks == looks[:-1]:
            bb = betting_bounds(y, rb, a_inner, null=config.eps, times=np.array([m]))
            inner = (
                max(prior.inner_bounds[0], float(bb.lower[-1])),
                min(prior.inner_bounds[1], float(bb.upper[-1])),
            )
        else:
            bb = betting_bounds(y, rb, a_inner, null=config.eps, times=np.array(looks))
            inner = (float(bb.lower[-1]), float(bb.upper[-1]))
        lcb, ucb = inner[0] - outer, inner[1] + outer
        radius, log_e = None, float(bb.log_e_value[-1])
    if lcb > config.eps:
        verdict = "admitted"
    elif ucb <= config.eps:
        verdict = "rejected"
    elif final or m >= config.schedule[-1]:
        verdict = "insufficient"
    else:
        verdict = "continue"
    return Verification(
        verdict=verdict,
        alpha=alpha,
        method=config.method,
        candidates_mode=config.candidates,
        draws=tuple(draws),
        delta_hat=delta_hat,
        lcb=lcb,
        ucb=ucb,
        radius=radius,
        log_e_value=log_e,
        looks=looks,
        rollouts_spent=len(draws) + m,
        candidates=tuple(cands),
        inner_bounds=inner,
    )


def verify(
    sample: Callable[[int, int], Sequence[PairedDraw]], alpha: float, config: VerifierConfig
) -> Verification:
    """Run draws through the escalation schedule until a verdict.

    ``sample(first_xi, count)`` runs the draws xi = first_xi .. first_xi + count - 1 (both arms,
    every candidate) and returns their :class:`PairedDraw` s.
    """
    draws: list[PairedDraw] = []
    n_xi = 0
    v: Verification | None = None
    for level in config.schedule:
        new = list(sample(n_xi, level - n_xi))
        if {d.xi for d in new} != set(range(n_xi, level)):
            raise InvalidArgumentError(
                f"sample({n_xi}, {level - n_xi}) must return the draws xi = {n_xi} .. {level - 1}"
            )
        draws += new
        n_xi = level
        v = decide(draws, alpha, config, prior=v)
        if v.verdict != "continue":
            return v
    raise AssertionError("the last escalation level always decides")  # pragma: no cover


def invalid_verification(reason: str, alpha: float, config: VerifierConfig) -> Verification:
    """The record of an event whose Valid predicate failed: no rollouts count as evidence."""
    return Verification(
        verdict="invalid",
        alpha=alpha,
        method=config.method,
        candidates_mode=config.candidates,
        draws=(),
        delta_hat=float("nan"),
        lcb=float("-inf"),
        ucb=float("inf"),
        radius=None,
        log_e_value=None,
        looks=(),
        rollouts_spent=0,
        valid=False,
        valid_reason=reason,
    )
