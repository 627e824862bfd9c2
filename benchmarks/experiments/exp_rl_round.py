"""Issue 13 item 6: full RL rounds end to end on this CPU, with what the update did.

Runs ``captain learn rl`` (the same code path, :func:`captain_ros.learn.rl.loop.run_rl`) with the
SmolLM2 student (``smollm2`` or an SFT student folder) on MuJoCo, then reports:

- the wall-time split of each round (rollouts / credit + critic + policy gradient / weight sync /
  checkpoint) next to the physical limits measured in the same run: the raw forward+backward time
  of the trainer model on one request of the median length, and the raw generation rate;
- the effect of the update by re-scoring every request of the rounds under the adapter the
  rollouts used (the recorded rollout log-probs) and the final adapter: the mean change of
  log-probability per token on positively vs negatively credited requests, separately for the
  requests that entered the gradient and the held-out ones (credited, but not drawn among the
  ``--max-train-requests`` per trajectory, so never trained on);
- appendix H's gradient-noise scale B_noise = tr(Sigma) / |G|^2 from the per-episode gradient
  sketches of the rounds at one policy version, with a bootstrap 95% lower bound (the paper:
  ~9,500 episodes, lower bound 3,300, for its 4B model).

Full run (the lead schedules it; ~1-2 h on 2 cores, see RESULTS.md)::

    nice -n 10 .venv/bin/python benchmarks/experiments/exp_rl_round.py --out runs/exp_rl_round \\
        --policy-folder smollm2 --critic runs/critic --tasks pick_place --starts 4 --group 4 \\
        --rounds 1 --workers 2 --json runs/exp_rl_round/result.json

Tiny proof (CI scale): ``--tiny`` builds the tests' tiny student and a synthetic critic and runs
1 start x G = 2 on the fake backend.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


def _tiny_assets(root: Path) -> tuple[str, str]:
    sys.path[:0] = [str(HERE.parents[1] / "tests" / "learn"), str(HERE.parents[1] / "tests")]
    from rl_loop_fixtures import make_critic, make_student

    root.mkdir(parents=True, exist_ok=True)
    student, critic = root / "student", root / "critic"
    if not (student / "config.json").is_file():
        make_student(student)
    if not (critic / "critic.json").is_file():
        make_critic(critic)
    return str(student), str(critic)


def _model(base: str, adapter: Path | None) -> Any:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    m = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    return PeftModel.from_pretrained(m, str(adapter)).eval() if adapter else m.eval()


def rescore(out: Path, base: str, final_adapter: Path) -> dict[str, Any]:
    """Mean per-token change of log-prob (final adapter - rollout policy) by credit sign.

    Each append-only segment of an episode is scored in one forward pass (as the update does):
    request t's reply log-probs in the segment's final context equal those of its own prompt.
    """
    import torch

    from captain_ros.learn.rl import token_logprobs
    from captain_ros.learn.rl.batch import read_rollout, rollout_segments

    model = _model(base, final_adapter)
    groups: dict[str, list[float]] = {}
    for credit_file in sorted((out / "rounds").glob("r*/credit.json")):
        credit = json.loads(credit_file.read_text())
        for eid, c in credit.items():
            trained = set(c.get("trained") or [])
            adv = dict(enumerate(c["advantages"], start=1))
            for seg in rollout_segments(eid, read_rollout(eid)):
                req = np.asarray(seg.request_of_token)
                gen = np.nonzero(req > 0)[0]
                if not any(adv.get(t, 0) for t in seg.requests):
                    continue
                with torch.no_grad():
                    new = token_logprobs(
                        model, torch.as_tensor(seg.input_ids), torch.as_tensor(gen)
                    ).numpy()
                delta = new - np.asarray(seg.old_logprobs)[gen]
                for t in seg.requests:
                    a = adv.get(t, 0)
                    if a == 0:
                        continue
                    d = float(np.mean(delta[req[gen] == t]))
                    sign = "positive" if a > 0 else "negative"
                    part = "trained" if t in trained else "heldout"
                    groups.setdefault(f"{part}_{sign}", []).append(d)
                    groups.setdefault(f"all_{sign}", []).append(d)
    return {
        k: {
            "requests": len(v),
            "mean_dlogp_per_token": float(np.mean(v)),
            "sem": float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1 else None,
        }
        for k, v in sorted(groups.items())
    }


def noise(out: Path) -> dict[str, Any]:
    from captain_ros.learn.rl import simple_noise_scale

    by_version: dict[int, list[np.ndarray]] = {}
    for f in sorted((out / "noise").glob("r*.npz")):
        z = np.load(f)
        by_version.setdefault(int(z["policy_version"]), []).append(z["sketches"])
    res = {}
    for v, parts in by_version.items():
        g = np.concatenate(parts)
        if g.shape[0] >= 2:
            res[f"v{v}"] = simple_noise_scale(g, bootstrap=200).to_dict()
    return res


def physical(base: str, out: Path) -> dict[str, Any]:
    """Raw forward+backward of the trainer model on one median-length request, raw decode rate."""
    import torch

    from captain_ros.core.episode_folder import ROLLOUT
    from captain_ros.learn.rl.batch import read_rollout

    lens = []
    for f in (out / "rounds").rglob(ROLLOUT):
        tok = read_rollout(f.parent)
        lens += [len(p) + len(c) for p, c in zip(tok.prompts, tok.completions, strict=True) if c]
    n = int(np.median(lens)) if lens else 512
    model = _model(base, None)
    ids = torch.randint(0, model.config.vocab_size, (1, n))
    model.train()
    t0 = time.perf_counter()
    for _ in range(2):
        model(input_ids=ids, labels=ids).loss.backward()
    fb = (time.perf_counter() - t0) / 2
    model.eval()
    with torch.no_grad():
        t0 = time.perf_counter()
        o = model.generate(
            input_ids=ids[:, :64], max_new_tokens=32, do_sample=False, min_new_tokens=32
        )
        dec = (o.shape[1] - 64) / (time.perf_counter() - t0)
    return {"median_request_tokens": n, "raw_fwd_bwd_s": fb, "raw_decode_tokens_per_s": dec}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--policy-folder", default="smollm2")
    ap.add_argument("--critic", default=None)
    ap.add_argument("--tasks", default="pick_place")
    ap.add_argument("--starts", type=int, default=4)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument(
        "--accumulation-rounds",
        type=int,
        default=None,
        help="K (default: --rounds, one optimizer step after the last round)",
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--backend", default="mujoco")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--max-requests", type=int, default=None)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--max-train-requests", type=int, default=8)
    ap.add_argument("--temperature", type=float, default=1.0, help="rollout sampling (paper: 1)")
    ap.add_argument("--threads", type=int, default=1, help="trainer torch threads")
    ap.add_argument("--seed", type=int, default=0, help="start states and sampling seeds")
    ap.add_argument("--tiny", action="store_true", help="tiny student + synthetic critic, fake")
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="only report on the finished run in --out (e.g. one made on a GPU)",
    )
    ap.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out (a round stopped after its rollouts reads them back)",
    )
    ap.add_argument("--json", default=None)
    ns = ap.parse_args()
    import torch

    from captain_ros.learn.models import resolve_base
    from captain_ros.learn.rl.loop import run_rl
    from captain_ros.learn.rl.options import RLOptions
    from captain_ros.learn.rl.sync import published_versions, version_dir

    torch.set_num_threads(ns.threads)
    out = Path(ns.out)
    policy, critic, backend = ns.policy_folder, ns.critic, ns.backend
    if ns.tiny:
        policy, critic = _tiny_assets(out.parent / f"{out.name}-assets")
        backend = "fake"
    if not critic and not ns.report_only:
        print(
            "error: --critic DIR is required (a folder from `captain learn critic`)",
            file=sys.stderr,
        )
        return 2
    opts = RLOptions(
        policy_folder=policy,
        critic=critic or "",
        tasks=tuple(ns.tasks.split(",")),
        out=str(out),
        starts=ns.starts,
        group=ns.group,
        rounds=ns.rounds,
        workers=ns.workers,
        backend=backend,
        lr=ns.lr,
        accumulation_rounds=ns.accumulation_rounds or ns.rounds,
        max_requests=ns.max_requests,
        max_new_tokens=ns.max_new_tokens,
        temperature=ns.temperature,
        max_train_requests=ns.max_train_requests,
        threads=ns.threads,
        warmup_steps=0,
        seed=ns.seed,
        resume=ns.resume,
        progress=False,
    )
    t0 = time.perf_counter()
    if ns.report_only:
        rows = [json.loads(ln) for ln in (out / "log.jsonl").read_text().splitlines() if ln]
    else:
        rows = run_rl(opts)
    wall = time.perf_counter() - t0
    base = str(resolve_base(policy))
    final = version_dir(out, published_versions(out)[-1])
    keys = ("wall_rollouts_s", "wall_update_s", "wall_sync_s", "wall_checkpoint_s", "wall_round_s")
    result = {
        "command": " ".join(sys.argv),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "wall_s": wall,
        "policy": policy,
        "critic": critic,
        "backend": backend,
        "starts": ns.starts,
        "group": ns.group,
        "rounds": len(rows),
        "split": [{k: r.get(k) for k in ("round", *keys)} for r in rows],
        "rounds_log": [
            {
                k: r.get(k)
                for k in (
                    "round",
                    "success",
                    "return_mean",
                    "outcomes",
                    "requests_mean",
                    "critic_loss",
                    "kept_fraction",
                    "kl",
                    "requests_sampled",
                    "tokens",
                    "policy_version",
                )
            }
            for r in rows
        ],
        "rescore": rescore(out, base, final),
        "noise": noise(out),
        "physical": physical(base, out),
    }
    text = json.dumps(result, indent=1, default=str)
    print(text)
    if ns.json:
        Path(ns.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
