"""Paired counterfactual rollouts from a decision point, in worker processes (RE-0 section 3.2).

An audited event is a recorded student episode, a boundary t (the located h-hat) and a repair
contract. Draw m (xi = m) runs two continuations from the same restored s_t:

- teacher arm: the hybrid policy with one admission, the teacher segment at t within the
  contract, then the student;
- student arm: a student resample at t, then the student.

Both arms of a draw share xi_m: the same stochastic-mode noise draw (``NoiseDraw(spec,
seed(event, m))``, applied after the restore) and the same student sampling seed, so common noise
cancels in the difference. Each rollout is one job of the evaluation runner
(:func:`captain_ros.evaluation.runner.run_local`: spawned worker processes, or Ray through
``run_ray``); a worker rebuilds s_t once per event (:func:`rebuild_robot_side`, checked against
the record) and restores it in microseconds for every further rollout, while the session is
rehydrated per rollout (a fresh sandbox replaying the prefix cells). A rollout that cannot be
restored with identity makes the whole event invalid (:class:`RolloutError`), never a sample.

:class:`PairedRunner` is the ``sample(first_xi, count)`` callable that
:func:`captain_ros.research.re0.verify.verify` escalates through 8 / 12 / ... / 48 draws.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from captain_ros.core.errors import CaptainError, InvalidArgumentError
from captain_ros.evaluation.config import BackendConfig
from captain_ros.evaluation.observers import RuntimeObserver
from captain_ros.evaluation.runner import EpisodeJob, run_local, worker_environment
from captain_ros.harness.episode import EpisodeOptions, run_episode
from captain_ros.harness.episode.budgets import Budgets
from captain_ros.harness.record.episode_record import EpisodeRecord
from captain_ros.harness.record.robot_state import RestoreRefused
from captain_ros.policy.base import Policy
from captain_ros.research.re0.contracts import RepairContract
from captain_ros.research.re0.decision_points import (
    DecisionPointSource,
    RecordedEpisode,
    RobotPoint,
    rebuild_robot_side,
    rehydrate_policy,
    restore_decision_point,
)
from captain_ros.research.re0.hybrid import Admission, HybridPolicy
from captain_ros.research.re0.seats import make_seats, seat_profile
from captain_ros.research.re0.verify import PairedDraw

JOB_PATH = "captain_ros.research.re0.rollouts:rollout_job"
CHANNELS = {"success": 1.0, "return": 1.75}
"""Return channels and their bound R_bar on |G_teacher - G_student| (docs/learn-rl.md)."""
ARMS = ("teacher", "student")


class RolloutError(CaptainError):
    """A counterfactual rollout could not run with identity, or the teacher declined its
    contract in every teacher-arm rollout (the event is invalid either way)."""


@dataclass(frozen=True)
class EventSpec:
    """One audited event as plain data (it crosses process boundaries).

    Attributes:
        event_id: Unique id (ledger ``event_id``; seeds the shared draws).
        source: The recorded student episode folder.
        contract: The repair contract (``RepairContract.to_dict()``); its boundary is t.
        student / teacher: Seat specs resolved in the worker by :func:`make_seats`.
        out_dir: Where the rollout episode folders go.
        backend: ``mujoco`` or ``fake``.
        noise: A ``NoiseSpec`` as a dict for the stochastic mode (None: deterministic, the
            pairs then differ only by the policies' sampling seeds).
        channel: ``success`` (strict success 0/1) or ``return`` (R + summed costs).
        seat_options: Options of a model seat (``max_new_tokens``, ``temperature``, ``device``).
    """

    event_id: str
    source: str
    contract: dict[str, Any]
    student: str
    teacher: str
    out_dir: str
    backend: str = "mujoco"
    noise: dict[str, Any] | None = field(default_factory=dict)
    channel: str = "return"
    seat_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.channel not in CHANNELS:
            raise InvalidArgumentError(
                f"unknown channel {self.channel!r}; valid: {', '.join(CHANNELS)}"
            )
        if self.backend != "mujoco" and self.noise is not None:
            raise InvalidArgumentError(
                f"the {self.backend} backend has no stochastic mode: pass noise=None "
                "(pairs then differ only by the policies' sampling seeds)"
            )

    @property
    def t(self) -> int:
        return int(self.contract["boundary_t"])

    @property
    def return_bound(self) -> float:
        return CHANNELS[self.channel]


def noisy_backend(name: str, noise: dict[str, Any] | None) -> BackendConfig:
    """Backend ``name`` with MuJoCo's stochastic mode ``noise`` (a NoiseDraw dict; None: none)."""
    return BackendConfig(name, {"noise": noise} if noise else {})


def draw_seed(event_id: str, xi: int, part: str) -> int:
    """The seed of draw ``xi`` of ``event_id`` for one part (``noise`` / ``policy``)."""
    h = hashlib.sha256(f"{event_id}|{xi}|{part}".encode()).digest()
    return int.from_bytes(h[:4], "little") & 0x7FFFFFFF


def returns_of(record: EpisodeRecord, channel: str) -> float:
    if channel == "success":
        return float(record.strict_success)
    return float((record.return_R or 0.0) + (record.cost_total or 0.0))


_POINTS: dict[tuple[str, int, str], tuple[RecordedEpisode, Any, Any, Any, RobotPoint]] = {}


def _point(spec: EventSpec) -> tuple[RecordedEpisode, Any, Any, Any, RobotPoint]:
    """This process's robot for the event, with s_t rebuilt once (cached per process)."""
    key = (spec.source, spec.t, spec.backend)
    if key not in _POINTS:
        from captain_ros.evaluation.episode import build_robot

        release_points()  # one event at a time per worker: free the previous robot
        rec = RecordedEpisode.load(spec.source)
        task, backend, service = build_robot(
            rec.task, rec.seed, noisy_backend(spec.backend, rec.noted.get("noise"))
        )
        try:
            point = rebuild_robot_side(rec, spec.t, service, task)
        except BaseException:
            backend.close()
            raise
        _POINTS[key] = (rec, task, backend, service, point)
    return _POINTS[key]


def run_rollout(spec: EventSpec, arm: str, xi: int, out_dir: str | Path) -> EpisodeRecord:
    """One arm of draw ``xi``, in this process (a worker calls it through :func:`rollout_job`)."""
    if arm not in ARMS:
        raise InvalidArgumentError(f"unknown arm {arm!r}; valid: {', '.join(ARMS)}")
    from captain_ros.backends.mujoco.noise import NoiseDraw, NoiseSpec

    rec, task, backend, service, point = _point(spec)
    t0 = time.perf_counter()
    res = restore_decision_point(rec, spec.t, service, task, out_dir, point=point)
    if spec.noise is not None:
        backend.apply_noise(
            NoiseDraw(NoiseSpec(**spec.noise), draw_seed(spec.event_id, xi, "noise"))
        )
    student, teacher = make_seats(spec.student, spec.teacher, spec.seat_options)
    if not getattr(student, "stateless", False):  # a model's reply depends on the messages only
        rehydrate_policy(student, rec, spec.t)
    else:
        student.reset(rec.task, rec.seed)
    getattr(student, "reseed", lambda s: None)(draw_seed(spec.event_id, xi, "policy"))
    getattr(teacher, "reseed", lambda s: None)(draw_seed(spec.event_id, xi, "teacher"))
    policy: Policy = student
    if arm == "teacher":
        contract = RepairContract(
            **{**spec.contract, "allowed_symbols": tuple(spec.contract["allowed_symbols"])}
        )
        sha = str(rec.requests[spec.t - 1].get("context_sha256", ""))
        hybrid = HybridPolicy(
            student, teacher, [Admission(spec.event_id, rec.task, rec.seed, spec.t, sha, contract)]
        )
        hybrid.resume_at(rec.task, rec.seed, spec.t)
        policy = hybrid
    restore_s = time.perf_counter() - t0
    source = DecisionPointSource(service)
    record = run_episode(
        task,
        rec.seed,
        service,
        policy,
        Budgets(**rec.start["budgets"]),
        out_dir,
        options=EpisodeOptions(policy_name=policy.name, backend_name=spec.backend),
        privileged=source,
        observers=[source, RuntimeObserver(student)],  # the seat's engine, in the summary
        resume=res,
    )
    turns = [asdict(x) for x in getattr(policy, "turns", [])]
    injector = getattr(teacher, "injector", None) if arm == "teacher" else None
    extra = {
        "rollout": {
            "event_id": spec.event_id,
            "arm": arm,
            "xi": xi,
            "t": spec.t,
            "value": returns_of(record, spec.channel),
            "channel": spec.channel,
            "restore_s": restore_s,
            "turns": turns,
            # a faulty takeover's mistakes that struck in its segment (a harmful control whose
            # fault had no opportunity there is a clean takeover in that draw)
            "teacher_faults": [e.to_dict() for e in getattr(injector, "events", [])],
        }
    }
    return EpisodeRecord.from_dict({**record.to_dict(), "extra": {**record.extra, **extra}})


def rollout_job(job: dict[str, Any]) -> dict[str, Any]:
    """Entry point of a worker (plain dict in and out, like the evaluation's episode jobs)."""
    worker_environment()
    opts = job["options"]["rollout"]
    spec = EventSpec(**opts["event"])
    try:
        return run_rollout(spec, opts["arm"], int(opts["xi"]), job["out_dir"]).to_dict()
    except RestoreRefused as exc:
        return EpisodeRecord.error_record(
            job["task"],
            job["seed"],
            job["policy"],
            job["backend"],
            f"RestoreRefused: {exc}",
            job["out_dir"],
        ).to_dict()


def release_points() -> None:
    """Close the robots this process keeps for rebuilt decision points."""
    for key in list(_POINTS):
        _POINTS.pop(key)[2].close()


def student_job(job: dict[str, Any]) -> dict[str, Any]:
    """A whole student episode with decision points (the loop's collection, the benchmark's plain
    episodes): ``options`` may carry ``noise`` (a NoiseDraw dict) and ``teacher``/``admissions``
    (then the hybrid policy mu runs, for J(mu) against J(pi)), ``seat_options`` (a model seat's),
    ``budgets`` (a Budgets dict; default: the harness's) and ``profile`` (default: a model
    seat's trained profile, else ``default``; :func:`~captain_ros.research.re0.seats.seat_profile`)."""
    from captain_ros.evaluation.episode import build_robot
    from captain_ros.harness.sandbox.session import SessionConfig

    worker_environment()
    opts = dict(job.get("options") or {})
    noise = opts.get("noise")
    task, backend, service = build_robot(
        job["task"], int(job["seed"]), noisy_backend(job["backend"], noise)
    )
    try:
        student, teacher = make_seats(
            job["policy"], str(opts.get("teacher") or "takeover"), opts.get("seat_options")
        )
        policy: Policy = student
        profile = seat_profile(job["policy"], opts.get("profile"))
        admissions = [Admission.from_dict(a) for a in opts.get("admissions") or []]
        if admissions:
            policy = HybridPolicy(student, teacher, admissions)
        source = DecisionPointSource(service)
        budgets = Budgets(**opts["budgets"]) if opts.get("budgets") else Budgets()
        record = run_episode(
            task,
            int(job["seed"]),
            service,
            policy,
            budgets,
            job["out_dir"],
            options=EpisodeOptions(
                policy_name=policy.name, backend_name=job["backend"], profile=profile
            ),
            privileged=source,
            observers=[source, RuntimeObserver(student)],  # the seat's engine, in the summary
            session_config=SessionConfig(rng_seed=int(job["seed"])),
        )
        turns = [asdict(x) for x in getattr(policy, "turns", [])]
        return {**record.to_dict(), "extra": {**record.extra, "turns": turns}}
    finally:
        backend.close()


@dataclass
class PairedRunner:
    """``sample(first_xi, count)`` for :func:`~captain_ros.research.re0.verify.verify`: both arms of
    each draw, as jobs of the evaluation runner in ``workers`` processes (``workers <= 1``: in
    this process). Every rollout record is kept in :attr:`records`."""

    spec: EventSpec
    workers: int = 1
    candidate: str = ""
    records: list[EpisodeRecord] = field(default_factory=list)
    runner: Callable[..., list[EpisodeRecord]] = run_local

    def jobs(self, first_xi: int, count: int) -> list[EpisodeJob]:
        rec = RecordedEpisode.load(self.spec.source)
        out = Path(self.spec.out_dir) / self.spec.event_id
        return [
            EpisodeJob(
                rec.task,
                rec.seed,
                f"{arm}:{self.spec.teacher}" if arm == "teacher" else self.spec.student,
                self.spec.backend,
                str(out / f"xi{xi:03d}_{arm}"),
                {"rollout": {"event": asdict(self.spec), "arm": arm, "xi": xi}},
            )
            for xi in range(first_xi, first_xi + count)
            for arm in ARMS
        ]

    def __call__(self, first_xi: int, count: int) -> list[PairedDraw]:
        records = self.runner(self.jobs(first_xi, count), self.workers, JOB_PATH)
        self.records += records
        bad = [r for r in records if r.outcome == "error"]
        if bad:
            raise RolloutError(bad[0].error.strip().splitlines()[-1][:500])
        declined = self.declined()
        if declined:
            raise RolloutError(declined)
        by_xi: dict[int, dict[str, float]] = {}
        for r in records:
            ro = r.extra["rollout"]
            by_xi.setdefault(int(ro["xi"]), {})[ro["arm"]] = float(ro["value"])
        cand = self.candidate or f"{self.spec.teacher}@t{self.spec.t}"
        return [
            PairedDraw(cand, xi, by_xi[xi]["teacher"], by_xi[xi]["student"]) for xi in sorted(by_xi)
        ]

    def declined(self) -> str:
        """Why the teacher wrote no request of its segment in any teacher-arm rollout so far
        (empty when it wrote one in some draw): both arms were then the student, the paired
        differences say nothing about the repair, and escalating would only spend rollouts."""
        notes: list[str] = []
        for r in self.records:
            ro = r.extra.get("rollout") or {}
            if ro.get("arm") != "teacher":
                continue
            at = [x for x in ro.get("turns") or [] if int(x.get("t", 0)) == self.spec.t]
            if any(x.get("source") == "repair" for x in at):
                return ""
            notes += [str(x.get("note") or "no reply") for x in at] or [
                "no request at the boundary"
            ]
        if not notes:
            return ""
        return (
            f"the teacher declined the contract in all {len(notes)} teacher-arm rollouts "
            f"at request {self.spec.t} ({'; '.join(sorted(set(notes)))})"
        )

    def candidate_codes(self) -> list[str]:
        """SHA-256 of the teacher segment's code in each teacher-arm rollout so far (distinct,
        in order): the ledger's ``candidates``."""
        out: list[str] = []
        for r in self.records:
            ro = r.extra.get("rollout") or {}
            if ro.get("arm") != "teacher":
                continue
            lines = RecordedEpisode.load(r.out_dir).requests
            code = "\n".join(
                str(c.get("code", ""))
                for req in lines[self.spec.t - 1 : self.spec.t]
                for c in req.get("calls") or []
            )
            sha = hashlib.sha256(code.encode()).hexdigest()
            if sha not in out:
                out.append(sha)
        return out
