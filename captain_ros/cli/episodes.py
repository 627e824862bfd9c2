"""``captain run | eval | compare | report``: episodes in this process, evaluations, comparisons.

Arguments are checked before anything is built (task, seed, policy spec, output folder), so a bad
one costs a line on stderr, not a simulator start-up; see :mod:`captain_ros.cli.main` for the
error boundary shared by every subcommand.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from captain_ros.backends.registry import BACKENDS
from captain_ros.cli.display import Display, print_eval, print_summary
from captain_ros.core.errors import InvalidArgumentError, RecordError, UnknownNameError
from captain_ros.harness.episode.profiles import PROFILES


def check_policy_spec(spec: str) -> None:
    """Refuse a policy spec that cannot be built (unknown name, missing or malformed replay file)
    before any episode starts (the model itself is loaded later)."""
    from captain_ros.policy.factory import check_spec

    check_spec(spec)


def _add_policy_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="mujoco", choices=BACKENDS)
    p.add_argument(
        "--policy",
        default="scripted",
        help="scripted (default, no model) | openai | transformers | student[:NAME] "
        "(a student shipped in the package, teacher-free) | replay:FILE",
    )
    p.add_argument(
        "--base-url",
        dest="base_url",
        help="OpenAI-compatible endpoint, e.g. "
        "http://localhost:8000/v1 (default $CAPTAIN_BASE_URL)",
    )
    p.add_argument("--model", help="served model name (default $CAPTAIN_MODEL)")
    p.add_argument(
        "--model-folder",
        dest="model_folder",
        help="local model folder for --policy transformers (default: packaged SmolLM2)",
    )
    p.add_argument("--max-tokens", dest="max_tokens", type=int)
    p.add_argument("--max-new-tokens", dest="max_new_tokens", type=int)
    p.add_argument("--temperature", type=float)
    p.add_argument("--timeout-s", dest="timeout_s", type=float)
    p.add_argument("--device", help="cpu | cuda (transformers policy)")
    p.add_argument(
        "--engine",
        choices=("auto", "llamacpp", "transformers"),
        help="inference engine of --policy transformers: llamacpp (a GGUF through "
        "llama.cpp), transformers (eager PyTorch) or auto (the default: llamacpp "
        "where the model has a GGUF file, see docs/engines.md)",
    )
    p.add_argument(
        "--grammar",
        choices=("none", "envelope"),
        help="constrain the reply to the tool-call envelope (llamacpp engine)",
    )
    p.add_argument(
        "--draft-tokens",
        dest="draft_tokens",
        type=int,
        help="llamacpp engine: at most N tokens drafted by prompt lookup per decode step "
        "and verified in the same batch (the replies do not change; default 8, "
        "0 = off; docs/engines.md)",
    )
    p.add_argument(
        "--threads",
        type=int,
        help="CPU threads of the engine (default $OMP_NUM_THREADS, else all cores; "
        "evaluation workers use 1 each)",
    )
    p.add_argument("--max-requests", dest="max_requests", type=int)
    p.add_argument("--max-wall-s", dest="max_wall_s", type=float)
    p.add_argument("--max-physical-actions", dest="max_physical_actions", type=int)
    p.add_argument(
        "--profile",
        choices=("auto", *PROFILES),
        help="prompt profile: default (the full harness text), compact (few tokens for "
        "a small student), helpers (compact, the expert's helper library defined "
        "in the session) or student (helpers without the API reference, for a "
        "trained student); auto (the default): the one the --model-folder student "
        "was trained with, else default",
    )
    p.add_argument("--no-bag", dest="no_bag", action="store_true", help="do not record a bag")
    p.add_argument(
        "--strict-sandbox",
        dest="strict_sandbox",
        action="store_true",
        help="refuse to start when an OS isolation layer of the policy sandbox is unavailable "
        "(default: run with the layers available and record them)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a non-empty --out folder (refused otherwise)",
    )
    p.add_argument(
        "--segmenter",
        choices=("default", "sam"),
        help="perception segmenter (default: weight-free; sam: --sam-folder)",
    )
    p.add_argument("--sam-folder", dest="sam_folder", help="local SAM checkpoint folder")
    p.add_argument(
        "--pointer",
        choices=("default", "vlm_local", "vlm_endpoint"),
        help="text -> points: weight-free, a local VLM folder, or an OpenAI-compatible "
        "endpoint serving a Molmo-style model (key: $CAPTAIN_VLM_API_KEY)",
    )
    p.add_argument("--vlm-folder", dest="vlm_folder", help="local pointing model folder")
    p.add_argument("--vlm-url", dest="vlm_url", help="pointing endpoint, e.g. http://host:8000/v1")
    p.add_argument("--vlm-model", dest="vlm_model", help="served pointing model name")
    p.add_argument(
        "--vlm-coords",
        dest="vlm_coords",
        choices=("auto", "percent", "permille", "pixels", "fraction"),
    )


def cmd_run(ns: argparse.Namespace) -> int:
    from captain_ros.cli.hw import check_rig_args
    from captain_ros.evaluation.config import EpisodeConfig
    from captain_ros.evaluation.episode import check_episode_args, run_one

    check_rig_args(ns)
    config = EpisodeConfig.from_cli(ns)  # task, seed and every option validated here, once
    check_episode_args(config)
    display = None if ns.json else Display(sys.stdout, config.task, config.seed, ns.policy)
    summary = run_one(config, on_event=display.event if display else None)
    if ns.json:
        print(json.dumps(summary.to_dict(), indent=2, default=str))
    else:
        print_summary(summary, sys.stdout)
    return 0 if summary.outcome != "error" else 1


def _tasks(text: str, backend: str | None = None) -> list[str]:
    from captain_ros.tasks import get_task, task_names

    known = task_names(backend)
    if text == "all":
        return known
    names, unknown = [], []
    for t in (t.strip() for t in text.split(",") if t.strip()):
        try:
            names.append(get_task(t, backend).name)  # robosuite: `lift` is robosuite_lift
        except UnknownNameError:
            unknown.append(t)
    if unknown:
        raise UnknownNameError("task", ", ".join(unknown), [*known, "all"])
    return names


def cmd_eval(ns: argparse.Namespace) -> int:
    from captain_ros.evaluation.config import EpisodeConfig, RecordingConfig
    from captain_ros.evaluation.runner import evaluate, make_jobs, parse_seeds
    from captain_ros.policy.students import check_student_task

    tasks = _tasks(ns.task, ns.backend)
    check_policy_spec(ns.policy)
    for t in tasks:
        check_student_task(ns.policy, t)
    config = EpisodeConfig.from_cli(ns, task=tasks[0], seed=0)  # each job: its task and seed
    # eval folders stay light: `captain report DIR` renders a report later
    config = config.replace(
        recording=RecordingConfig(bag=config.recording.bag, report=False, overwrite=ns.overwrite)
    )
    if ns.seeds == "heldout":
        from captain_ros.tasks import get_task

        jobs = []
        for t in tasks:
            seeds = list(get_task(t, ns.backend).heldout_seeds)[: ns.n]
            jobs += make_jobs([t], seeds, ns.out, config)
    else:
        jobs = make_jobs(tasks, parse_seeds(ns.seeds), ns.out, config)
    job_path = (
        "captain_ros.evaluation.selftest:echo_job"
        if ns.check
        else "captain_ros.evaluation.episode:run_job"
    )
    done = {"n": 0}
    t0 = time.perf_counter()

    def progress(ep: Any) -> None:
        done["n"] += 1
        mark = "ok " if ep.strict_success else ("host" if ep.host_success else "FAIL")
        if not ns.json:
            print(
                f"[{done['n']:>3}/{len(jobs)}] {time.perf_counter() - t0:7.1f}s {ep.task:<13} "
                f"seed {ep.seed:<5} {mark:<4} {ep.outcome:<20} req {ep.requests:>2} "
                f"act {ep.physical_actions:>3} {ep.wall_s:6.1f}s",
                flush=True,
            )

    report = evaluate(
        jobs, ns.out, workers=ns.workers, ray_address=ns.ray, job_path=job_path, on_result=progress
    )
    if ns.json:
        print(
            json.dumps({k: v for k, v in report.items() if k != "episodes"}, indent=2, default=str)
        )
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
        print(
            f"{res['metric']} on {res['paired']} paired episodes: A {res['rate_a']['rate']:.1%} vs "
            f"B {res['rate_b']['rate']:.1%}; only A {m['only_a']}, only B {m['only_b']}; "
            f"exact McNemar p = {m['p_value']:.4g}"
        )
    return 0


def cmd_report(ns: argparse.Namespace) -> int:
    from captain_ros.report.html import write_report

    check_episode_folder(ns.dir)
    print(write_report(ns.dir))
    return 0


def check_episode_folder(folder: str) -> None:
    """Refuse a folder that holds no episode, or whose ``summary.json`` is corrupt (a report of
    it would be a page of unknowns). An episode that ended without a summary (a crash) still has
    its trajectory, and is reported from it."""
    from pathlib import Path

    from captain_ros.core.episode_folder import EpisodeFiles

    d = Path(folder)
    if not d.is_dir():
        raise FileNotFoundError(2, "No such episode folder", str(d))
    files = EpisodeFiles(d)
    summary, trajectory = files.summary, files.trajectory
    if summary.exists():
        try:
            data = files.read_summary()
        except RecordError as exc:
            why = " ".join(str(exc).removeprefix(f"{summary}: ").split())[:100]
            raise InvalidArgumentError(
                f"{summary} is corrupt ({why}); it is not an episode summary"
            ) from None
        if not data.get("task"):
            raise InvalidArgumentError(f"{summary} is not an episode summary (no task)")
    elif not trajectory.is_file() or trajectory.stat().st_size == 0:
        raise InvalidArgumentError(f"{d} holds no episode (no summary.json, no trajectory.jsonl)")


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """``run``, ``eval``, ``compare`` and ``report`` (``common``: the shared --debug flag)."""
    from captain_ros.cli.hw import add_rig_args

    p = sub.add_parser(
        "run", help="run one episode in this process with live receipts", parents=[common]
    )
    p.add_argument("--task", default="pick_place")
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--out", default="runs/episode")
    p.add_argument("--json", action="store_true", help="print the summary as JSON only")
    _add_policy_args(p)
    add_rig_args(p)  # --config/--can/--emulate/--rig of --backend piper (ros_arm: --config)
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser(
        "eval", help="evaluate over seeds in parallel (processes or Ray)", parents=[common]
    )
    p.add_argument("--task", default="pick_place", help="task name, comma list, or 'all'")
    p.add_argument("--seeds", default="heldout", help="A-B, a comma list, or 'heldout' (first --n)")
    p.add_argument("--n", type=int, default=10, help="held-out seeds per task with --seeds heldout")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--ray", default=None, help="Ray cluster address ('local' starts one here)")
    p.add_argument(
        "--check",
        action="store_true",
        help="run a no-op job per seed (checks the workers/cluster, not the policy)",
    )
    p.add_argument("--out", default="runs/eval")
    p.add_argument("--json", action="store_true")
    _add_policy_args(p)
    p.set_defaults(fn=cmd_eval)
    p = sub.add_parser(
        "compare", help="paired comparison of two eval runs (exact McNemar)", parents=[common]
    )
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.add_argument("--metric", default="strict_success", choices=("strict_success", "host_success"))
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_compare)
    p = sub.add_parser("report", help="render report.html of an episode folder", parents=[common])
    p.add_argument("dir")
    p.set_defaults(fn=cmd_report)
