"""Terminal display of ``captain run`` / ``captain eval``: live receipts, progress, summaries.

Plain text (no curses) so it works in CI logs and over ssh; colour only on a TTY.
"""

from __future__ import annotations

import time
from typing import Any, TextIO

from captain_ros.harness.record.episode_record import EpisodeRecord


class Display:
    """Prints request headers, the policy's reasoning (one line) and every receipt as it happens."""

    def __init__(self, stream: TextIO, task: str, seed: int, policy: str) -> None:
        self.stream = stream
        self.color = hasattr(stream, "isatty") and stream.isatty()
        self.t0 = time.perf_counter()
        self.request = 0
        self.physical = 0
        print(f"captain run: task {task}, seed {seed}, policy {policy}", file=stream, flush=True)

    def _c(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def event(self, kind: str, data: dict[str, Any]) -> None:
        t = time.perf_counter() - self.t0
        if kind == "request":
            self.request = int(data["t"])
            print(
                self._c(
                    f"\n[{t:6.1f}s] request {self.request} (actions so far {self.physical})", "1"
                ),
                file=self.stream,
                flush=True,
            )
        elif kind == "reply":
            text = " ".join(str(data.get("reasoning") or "").split())
            if text:
                print(f"  > {text[:160]}", file=self.stream, flush=True)
        elif kind == "receipt":
            if data.get("executed"):
                self.physical += 1
            ok = data.get("success")
            mark = (
                self._c("ok", "32")
                if ok
                else self._c(str(data.get("failure_category") or "FAILED"), "31")
            )
            receipt = " ".join(str(data.get("receipt") or data.get("message") or "").split())
            print(
                f"  [{t:6.1f}s] {data.get('capability')}: {mark} | {receipt[:200]}",
                file=self.stream,
                flush=True,
            )


def print_summary(s: EpisodeRecord, stream: TextIO) -> None:
    """The final summary of one episode."""
    lines = [
        "",
        f"outcome          {s.outcome}",
        f"host success     {s.host_success}",
        f"strict success   {s.strict_success}",
        f"requests         {s.requests}",
        f"physical actions {s.physical_actions}",
        *_finish_lines(s),
        f"wall time        {s.wall_s:.1f} s = model {s.model_s:.1f} s + robot calls "
        f"{s.backend_s:.1f} s + harness {s.harness_s:.1f} s",
        f"episode folder   {s.out_dir} (summary.json, trajectory.jsonl, report.html"
        + (", privileged.jsonl" if s.privileged else "")
        + (", bag/" if s.bag_path else "")
        + ")",
    ]
    if s.return_R is not None:
        lines.append(f"return (sim)     R = {s.return_R:+.3f}, costs {s.cost_total or 0.0:+.3f}")
    if s.extra.get("bag_error"):
        lines.append(f"bag              not written: {s.extra['bag_error']}")
    if s.error:
        lines.append(f"error            {s.error.strip().splitlines()[-1]}")
    print("\n".join(lines), file=stream, flush=True)


def _finish_lines(s: EpisodeRecord) -> list[str]:
    """The gate's verdict in its own measured words, then the policy's unchecked summary."""
    if not s.gate_reason:
        return [f"finish()         {'accepted' if s.finished else 'never called'}"]
    verdict = "accepted" if s.finished else f"rejected {s.gate_rejections}x"
    lines = [f"gate             {verdict}: {s.gate_reason} (from the episode's measurements)"]
    if s.finish_summary.strip():
        words = " ".join(s.finish_summary.split())
        lines.append(f"policy's words   {words[:160]!r} (its claim, not checked)")
    return lines


def print_eval(report: dict[str, Any], stream: TextIO) -> None:
    """Per-task table of an evaluation."""
    print(
        f"\n{'task':<14}{'n':>4}  {'host success':<24}{'strict success':<24}{'false fin':>9}"
        f"{'req/ep':>8}{'act/ep':>8}{'ovh ms/req':>11}",
        file=stream,
    )
    rows = dict(report["per_task"])
    if len(rows) > 1:
        rows["ALL"] = report["overall"]
    for task, a in rows.items():
        h, s = a["host_success"], a["strict_success"]
        print(
            f"{task:<14}{a['episodes']:>4}  "
            f"{100 * h['rate']:5.1f}% [{100 * h['ci_low']:4.1f},{100 * h['ci_high']:5.1f}]   "
            f"{100 * s['rate']:5.1f}% [{100 * s['ci_low']:4.1f},{100 * s['ci_high']:5.1f}]   "
            f"{a['false_finish']['successes']:>9}{a['requests_per_episode']['mean']:8.1f}"
            f"{a['physical_actions_per_episode']['mean']:8.1f}"
            f"{1000 * a['harness_overhead_per_request_s']['median']:11.1f}",
            file=stream,
        )
    print(
        f"{report['jobs']} episodes in {report['wall_s']:.0f} s "
        f"({report['episodes_per_hour']:.0f} episodes/hour, {report['workers']} workers)",
        file=stream,
        flush=True,
    )
