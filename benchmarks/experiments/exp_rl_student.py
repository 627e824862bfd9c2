"""Issue 35: RL rounds from an SFT student arm, evaluated on held-out seeds after chosen rounds.

Every stage is resumable (a stage whose output exists is skipped; ``captain learn rl`` resumes
from its checkpoint) and runs the project's own commands, so what is measured is what ships:

1. ``critic``: the critic warm-started on the expert's training episodes of ``--tasks`` and the
   SFT student's own dev episodes (``captain learn critic``; ``ARM/eval_dev``: dev seeds are for
   development). Its co-training during RL moves it onto the student's rollout states.
2. ``gguf``: the SFT student's merged model as a GGUF, for llama.cpp rollouts
   (``captain learn export ARM/student``).
3. ``rl``: ``captain learn rl --policy-folder ARM/student --accumulation-rounds 1`` (a version per
   round) to each ``--eval-rounds`` R in turn (``--resume``; the schedule is constant after
   warm-up, so stopping at R and going on equals a straight run); after round R the checkpoint's
   adapter and critic are copied to ``RL/rR/``.
4. ``eval``: per R, ``captain learn rl-student`` stacks the round's adapter onto the SFT adapter
   into the arm ``RUN/NAME_rR`` (``data`` linked to the SFT arm's), then ``exp_student.py
   --stages export,eval,report`` evaluates it on ``--split`` exactly as the SFT arm was.
5. ``report``: per task, the SFT arm (round 0) and each R: strict success with Wilson intervals
   and the exact McNemar test against round 0 on the same seeds; the critic's calibration (ECE,
   Brier, AUC, within-group AUC) on the held-out student states of rounds 0 and R, before
   (``critic0``) and after (round R's co-trained critic); the wall-time split of each RL round
   (rollouts, update, sync, checkpoint) from ``log.jsonl``. ``RL/report.json`` and a markdown
   table on stdout.

Run (from a clone; one heavy job at a time)::

    python benchmarks/experiments/exp_rl_student.py --run runs/s17 --arm six2 \\
        --tasks stack,two_arm_lift,insertion --starts 32 --group 4 --eval-rounds 2,5 --workers 2

The rollout workers take one thread each; the update computes on every core (``--threads``, passed
to ``captain learn rl``; an ``OMP_NUM_THREADS=1`` in the environment would otherwise halve it).

``--dry-run`` prints the commands of the stages without running them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from exp_student import (  # noqa: E402
    CAPTAIN,
    EVAL_DECODING,
    SPLITS,
    add_eval_temperature,
    eval_dir,
    expert_episodes,
    run,
)

STAGES = ("critic", "gguf", "rl", "eval", "report")


def _do(a: argparse.Namespace, cmd: list[str], log: Path) -> None:
    if a.dry_run:
        print("$ " + " ".join(cmd))
        return
    run(cmd, log)


def critic(a: argparse.Namespace, root: Path, arm: Path, rl: Path) -> None:
    if (rl / "critic0" / "critic.json").is_file():
        return
    dirs = [str(p) for t in a.tasks for p in expert_episodes(root, t)]
    # the student's own dev episodes, greedy and at the rollouts' temperature (its failures are
    # there: the states the critic must learn to score low)
    dev = sorted(
        {eval_dir(arm, "dev", EVAL_DECODING["temperature"]), eval_dir(arm, "dev", a.temperature)}
    )
    dirs += [str(d / t) for d in dev for t in a.tasks if (d / t).is_dir()]
    cmd = [*CAPTAIN, "learn", "critic", "--episodes", *dirs, "--out", str(rl / "critic0")]
    _do(a, cmd, rl / "critic0.log")


def gguf(a: argparse.Namespace, arm: Path, rl: Path) -> None:
    rec = arm / "student" / "export.json"
    # a failed check still writes its record (for inspection): only a checked export counts
    if rec.is_file() and json.loads(rec.read_text()).get("greedy_tokens_agree"):
        return
    # checked on the arm's own prompts (the default chat prompt is far from what a student was
    # trained on: its near-ties make q8_0 and transformers part ways within a few tokens)
    cmd = [*CAPTAIN, "learn", "export", str(arm / "student"), "--data", str(arm / "data")]
    _do(a, cmd, rl / "gguf.log")


def rl_rounds(a: argparse.Namespace, arm: Path, rl: Path) -> None:
    for r in a.eval_rounds:
        snap = rl / f"r{r}"
        if (snap / "adapter" / "adapter_model.safetensors").is_file():
            continue
        cmd = [*CAPTAIN, "learn", "rl", "--policy-folder", str(arm / "student"),
               "--critic", str(rl / "critic0"), "--tasks", ",".join(a.tasks),
               "--starts", str(a.starts), "--group", str(a.group), "--rounds", str(r),
               "--accumulation-rounds", "1", "--engine", "llamacpp",
               "--workers", str(a.workers), "--temperature", str(a.temperature),
               "--seed", str(a.seed), "--lr", str(a.lr),
               "--threads", str(os.cpu_count() or 1),
               "--out", str(rl / "run"), *a.rl_args]  # fmt: skip
        if (rl / "run" / "run.json").is_file() or (rl / "run" / "checkpoint").is_dir():
            cmd.append("--resume")
        _do(a, cmd, rl / f"rl_to_r{r}.log")
        if a.dry_run:
            continue
        state = json.loads((rl / "run" / "checkpoint" / "state.json").read_text())
        if int(state["round"]) != r:
            raise SystemExit(f"the checkpoint is at round {state['round']}, not {r}")
        tmp = snap.with_name(snap.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(rl / "run" / "checkpoint" / "adapter", tmp / "adapter")
        shutil.copytree(rl / "run" / "checkpoint" / "critic", tmp / "critic")
        tmp.replace(snap)


def round_arm(a: argparse.Namespace, root: Path, r: int) -> Path:
    return root / f"{a.arm}_rl_r{r}"


def evaluate(a: argparse.Namespace, root: Path, arm: Path, rl: Path) -> None:
    for r in a.eval_rounds:
        dest = round_arm(a, root, r)
        if not (dest / "student" / "sft_config.json").is_file():
            cmd = [*CAPTAIN, "learn", "rl-student", str(arm / "student"),
                   str(rl / f"r{r}" / "adapter"), "--out", str(dest / "student")]  # fmt: skip
            _do(a, cmd, dest / "rl_student.log")
        if not a.dry_run and not (dest / "data").exists():
            (dest / "data").symlink_to((arm / "data").resolve())
        cmd = [sys.executable, str(HERE / "exp_student.py"), "--run", str(root),
               "--arm", dest.name, "--tasks", ",".join(a.tasks), "--split", a.split,
               "--workers", str(a.workers), "--temperature", str(a.eval_temperature),
               "--stages", "export,eval,report"]  # fmt: skip
        _do(a, cmd, dest / f"exp_student_{a.split}.log")


def _episodes(folder: Path) -> list[Any]:
    from captain_ros.evaluation.summary import load_episodes

    return [e for f in sorted(folder.glob("*-*/")) if (f / "eval.json").exists()
            for e in load_episodes(f)]  # fmt: skip


def calibration(critic_dir: Path, folders: list[Path]) -> dict[str, Any]:
    """The critic's figures on every request state of the episodes under ``folders``."""
    from captain_ros.learn.episodes import load_run_dirs  # torch-free

    loaded = load_run_dirs([str(f) for f in folders if f.is_dir()])
    if not loaded.episodes:
        return {"episodes": 0}
    from captain_ros.learn.critic import Critic  # torch: only when there are states to score
    from captain_ros.learn.critic.train import evaluate as critic_eval

    return {
        **critic_eval(Critic.load(critic_dir), loaded.episodes),
        "episodes": len(loaded.episodes),
    }


