"""``captain coevolve``: two humanoids carrying one payload (CoEvolve).

- ``captain coevolve run --layout base|l2|l3|l4 --roles scripted|openai|transformers [--memory DIR]
  --out DIR``: one run with a live line per transaction; writes ``run.jsonl``, ``summary.json``,
  ``memory/`` and ``report.html`` into ``--out``.
- ``captain coevolve eval --layout base --conditions coevolve,flat,nomem,bank --n 10 --out DIR``: n
  runs per condition and a table of SR / VP / EA / PAUC, transactions and termination labels.
- ``captain coevolve report DIR``: (re)render a run folder's ``report.html``.

Errors print one line on stderr and exit with status 2 (``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.core.errors import CaptainError


def _role_options(ns: argparse.Namespace) -> dict[str, Any]:
    out = {}
    for k in (
        "base_url",
        "model",
        "model_folder",
        "max_tokens",
        "max_new_tokens",
        "temperature",
        "timeout_s",
        "device",
    ):
        v = getattr(ns, k, None)
        if v is not None:
            out[k] = v
    return out


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layout", default="base", help="base | l2 | l3 | l4 (eval: comma list)")
    p.add_argument("--roles", default="scripted", choices=("scripted", "openai", "transformers"))
    p.add_argument(
        "--memory", default="", help="bank folder to start from (transfer); empty: fresh"
    )
    p.add_argument("--budget", type=int, default=80, help="physical transactions (default 80)")
    p.add_argument("--noise", type=float, default=1.0, help="locomotion tracking-error scale")
    p.add_argument("--base-url", dest="base_url", help="OpenAI-compatible endpoint (roles openai)")
    p.add_argument("--model", help="served model name (roles openai)")
    p.add_argument("--model-folder", dest="model_folder", help="local model (roles transformers)")
    p.add_argument("--max-tokens", dest="max_tokens", type=int)
    p.add_argument("--max-new-tokens", dest="max_new_tokens", type=int)
    p.add_argument("--temperature", type=float)
    p.add_argument("--timeout-s", dest="timeout_s", type=float)
    p.add_argument("--device")
    p.add_argument("--json", action="store_true", help="print the result as JSON only")
    p.add_argument("--debug", action="store_true", help="show tracebacks")


def _live(ev: dict[str, Any]) -> None:
    if ev["type"] == "transaction":
        e = ev["evidence"]
        mark = "ACCEPT" if ev["accepted"] else "REJECT"
        print(
            f"T{ev['transaction']:>3} {ev['phase']:<18} {ev['z']['primitive']:<29} {mark} "
            f"{e['summary'][:110]}",
            flush=True,
        )
    elif ev["type"] == "revision":
        scope = (ev.get("revision") or {}).get("scope", "-")
        print(
            f"      revision {scope}: {'approved' if ev['approved'] else 'refused'} "
            f"{'; '.join(ev.get('problems') or [])[:100]}",
            flush=True,
        )
    elif ev["type"] == "prevalidation":
        print(f"      refused before dispatch ({ev['stage']}): {ev['reason'][:110]}", flush=True)


def cmd_run(ns: argparse.Namespace) -> int:
    from captain_ros.research.coevolve.evaluate import run_one
    from captain_ros.research.coevolve.records import RunConfig
    from captain_ros.research.coevolve.report import write_report

    if ns.memory and not Path(ns.memory).is_dir():
        raise CaptainError(f"memory bank folder {ns.memory!r} does not exist")
    cfg = RunConfig(
        layout=ns.layout,
        seed=ns.seed,
        budget=ns.budget,
        typed_revision=not ns.flat,
        memory=not ns.no_memory,
        memory_in=ns.memory,
        noise=ns.noise,
    )
    s = run_one(cfg, ns.roles, ns.out, _role_options(ns), None if ns.json else [_live])
    report = write_report(ns.out)
    if ns.json:
        print(json.dumps(s.to_dict(), indent=1, default=str))
    else:
        o = s.outcome
        print(
            f"{s.label}: {o.milestones_final}/{o.milestones_total} milestones, {o.accepted}/{o.charged} "
            f"transactions accepted, {s.rollbacks} rollbacks, {s.revisions_approved}/{s.revisions} "
            f"revisions approved, {s.drops} drops, {s.wall_s:.1f} s wall, {s.sim_s:.1f} s simulated"
        )
        print(f"wrote {EpisodeFiles.of(ns.out).summary} and {report}")
    return 0


def _seeds(text: str, n: int) -> list[int]:
    if "-" in text:
        a, b = (int(x) for x in text.split("-", 1))
        return list(range(a, b + 1))[:n]
    if "," in text:
        return [int(x) for x in text.split(",")][:n]
    return list(range(int(text), int(text) + n))


def cmd_eval(ns: argparse.Namespace) -> int:
    from captain_ros.research.coevolve.evaluate import CONDITIONS, evaluate, table
    from captain_ros.research.coevolve.records import RunConfig

    conds = [c.strip() for c in ns.conditions.split(",") if c.strip()]
    bad = [c for c in conds if c not in CONDITIONS]
    if bad:
        raise CaptainError(f"unknown condition(s) {', '.join(bad)}; valid: {', '.join(CONDITIONS)}")
    if "bank" in conds and not (ns.memory and Path(ns.memory).is_dir()):
        raise CaptainError(
            "the bank condition needs an existing --memory DIR (e.g. a run's memory/ folder)"
        )
    rows = []
    for layout in [x.strip() for x in ns.layout.split(",") if x.strip()]:
        base = RunConfig(layout=layout, budget=ns.budget, noise=ns.noise)
        for c in conds:

            def progress(s: Any, c: str = c) -> None:
                if not ns.json:
                    print(
                        f"  {c:<9} {s.config.layout:<5} seed {s.config.seed:<5} {s.label:<8} "
                        f"{s.outcome.accepted:>3}/{s.outcome.charged:<3} {s.wall_s:6.1f}s",
                        flush=True,
                    )

            res = evaluate(
                base,
                c,
                _seeds(ns.seeds, ns.n),
                ns.roles,
                ns.out,
                ns.memory,
                ns.workers,
                _role_options(ns),
                progress,
            )
            rows.append(res.row())
    Path(ns.out).mkdir(parents=True, exist_ok=True)
    (Path(ns.out) / "eval.json").write_text(json.dumps(rows, indent=1))
    print(json.dumps(rows, indent=1) if ns.json else table(rows))
    return 0


def cmd_report(ns: argparse.Namespace) -> int:
    from captain_ros.research.coevolve.report import write_report

    print(write_report(ns.dir))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="captain coevolve", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="one run with live transactions")
    _common(p)
    p.add_argument("--seed", type=int, default=1000, help="simulator seed (held-out: 1000-1999)")
    p.add_argument("--out", default="runs/coevolve")
    p.add_argument(
        "--flat", action="store_true", help="flat reflective repair instead of typed revision"
    )
    p.add_argument(
        "--no-memory", dest="no_memory", action="store_true", help="no strategy/exemplar memory"
    )
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("eval", help="n runs per condition and the metrics table")
    _common(p)
    p.add_argument("--conditions", default="coevolve,flat,nomem")
    p.add_argument("--n", type=int, default=10, help="runs per condition")
    p.add_argument("--seeds", default="1000", help="first seed, A-B or a comma list")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--out", default="runs/coevolve_eval")
    p.set_defaults(fn=cmd_eval)
    p = sub.add_parser("report", help="render report.html of a run folder")
    p.add_argument("dir")
    p.add_argument("--debug", action="store_true")
    p.set_defaults(fn=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    try:
        return int(ns.fn(ns))
    except (CaptainError, OSError, ValueError) as exc:
        if getattr(ns, "debug", False):
            raise
        print(f"captain coevolve: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
