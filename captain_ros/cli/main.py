"""``captain``: the command line.

Subcommands:
- ``captain run --task T --seed S [--backend mujoco|fake] [--policy scripted|openai|transformers|replay:FILE]
  --out DIR [--json]``: one episode in this process with live receipts and a final summary.
- ``captain eval --task T[,T2|all] --seeds A-B --workers N [--ray ADDRESS] --out DIR``: many episodes.
- ``captain compare RUN_A RUN_B``: paired comparison of two evaluations (exact McNemar).
- ``captain report DIR``: (re)render an episode folder's report.html.
- ``captain up ...``: the ROS graph in one process (``captain_ros.ros.up``).
- ``captain hw check [--config F] [--can can0] [--emulate]``: hardware bring-up checks, no motion.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from captain_ros.cli.display import Display, print_eval, print_summary


def _policy_options(ns: argparse.Namespace) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    for k in ("base_url", "model", "model_folder", "max_tokens", "max_new_tokens", "temperature",
              "timeout_s", "device", "max_requests", "max_wall_s", "max_physical_actions"):
        v = getattr(ns, k, None)
        if v is not None:
            opts[k] = v
    if getattr(ns, "no_bag", False):
        opts["record_bag"] = False
    if getattr(ns, "backend", None) == "piper":
        from captain_ros.cli.hw import rig_options

        opts["backend_options"] = rig_options(ns)
    return opts


def _add_policy_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="mujoco", choices=("mujoco", "fake", "piper"))
    p.add_argument("--policy", default="scripted",
                   help="scripted (default, no model) | openai | transformers | replay:FILE")
    p.add_argument("--base-url", dest="base_url", help="OpenAI-compatible endpoint, e.g. "
                   "http://localhost:8000/v1 (default $CAPTAIN_BASE_URL)")
    p.add_argument("--model", help="served model name (default $CAPTAIN_MODEL)")
    p.add_argument("--model-folder", dest="model_folder",
                   help="local model folder for --policy transformers (default: packaged SmolLM2)")
    p.add_argument("--max-tokens", dest="max_tokens", type=int)
    p.add_argument("--max-new-tokens", dest="max_new_tokens", type=int)
    p.add_argument("--temperature", type=float)
    p.add_argument("--timeout-s", dest="timeout_s", type=float)
    p.add_argument("--device", help="cpu | cuda (transformers policy)")
    p.add_argument("--max-requests", dest="max_requests", type=int)
    p.add_argument("--max-wall-s", dest="max_wall_s", type=float)
    p.add_argument("--max-physical-actions", dest="max_physical_actions", type=int)
    p.add_argument("--no-bag", dest="no_bag", action="store_true", help="do not record a bag")


def cmd_run(ns: argparse.Namespace) -> int:
    from captain_ros.evaluation.episode import run_one

    display = None if ns.json else Display(sys.stdout, ns.task, ns.seed, ns.policy)
    summary = run_one(ns.task, ns.seed, ns.policy, ns.backend, ns.out, _policy_options(ns),
                      on_event=display.event if display else None)
    if ns.json:
        print(json.dumps(summary.to_dict(), indent=2, default=str))
    else:
        print_summary(summary, sys.stdout)
    return 0 if summary.outcome != "error" else 1


def _tasks(text: str) -> list[str]:
    from captain_ros.tasks import TASKS

    if text == "all":
        return list(TASKS)
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in names if t not in TASKS]
    if unknown:
        raise SystemExit(f"unknown task(s) {', '.join(unknown)}; valid: {', '.join(TASKS)}, all")
    return names


def cmd_eval(ns: argparse.Namespace) -> int:
    from captain_ros.evaluation.runner import evaluate, make_jobs, parse_seeds

    tasks = _tasks(ns.task)
    if ns.seeds == "heldout":
        from captain_ros.tasks import get_task

        jobs = []
        for t in tasks:
            seeds = list(get_task(t).heldout_seeds)[: ns.n]
            jobs += make_jobs([t], seeds, ns.policy, ns.backend, ns.out, _policy_options(ns))
    else:
        jobs = make_jobs(tasks, parse_seeds(ns.seeds), ns.policy, ns.backend, ns.out,
                         _policy_options(ns))
    job_path = "captain_ros.evaluation.selftest:echo_job" if ns.check else \
        "captain_ros.evaluation.episode:run_job"
    done = {"n": 0}
    t0 = time.perf_counter()

    def progress(ep: Any) -> None:
        done["n"] += 1
        mark = "ok " if ep.strict_success else ("host" if ep.host_success else "FAIL")
        if not ns.json:
            print(f"[{done['n']:>3}/{len(jobs)}] {time.perf_counter() - t0:7.1f}s {ep.task:<13} "
                  f"seed {ep.seed:<5} {mark:<4} {ep.outcome:<20} req {ep.requests:>2} "
                  f"act {ep.physical_actions:>3} {ep.wall_s:6.1f}s", flush=True)

    report = evaluate(jobs, ns.out, workers=ns.workers, ray_address=ns.ray, job_path=job_path,
                      on_result=progress)
    if ns.json:
        print(json.dumps({k: v for k, v in report.items() if k != "episodes"}, indent=2, default=str))
    else:
        print_eval(report, sys.stdout)
        print(f"wrote {os.path.join(ns.out, 'eval.json')} and eval.png")
    return 0


def cmd_compare(ns: argparse.Namespace) -> int:
    from captain_ros.evaluation.summary import compare, load_episodes

    res = compare(load_episodes(ns.run_a), load_episodes(ns.run_b), ns.metric)
    if ns.json:
        print(json.dumps(res, indent=2))
    else:
        m = res["mcnemar"]
        print(f"{res['metric']} on {res['paired']} paired episodes: A {res['rate_a']['rate']:.1%} vs "
              f"B {res['rate_b']['rate']:.1%}; only A {m['only_a']}, only B {m['only_b']}; "
              f"exact McNemar p = {m['p_value']:.4g}")
    return 0


def cmd_report(ns: argparse.Namespace) -> int:
    from captain_ros.report.html import write_report

    print(write_report(ns.dir))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="captain", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run one episode with live receipts")
    p.add_argument("--task", default="pick_place")
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--out", default="runs/episode")
    p.add_argument("--json", action="store_true", help="print the summary as JSON only")
    _add_policy_args(p)
    from captain_ros.cli.hw import add_parser as add_hw_parser
    from captain_ros.cli.hw import add_rig_args

    add_rig_args(p)  # --config/--can/--emulate/--rig of --backend piper
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("eval", help="evaluate over seeds in parallel (processes or Ray)")
    p.add_argument("--task", default="pick_place", help="task name, comma list, or 'all'")
    p.add_argument("--seeds", default="heldout", help="A-B, a comma list, or 'heldout' (first --n)")
    p.add_argument("--n", type=int, default=10, help="held-out seeds per task with --seeds heldout")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--ray", default=None, help="Ray cluster address ('local' starts one here)")
    p.add_argument("--check", action="store_true",
                   help="run a no-op job per seed (checks the workers/cluster, not the policy)")
    p.add_argument("--out", default="runs/eval")
    p.add_argument("--json", action="store_true")
    _add_policy_args(p)
    p.set_defaults(fn=cmd_eval)
    p = sub.add_parser("compare", help="paired comparison of two eval runs (exact McNemar)")
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.add_argument("--metric", default="strict_success", choices=("strict_success", "host_success"))
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_compare)
    p = sub.add_parser("report", help="render report.html of an episode folder")
    p.add_argument("dir")
    p.set_defaults(fn=cmd_report)
    add_hw_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "up":  # the ROS graph in one process: owned by captain_ros.ros.up
        from captain_ros.ros.up import main as up_main

        return int(up_main(argv[1:]) or 0)
    if argv[:2] == ["learn", "critic"]:  # issue 13's critic (until a `captain learn` group holds it)
        from captain_ros.cli.learn_critic import main as critic_main

        return critic_main(argv[2:])
    if argv[:2] == ["learn", "re0"]:  # issue 14's RE-0 generation (same hook as the critic's)
        from captain_ros.cli.learn_re0 import main as re0_main

        return re0_main(argv[2:])
    os.environ.setdefault("MUJOCO_GL", "egl")
    ns = build_parser().parse_args(argv)
    return int(ns.fn(ns))


if __name__ == "__main__":
    raise SystemExit(main())