def compare_rounds(
    base: dict[str, list[Any]], later: dict[str, list[Any]]
) -> dict[str, dict[str, Any]]:
    """Per task: round-0 and round-R strict success (Wilson) and the exact McNemar p, paired by
    seed over the seeds both evaluated."""
    from captain_ros.evaluation.summary import compare

    out: dict[str, dict[str, Any]] = {}
    for task in sorted(set(base) & set(later)):
        c = compare(base[task], later[task])
        out[task] = {"paired": c["paired"], "round0": c["rate_a"], "later": c["rate_b"],
                     "mcnemar_p": c["mcnemar"]["p_value"], "mcnemar": c["mcnemar"]}  # fmt: skip
    return out


def report(a: argparse.Namespace, root: Path, arm: Path, rl: Path) -> dict[str, Any]:
    def folder(arm_dir: Path) -> Path:
        return eval_dir(arm_dir, a.split, a.eval_temperature)

    base = {t: _episodes(folder(arm) / t) for t in a.tasks}
    res: dict[str, Any] = {"sft_arm": str(arm), "split": a.split,
                           "eval_temperature": a.eval_temperature, "rounds": {}}  # fmt: skip
    lines = ["| task | SFT (round 0) | " + " | ".join(f"round {r} (p vs 0)" for r in a.eval_rounds)
             + " |", "|---|---|" + "---|" * len(a.eval_rounds)]  # fmt: skip
    cells: dict[str, list[str]] = {t: [_rate(_strict(base[t]))] for t in a.tasks}
    for r in a.eval_rounds:
        later = {t: _episodes(folder(round_arm(a, root, r)) / t) for t in a.tasks}
        later = {t: eps for t, eps in later.items() if eps}
        cmp = compare_rounds(base, later)
        held = [folder(arm) / t for t in a.tasks] + [
            folder(round_arm(a, root, r)) / t for t in later
        ]
        res["rounds"][r] = {
            "tasks": cmp,
            "critic_before": calibration(rl / "critic0", held),
            "critic_after": calibration(rl / f"r{r}" / "critic", held),
        }
        for t in a.tasks:
            c = cmp.get(t)
            if c and c["paired"]:
                cells[t].append(f"{_rate(c['later'])} (p = {c['mcnemar_p']:.3g})")
            elif later.get(t):  # evaluated, but no round-0 episode on the same seeds: no test
                cells[t].append(f"{_rate(_strict(later[t]))} (unpaired: no round 0)")
            else:
                cells[t].append("-")
    lines += [f"| {t} | " + " | ".join(cells[t]) + " |" for t in a.tasks]
    log = rl / "run" / "log.jsonl"
    if log.is_file():
        keys = ("wall_rollouts_s", "wall_update_s", "wall_sync_s", "wall_checkpoint_s")
        rows = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
        res["wall_split_s"] = [{"round": row["round"], **{k: row.get(k) for k in keys}}
                               for row in rows]  # fmt: skip
        res["rollouts"] = [_round_rollouts(rl / "run", row) for row in rows]
        lines += ["", "| round | rollouts strict | outcomes | scoring critic on the round's "
                  "states (ECE / Brier / AUC / within-group AUC) | rollouts s | update s |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        lines += [
            _rollout_line(r, w) for r, w in zip(res["rollouts"], res["wall_split_s"], strict=True)
        ]
    (rl / "report.json").write_text(json.dumps(res, indent=2, default=str))
    print("\n".join(lines))
    return res


