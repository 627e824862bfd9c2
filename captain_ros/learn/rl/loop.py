"""The RL loop of CaPtain (Algorithm 1, appendices A.2 and F) in one process plus rollout workers.

Per round k:

1. rollouts: ``starts x group`` episodes of the student at policy version v (workers, Ray or
   inline; :mod:`~captain_ros.learn.rl.workers`), each with the critic's early stop, recording
   the rollout policy's per-token log-probs (:mod:`~captain_ros.learn.rl.rollout`);
2. credit with the critic from BEFORE its update (``CoTrainer.begin_round`` -> ``round_credit``);
3. critic co-training: two AdamW steps over all request states of the round;
4. policy gradient on <= 8 sampled requests per episode, accumulated (``PolicyUpdater``);
5. after every K-th round an optimizer step; the adapter is published as version v + 1
   (:mod:`~captain_ros.learn.rl.sync`) and the next jobs name it, so every worker uses it;
6. the held-out monitor (no gradient) every ``heldout_every`` rounds and after the last;
7. the round's log row (``log.jsonl``), the credits (``rounds/rK/credit.json``), the per-episode
   gradient sketches (``noise/rK.npz``) and the checkpoint.

With ``prefetch`` round k + 1's rollouts are submitted before round k's update (the paper's
asynchronous rollouts): they come from a policy one version behind, within the staleness bound of
two that the updater enforces.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.evaluation.config import (
    BackendConfig,
    BudgetConfig,
    EpisodeConfig,
    RecordingConfig,
)
from captain_ros.harness.episode.profiles import resolve_profile
from captain_ros.learn.credit import RunningStd, round_credit
from captain_ros.learn.rl.batch import read_round, summarize_round
from captain_ros.learn.rl.checkpoint import read_checkpoint, write_checkpoint
from captain_ros.learn.rl.options import RLOptions
from captain_ros.learn.rl.progress import Ticker, round_line
from captain_ros.learn.rl.resume import check_first_round_resume, prune_round, read_log
from captain_ros.learn.rl.sync import publish_adapter, publish_critic, version_dir
from captain_ros.learn.rl.workers import JobSpec, RolloutPool, heldout_jobs, round_jobs
from captain_ros.learn.threads import thread_note

# the scoring critic's figures on each round's own request states (log rows: critic_on_round)
CRITIC_FIGURES = ("ece", "brier", "auc", "within_group_auc", "states", "positive_state_rate")

LOG_FILE = "log.jsonl"
Say = Callable[[str], None]


def _student_folder(spec: str) -> str:
    from captain_ros.learn.models import resolve_base

    return str(resolve_base(spec))


def _trainer_model(base: str, opts: RLOptions, device: str) -> Any:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    auto: Any = AutoModelForCausalLM
    model = auto.from_pretrained(base, dtype=torch.float32).to(device)
    torch.manual_seed(opts.seed)  # LoRA's A matrices: the same run gets the same adapter
    lora = LoraConfig(
        r=opts.lora_r,
        lora_alpha=opts.lora_alpha,
        lora_dropout=0.0,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lora)


def job_options(opts: RLOptions, base: str) -> EpisodeConfig:
    """The episode of every rollout (each job sets its task, seed and folder): the RL budget, and
    the prompt profile the student in ``base`` was trained with (CaPtain's format alignment: SFT
    rows, rollouts and deployment share one input format)."""
    return EpisodeConfig(
        task=opts.tasks[0],
        backend=BackendConfig(opts.backend),
        budgets=BudgetConfig(
            "rl", max_requests=opts.max_requests, max_physical_actions=opts.max_physical_actions
        ),
        recording=RecordingConfig(bag=bool(opts.bags), report=False),
        profile=resolve_profile(None, base),
    )


class RLRun:
    """One ``captain learn rl`` run (see the module docstring); :meth:`run` does it all."""

    def __init__(self, opts: RLOptions, say: Say | None = None) -> None:
        self.opts = opts
        self.out = Path(opts.out)
        self.say = say or (lambda s: print(s, flush=True))
        self.tick = Ticker(opts.progress)

    # -- set-up -------------------------------------------------------------------------------
    def _prepare(self) -> None:
        import torch

        from captain_ros.learn.critic import CoTrainer
        from captain_ros.learn.rl.sync import load_adapter_weights
        from captain_ros.learn.rl.update import PolicyUpdater, UpdateConfig

        o = self.opts
        ckpt = read_checkpoint(self.out) if o.resume else None
        if not o.resume and self.out.exists() and any(self.out.iterdir()):
            raise InvalidArgumentError(
                f"{self.out} is not empty (--resume continues the run in it)"
            )
        if o.resume and ckpt is None and self.out.exists() and any(self.out.iterdir()):
            check_first_round_resume(self.out, o)
        if ckpt is not None:
            conflicts = o.resume_conflicts(ckpt.options)
            if conflicts:
                raise InvalidArgumentError(f"cannot resume with changed options: {conflicts[0]}")
        self.device = o.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if o.threads:
            torch.set_num_threads(o.threads)
        self.threads = torch.get_num_threads()  # else torch's own: $OMP_NUM_THREADS, else cores
        self.base = _student_folder(o.policy_folder)
        if o.engine == "llamacpp":  # refused here, before any rollout, when there is no GGUF
            from captain_ros.learn.rl.llama_student import base_gguf

            base_gguf(self.base)
        self.cot = CoTrainer.load(ckpt.critic if ckpt else o.critic, lr=o.critic_lr)
        missing = [t for t in o.tasks if t not in self.cot.critic.spec.tasks]
        if missing:
            raise InvalidArgumentError(
                f"the critic in {o.critic} was not trained on task "
                f"{missing[0]!r} (it knows {', '.join(self.cot.critic.spec.tasks)})"
            )
        cores = os.cpu_count() or 1
        note = thread_note("captain learn rl", self.threads, self.device, 1, cores, os.environ)
        if note and not o.threads and not o.prefetch:  # prefetch: workers share the cores
            print(note, file=sys.stderr, flush=True)
        self.model = _trainer_model(self.base, o, self.device)
        cfg = UpdateConfig(
            lr=o.lr,
            warmup_steps=o.warmup_steps,
            accumulation_rounds=o.accumulation_rounds,
            max_requests=o.max_train_requests,
            temperature=o.temperature,
            seed=o.seed,
            gradient_checkpointing=o.gradient_checkpointing,
        )
        self.upd = PolicyUpdater(self.model, cfg, sketch_dim=o.sketch_dim or None)
        self.out.mkdir(parents=True, exist_ok=True)
        if ckpt is not None:
            load_adapter_weights(self.model, ckpt.adapter)
            self.upd.load_state(ckpt.updater)
            self.running = ckpt.running_std
            self.start = ckpt.round_index + 1
            self.next_versions = (
                ckpt.options.get("_next_policy_version"),
                ckpt.options.get("_next_critic_version"),
            )
        else:
            self.running, self.start, self.next_versions = RunningStd(), 1, (None, None)
        if not (version_dir(self.out, self.upd.version) / "version.json").is_file():
            publish_adapter(self.model, self.out, self.upd.version)
        publish_critic(self.cot.critic, self.out)
        rows = read_log(self.out / LOG_FILE, self.start)
        if (
            ckpt is not None
            and ckpt.last_row
            and not any(r["round"] == ckpt.round_index for r in rows)
        ):
            rows.append(ckpt.last_row)
        (self.out / LOG_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
        for sub in ("rounds", "heldout"):
            for d in sorted((self.out / sub).glob("r*")):
                if d.is_dir() and d.name[1:].isdigit() and int(d.name[1:]) >= self.start:
                    # an interrupted round is redone from its start; its finished rollouts are
                    # read back instead of run again (workers.finished_record)
                    if sub == "rounds":
                        prune_round(d)
                    else:
                        shutil.rmtree(d)
        (self.out / "run.json").write_text(json.dumps(o.to_dict(), indent=1) + "\n")
        opts_job = job_options(o, self.base)
        self.spec = JobSpec(
            self.base,
            o.backend,
            str(self.out),
            o.max_new_tokens,
            "cuda" if self.device.startswith("cuda") else "cpu",
            opts_job,
            served=({"base_url": o.served_url, "model": o.served_model} if o.served_url else None),
            temperature=o.temperature,
            engine=o.engine,
        )

    def _jobs(self, k: int, policy_version: int, critic_version: int) -> list[Any]:
        o = self.opts
        critic = str(self.out / "critic" / f"v{critic_version:04d}")
        return round_jobs(
            self.spec,
            o.seed,
            k,
            o.tasks,
            o.starts,
            o.group,
            version_dir(self.out, policy_version),
            critic,
            o.early_stop,
        )

    def _submit(self, pool: RolloutPool, k: int, versions: tuple[int, int]) -> Any:
        pending = pool.submit(self._jobs(k, *versions))
        pending.versions = versions
        return pending

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> list[dict[str, Any]]:
        """Run rounds ``start .. opts.rounds``; returns the whole log."""
        self._prepare()
        o = self.opts
        pool = RolloutPool(o.workers, o.ray)
        rows = read_log(self.out / LOG_FILE, self.start)
        try:
            pv, cv = self.next_versions
            first = (
                int(pv) if pv is not None else self.upd.version,
                int(cv) if cv is not None else self.cot.critic.version,
            )
            pending = self._submit(pool, self.start, first) if self.start <= o.rounds else None
            for k in range(self.start, o.rounds + 1):
                t0 = time.perf_counter()
                assert pending is not None
                jobs, versions, reused = pending.jobs, pending.versions, pending.reused
                records = pending.wait(self.tick.of(f"round {k}/{o.rounds}", len(jobs)))
                t_roll = time.perf_counter() - t0
                pending = None
                if o.prefetch and k < o.rounds:  # round k + 1 from the policy before this update
                    pending = self._submit(pool, k + 1, (self.upd.version, self.cot.critic.version))
                row = self._train(k, jobs, records, versions)
                row["wall_rollouts_s"] = t_roll
                row["update_threads"] = self.threads
                row["rollouts_reused"] = reused
                row.update(self._heldout(pool, k))
                t_ck = time.perf_counter()
                nxt = pending.versions if pending is not None else (None, None)
                state = {
                    **o.to_dict(),
                    "_next_policy_version": nxt[0],
                    "_next_critic_version": nxt[1],
                }
                write_checkpoint(
                    self.out, k, self.model, self.upd, self.cot, self.running, state, row
                )
                row["wall_checkpoint_s"] = time.perf_counter() - t_ck
                row["wall_round_s"] = time.perf_counter() - t0
                with (self.out / LOG_FILE).open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
                rows.append(row)
                self.say(round_line(row, o.rounds))
                if pending is None and k < o.rounds:
                    pending = self._submit(pool, k + 1, (self.upd.version, self.cot.critic.version))
        finally:
            pool.close()
        return rows

    def _train(
        self, k: int, jobs: list[Any], records: list[Any], versions: tuple[int, int]
    ) -> dict[str, Any]:
        from captain_ros.harness.record.privileged_log import load_episode_record
        from captain_ros.learn.rl.noise import simple_noise_scale

        t1 = time.perf_counter()
        loader: Any = load_episode_record
        batch = read_round([j.out_dir for j in jobs], loader)
        row: dict[str, Any] = {
            "round": k,
            "policy_version_rollouts": versions[0],
            "critic_version_rollouts": versions[1],
            **summarize_round(batch, records),
            "skipped": len(batch.skipped),
            "skipped_why": [w for _, w in batch.skipped[:3]],
        }
        if not batch.episodes:
            row.update(
                update="skipped: no readable episode",
                policy_version=self.upd.version,
                wall_update_s=time.perf_counter() - t1,
                wall_sync_s=0.0,
            )
            return row
        rnd = self.cot.begin_round(batch.episodes)  # values BEFORE the update
        # the scoring critic on states it has never trained on: its calibration on the student's
        # current policy, the figure its credit depends on
        from captain_ros.learn.critic.train import evaluate as critic_evaluate  # torch: lazily

        on_round = critic_evaluate(self.cot.critic, batch.episodes)
        credits = round_credit(batch.episodes, rnd.values, self.running)
        cst = self.cot.finish_round(rnd)  # two AdamW steps
        adv = {c.episode_id: c.by_request() for c in credits}
        label = f"round {k}/{self.opts.rounds} update"
        st = self.upd.accumulate_round(
            batch.samples, adv, on_segment=lambda i, n: self.tick.show(label, i, n, "segments")
        )
        t_sync = time.perf_counter()
        if st.stepped:
            publish_adapter(self.model, self.out, self.upd.version)
        publish_critic(self.cot.critic, self.out)
        t_end = time.perf_counter()
        allv = np.concatenate([c.advantages for c in credits])
        row.update(
            critic_loss=cst["loss_before"],
            critic_on_round={k: on_round[k] for k in CRITIC_FIGURES},
            critic_version=cst["critic_version"],
            critic_states=cst["states"],
            adv_std_running=self.running.std,
            adv_abs_mean=float(np.abs(allv).mean()),
            adv_positive=float((allv > 0).mean()),
            kept_fraction=st.kept_fraction,
            kl=st.kl_mean,
            ratio_mean=st.ratio_mean,
            loss=st.loss,
            tokens=st.tokens,
            requests_total=st.requests_total,
            requests_sampled=st.requests_sampled,
            stale_skipped=st.stale_skipped,
            stepped=st.stepped,
            policy_version=self.upd.version,
            lr=self.upd.lr,
        )
        rdir = self.out / "rounds" / f"r{k:04d}"
        (rdir / "credit.json").write_text(
            json.dumps(
                {
                    c.episode_id: {
                        "advantages": c.advantages.tolist(),
                        "critic_version": c.critic_version,
                        "trained": sorted(self.upd.last_drawn.get(c.episode_id, {})),
                    }
                    for c in credits
                }
            )
            + "\n"
        )
        sk = self.upd.episode_sketches
        if len(sk) >= 2:
            (self.out / "noise").mkdir(exist_ok=True)
            ids = sorted(sk)
            g = np.stack([sk[i] for i in ids])
            np.savez_compressed(
                self.out / "noise" / f"r{k:04d}.npz",
                sketches=g,
                episodes=np.asarray(ids),
                policy_version=versions[0],
            )
            ns = simple_noise_scale(g, bootstrap=0)
            row["b_noise_round"] = ns.b_noise if np.isfinite(ns.b_noise) else None
        row["wall_update_s"] = t_sync - t1
        row["wall_sync_s"] = t_end - t_sync
        return row

    def _heldout(self, pool: RolloutPool, k: int) -> dict[str, Any]:
        from captain_ros.evaluation.stats import wilson_interval

        o = self.opts
        if not o.heldout_seeds or (k % o.heldout_every and k != o.rounds):
            return {}
        t0 = time.perf_counter()
        jobs = heldout_jobs(
            self.spec, o.seed, k, o.tasks, o.heldout_seeds, version_dir(self.out, self.upd.version)
        )
        recs = pool.submit(jobs).wait(self.tick.of(f"held-out {k}", len(jobs)))
        ok = [r for r in recs if r.outcome != "error"]
        wil = wilson_interval(sum(r.host_success for r in ok), len(ok))
        rets = [float(r.return_R) for r in ok if r.return_R is not None]
        out: dict[str, Any] = {
            "heldout": {
                "policy_version": self.upd.version,
                "episodes": len(recs),
                "errors": len(recs) - len(ok),
                "success": wil.to_dict(),
                "strict_success": float(np.mean([r.strict_success for r in ok])) if ok else None,
                "return_mean": float(np.mean(rets)) if rets else None,
            },
            "wall_heldout_s": time.perf_counter() - t0,
        }
        with (self.out / "heldout.jsonl").open("a") as fh:
            fh.write(json.dumps({"round": k, **out["heldout"]}) + "\n")
        return out


def run_rl(opts: RLOptions, say: Say | None = None) -> list[dict[str, Any]]:
    """Run (or resume) an RL run; returns its log rows."""
    return RLRun(opts, say).run()
