"""The one episode record: :class:`EpisodeRecord` (``summary.json``), built by the harness loop.

Every front end (``captain run``, evaluation workers, the ROS policy node) runs an episode through
:class:`~captain_ros.harness.episode.setup.EpisodeSetup` and gets this record back; ``captain eval``
collects them, ``captain compare`` pairs them, the report and the learning layer read them. Times
are seconds and split without overlap: ``wall_s = model_s + backend_s + harness_s``.

Learning fields (simulation only; the policy never sees them): the terminal return ``return_R``,
the summed per-request costs ``cost_total`` (CaPtain section 3.3, :mod:`captain_ros.harness.record.returns`)
and ``privileged`` (a ``privileged.jsonl`` with one hidden state record before every request was
written beside ``trajectory.jsonl``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles

OUTCOMES = (
    "success_with_finish",
    "missed_finish",
    "false_finish",
    "budget_exhausted",
    "other_failure",
    "error",
)
"""The paper's five terminal labels, plus ``error`` for an episode whose runner crashed."""

_LEGACY_KEYS = {
    "finish_called": "finished",
    "tokens_prompt": "prompt_tokens",
    "tokens_completion": "completion_tokens",
}


def outcome_label(host_success: bool, finished: bool, budget_exhausted: str | None) -> str:
    """The paper's terminal labels (success > missed finish > ... > false finish)."""
    if host_success:
        return "success_with_finish" if finished else "missed_finish"
    if finished:
        return "false_finish"
    return "budget_exhausted" if budget_exhausted else "other_failure"


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode's result.

    Attributes:
        task / seed / policy / backend: What was run.
        outcome: One of :data:`OUTCOMES`.
        host_success: The task predicate on the final state (``False`` where unknown).
        strict_success: Host success and an accepted ``finish()``.
        finished: ``finish()`` was accepted by the completion gate.
        gate_rejections: ``finish()`` calls the gate rejected.
        gate_reason: The gate's words on the last ``finish()`` call, built from the measurements
            the episode recorded (e.g. "the cube rests on the plate (0.4 cm from its centre)"):
            what an operator can trust ("" when ``finish()`` was never called).
        finish_summary: The policy's own words in that call, unchecked (a student may copy a
            summary from its data whatever it measured; the gate's reason is the measurement).
        end_reason: ``finish`` | ``no_tool_call`` | ``budget:<name>`` | ``missed_finish_stop`` |
            ``policy_error`` | ``stop:<reason>`` (an observer ended it, e.g. a cancel).
        budget_exhausted: The budget that ran out (``requests``, ``wall_time``,
            ``physical_actions``, ``context_tokens``, ``early_stop``), if any.
        requests / physical_actions / failed_actions / robot_calls: Counts of this episode only.
        wall_s: Wall time of the episode [s]; ``model_s`` waiting for the policy, ``backend_s``
            inside robot calls (motion, perception), ``harness_s`` the rest (session, rendering,
            bookkeeping) [s].
        prompt_tokens / completion_tokens: Token usage reported by the policy backend.
        session_restarts / sandbox_violations / malformed_replies: Harness events.
        milestones: Fraction of the task's milestones holding at the end (``None``: unknown).
        return_R: Terminal return (sim only, ``None`` otherwise).
        cost_total: Sum of the per-request costs c_t (sim only, ``None`` otherwise).
        privileged: ``privileged.jsonl`` was written (per-request hidden state records).
        bag_path: The episode's bag ("" when none); ``bag_complete`` False when the recorder died
            or missed part of the episode.
        out_dir: Episode folder.
        error: Traceback text for ``outcome == "error"``.
        extra: Front-end specific additions (kept, never interpreted here).
    """

    task: str
    seed: int
    policy: str = ""
    backend: str = ""
    outcome: str = "other_failure"
    host_success: bool = False
    strict_success: bool = False
    finished: bool = False
    gate_rejections: int = 0
    gate_reason: str = ""
    finish_summary: str = ""
    end_reason: str = ""
    budget_exhausted: str | None = None
    requests: int = 0
    physical_actions: int = 0
    failed_actions: int = 0
    robot_calls: int = 0
    wall_s: float = 0.0
    model_s: float = 0.0
    backend_s: float = 0.0
    harness_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    session_restarts: int = 0
    sandbox_violations: int = 0
    malformed_replies: int = 0
    milestones: float | None = None
    return_R: float | None = None
    cost_total: float | None = None
    privileged: bool = False
    bag_path: str = ""
    bag_complete: bool = True
    out_dir: str = ""
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}; valid: {', '.join(OUTCOMES)}")

    @property
    def false_finish(self) -> bool:
        """``finish()`` was accepted on a failed state."""
        return self.outcome == "false_finish"

    @property
    def harness_overhead_per_request_s(self) -> float:
        """Harness time outside model and backend per request [s]."""
        return self.harness_s / max(1, self.requests)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeRecord:
        """Parse a ``summary.json`` / ``eval.json`` entry (older layouts included: their
        ``finish_called``/``tokens_*`` keys are renamed, and an evaluation summary's
        ``harness_s``, which then included backend time, loses it)."""
        data = dict(data)
        legacy_eval = "tokens_prompt" in data
        for old, new in _LEGACY_KEYS.items():
            if old in data:
                data.setdefault(new, data.pop(old))
        if legacy_eval and "harness_s" in data:
            data["harness_s"] = max(
                0.0, float(data["harness_s"]) - float(data.get("backend_s", 0.0))
            )
        names = {f.name for f in fields(cls)}
        extra = dict(data.pop("extra", None) or {})
        extra.update({k: v for k, v in data.items() if k not in names and k != "false_finish"})
        known = {k: v for k, v in data.items() if k in names}
        known.setdefault("task", "")
        known.setdefault("seed", 0)
        return cls(**known, extra=extra)

    def write(self, path: str | Path) -> None:
        """Write ``summary.json`` (atomically: a crash never leaves half a file)."""
        p = Path(path)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")
        tmp.replace(p)

    @classmethod
    def error_record(
        cls, task: str, seed: int, policy: str, backend: str, error: str, out_dir: str = ""
    ) -> EpisodeRecord:
        """The record of an episode whose runner crashed before the harness could finish it."""
        return cls(task, seed, policy, backend, "error", out_dir=out_dir, error=error[-4000:])


def load_record(folder: str | Path) -> EpisodeRecord:
    """The record of an episode folder (its ``summary.json``)."""
    return EpisodeRecord.from_dict(EpisodeFiles.of(folder).read_summary())