def _round_rollouts(run: Path, row: dict[str, Any]) -> dict[str, Any]:
    """A round's rollouts: strict successes, outcomes, and the scoring critic's calibration on
    them (the log row's ``critic_on_round``; for a row written before the loop logged it, computed
    from the scoring critic's version folder while the run still keeps it)."""
    n = int(row.get("episodes", 0))
    out: dict[str, Any] = {"round": row["round"], "episodes": n, "outcomes": row.get("outcomes"),
                           "strict": round(float(row.get("strict_success", 0.0)) * n)}  # fmt: skip
    critic = row.get("critic_on_round")
    if critic is None:
        from captain_ros.core.episode_folder import ROLLOUT

        scoring = run / "critic" / f"v{int(row.get('critic_version_rollouts', -1)):04d}"
        folders = sorted(p.parent for p in (run / "rounds" / f"r{int(row['round']):04d}")
                         .rglob(ROLLOUT))  # fmt: skip
        if (scoring / "critic.json").is_file() and folders:
            critic = {**calibration(scoring, folders), "computed_by": "report"}
    out["critic_on_round"] = critic
    return out


def _rollout_line(r: dict[str, Any], wall: dict[str, Any]) -> str:
    c = r.get("critic_on_round") or {}
    figs = " / ".join(f"{c[k]:.3f}" if isinstance(c.get(k), float) else "-"
                      for k in ("ece", "brier", "auc", "within_group_auc"))  # fmt: skip
    outcomes = ", ".join(f"{k} {v}" for k, v in (r.get("outcomes") or {}).items())
    secs = [f"{wall[k]:.0f}" if wall.get(k) is not None else "-"
            for k in ("wall_rollouts_s", "wall_update_s")]  # fmt: skip
    return (f"| {r['round']} | {r['strict']}/{r['episodes']} | {outcomes} | {figs} | "
            f"{secs[0]} | {secs[1]} |")  # fmt: skip


def _strict(eps: list[Any]) -> dict[str, Any]:
    from captain_ros.evaluation.stats import wilson_interval

    return wilson_interval(sum(e.strict_success for e in eps), len(eps)).to_dict()


def _rate(w: dict[str, Any]) -> str:
    if not w.get("n"):
        return "-"
    return f"{w['successes']}/{w['n']} [{w['ci_low']:.0%}, {w['ci_high']:.0%}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="the SFT experiment folder (expert data inside)")
    ap.add_argument("--arm", required=True, help="the SFT arm under --run the rounds start from")
    ap.add_argument("--tasks", required=True, help="comma-separated tasks to train and evaluate")
    ap.add_argument("--starts", type=int, default=32, help="start states per round")
    ap.add_argument("--group", type=int, default=4, help="rollouts per start state (G)")
    ap.add_argument("--eval-rounds", default="2,5", help="rounds after which to evaluate")
    ap.add_argument("--temperature", type=float, default=1.0, help="the rollouts' temperature")
    add_eval_temperature(ap, "--eval-temperature")
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--split", choices=tuple(SPLITS), default="heldout")
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    ap.add_argument("rl_args", nargs=argparse.REMAINDER, help="-- then extra `learn rl` options")
    a = ap.parse_args()
    a.tasks = [t for t in a.tasks.split(",") if t]
    a.eval_rounds = sorted(int(r) for r in a.eval_rounds.split(",") if r)
    a.rl_args = [x for x in a.rl_args if x != "--"]
    root = Path(a.run)
    arm, rl = root / a.arm, root / f"{a.arm}_rl"
    if not (arm / "student" / "adapter").is_dir():
        raise SystemExit(f"{arm}/student has no adapter: not an SFT arm of exp_student.py")
    rl.mkdir(parents=True, exist_ok=True)
    for stage in a.stages.split(","):
        if stage == "critic":
            critic(a, root, arm, rl)
        elif stage == "gguf":
            gguf(a, arm, rl)
        elif stage == "rl":
            rl_rounds(a, arm, rl)
        elif stage == "eval":
            evaluate(a, root, arm, rl)
        elif stage == "report":
            report(a, root, arm, rl)
        else:
            raise SystemExit(f"unknown stage {stage!r}; valid: {', '.join(STAGES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
