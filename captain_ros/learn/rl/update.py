"""The streaming policy update: accumulate K rounds, then one AdamW step (CaPtain appendix A.2).

Per round, every episode segment is scored in a single forward pass of the current policy (and
one no-grad pass of the SFT reference), the loss of eq. 8 is back-propagated at once (streaming:
no graph outlives its segment), scaled by 1 / (episodes in the round * K) so the step's gradient
is the mean over the K rounds of the per-episode mean. After K rounds: optional gradient clipping
(the paper names none; off by default), AdamW, the LR schedule (linear warm-up, then constant),
and the policy version increments. The loop then synchronises weights to the rollout workers.

Memory: ``gradient_checkpointing`` recomputes each decoder layer in the backward pass instead of
keeping its activations (transformers' layer checkpointing, non-reentrant). The gradients are
the same (tested). Measured on the first full CPU round (benchmarks/results/rl.md): without it
the trainer was OOM-killed at 16.2 GB RSS on ~9k-token SmolLM2-135M segments; with it the rerun peaked at
10.9 GB. transformers only
checkpoints a layer in training mode, so the layers alone are put in training mode while every
other module stays in eval mode (no dropout: the distribution the rollout sampled from).

Staleness: a segment from a policy more than ``max_staleness`` (2) versions older than the current
one is skipped and counted, never trained on. Defaults follow the paper (lr 4.24e-6 for full
fine-tuning, K = 4, 8 requests, beta 0.002); a LoRA student usually wants a larger lr.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from captain_ros.learn.errors import StaleRolloutError
from captain_ros.learn.rl.logprobs import reference_context, token_logprobs
from captain_ros.learn.rl.loss import LossConfig, masked_policy_loss
from captain_ros.learn.rl.noise import GradientSketch
from captain_ros.learn.rl.samples import MAX_REQUESTS, RLSample, sample_requests, token_weights


@dataclass(frozen=True)
class UpdateConfig:
    """Optimizer and estimator settings of the policy update."""

    lr: float = 4.24e-6
    warmup_steps: int = 1
    weight_decay: float = 0.0
    accumulation_rounds: int = 4
    max_staleness: int = 2
    max_requests: int = MAX_REQUESTS
    max_grad_norm: float | None = None
    temperature: float = 1.0
    seed: int = 0
    loss: LossConfig = field(default_factory=LossConfig)
    gradient_checkpointing: bool = False

    def __post_init__(self) -> None:
        if not self.lr > 0 or self.warmup_steps < 0 or self.accumulation_rounds < 1:
            raise ValueError("need lr > 0, warmup_steps >= 0 and accumulation_rounds >= 1")
        if self.max_staleness < 0 or self.max_requests < 1 or not self.temperature > 0:
            raise ValueError("need max_staleness >= 0, max_requests >= 1 and temperature > 0")


def _checkpointed_layers_on(model: Any) -> None:
    """Training mode for the checkpointed decoder layers only (their children stay in eval)."""
    from transformers.modeling_layers import GradientCheckpointingLayer

    layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
    if not layers:
        raise ValueError("gradient_checkpointing: the model has no checkpointable layers")
    for m in layers:
        m.training = True


def check_staleness(rollout_version: int, current_version: int, max_staleness: int) -> None:
    """Raise :class:`StaleRolloutError` if the rollout is too many versions old."""
    if rollout_version > current_version:
        raise StaleRolloutError(
            f"rollout from version {rollout_version} is newer than the policy ({current_version})"
        )
    if current_version - rollout_version > max_staleness:
        raise StaleRolloutError(
            f"rollout from version {rollout_version} is "
            f"{current_version - rollout_version} versions old (max "
            f"{max_staleness})"
        )


@dataclass(frozen=True)
class RoundStats:
    """What one accumulated round reports (the per-round log's policy columns)."""

    segments: int
    episodes: int
    stale_skipped: int
    requests_total: int
    requests_sampled: int
    tokens: int
    kept_tokens: int
    kl_mean: float
    ratio_mean: float
    loss: float
    stepped: bool
    policy_version: int

    @property
    def kept_fraction(self) -> float:
        return self.kept_tokens / self.tokens if self.tokens else float("nan")


class PolicyUpdater:
    """Owns the optimizer of ``model``'s trainable parameters and the policy version."""

    def __init__(
        self,
        model: Any,
        config: UpdateConfig = UpdateConfig(),
        reference_model: Any | None = None,
        sketch_dim: int | None = None,
    ) -> None:
        """``sketch_dim``: also record a count sketch of every episode's gradient (appendix H's
        noise scale, :mod:`captain_ros.learn.rl.noise`) in :attr:`episode_sketches`."""
        self.model = model
        self.config = config
        self.reference_model = reference_model
        if (
            reference_model is None
            and config.loss.beta > 0
            and not callable(getattr(model, "disable_adapter", None))
        ):
            raise ValueError("a full fine-tuning policy needs reference_model for the KL term")
        if config.gradient_checkpointing:
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False}
            )
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
            raise ValueError("the model has no trainable parameters")
        self.params = params
        self.opt = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
        warm = config.warmup_steps
        self.sched = torch.optim.lr_scheduler.LambdaLR(
            self.opt, lambda step: min(1.0, (step + 1) / warm) if warm > 0 else 1.0
        )
        self.version = 0
        self.rounds_accumulated = 0
        self.rng = np.random.default_rng(config.seed)
        self.sketch = GradientSketch(params, sketch_dim, config.seed) if sketch_dim else None
        self.episode_sketches: dict[str, np.ndarray] = {}
        self.last_drawn: dict[str, dict[int, float]] = {}

    @property
    def lr(self) -> float:
        return float(self.opt.param_groups[0]["lr"])

    def _segment_loss(
        self, s: RLSample, adv: Mapping[int, float], scale: float, episode_incl: Mapping[int, float]
    ) -> tuple:
        incl = {t: w for t, w in episode_incl.items() if t in set(s.requests)}
        adv_tok, w_tok = token_weights(s, adv, incl)
        pos_np = np.nonzero(w_tok > 0)[0]
        if pos_np.size == 0:
            return incl, None
        dev = self.params[0].device
        ids = torch.as_tensor(np.asarray(s.input_ids), dtype=torch.long, device=dev)
        pos = torch.as_tensor(pos_np, dtype=torch.long, device=dev)
        temp = self.config.temperature
        logp_new = token_logprobs(self.model, ids, pos, temp)
        with torch.no_grad():
            if self.reference_model is not None:
                logp_ref = token_logprobs(self.reference_model, ids, pos, temp).to(dev)
            else:
                with reference_context(self.model):
                    logp_ref = token_logprobs(self.model, ids, pos, temp)

        def f32(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(a, dtype=torch.float32, device=dev)

        out = masked_policy_loss(
            logp_new,
            f32(s.old_logprobs[pos_np]),
            logp_ref,
            f32(adv_tok[pos_np]),
            f32(w_tok[pos_np]),
            torch.ones(pos_np.size, dtype=torch.bool, device=dev),
            self.config.loss,
        )
        (out.loss * scale).backward()
        return incl, out

    def accumulate_round(
        self,
        samples: Sequence[RLSample],
        advantages: Mapping[str, Mapping[int, float]],
        on_segment: Callable[[int, int], None] | None = None,
    ) -> RoundStats:
        """Back-propagate one round; after every K-th round take the optimizer step.

        ``advantages[episode_id][t]`` is request t's final advantage (credit code's output).
        ``on_segment(done, fresh)`` is called after each fresh segment's backward pass (progress:
        on a 2-core CPU a round of 128 episodes is more than an hour of segments).
        """
        fresh = []
        for s in samples:
            try:
                check_staleness(s.policy_version, self.version, self.config.max_staleness)
                fresh.append(s)
            except StaleRolloutError:
                continue
        episodes = {s.episode_id for s in fresh}
        scale = 1.0 / (max(len(episodes), 1) * self.config.accumulation_rounds)
        self.model.eval()  # no dropout: the same distribution the rollout sampled from
        if self.config.gradient_checkpointing:
            _checkpointed_layers_on(self.model)
        tok = kept = req_total = req_sampled = 0
        kl_sum = ratio_sum = loss_sum = 0.0
        self.episode_sketches = {}
        # At most max_requests per *trajectory*: an episode whose history was rewritten has
        # several segments, and the sample is drawn over all of its requests at once.
        per_episode: dict[str, list[int]] = {}
        for s in fresh:
            if s.episode_id not in advantages:
                raise KeyError(f"no advantages for episode {s.episode_id!r}")
            per_episode.setdefault(s.episode_id, []).extend(s.requests)
        drawn = {
            eid: sample_requests(reqs, self.rng, self.config.max_requests)
            for eid, reqs in per_episode.items()
        }
        self.last_drawn = drawn  # {episode: {t: inclusion weight}} (reporting, re-scoring)
        last = self.sketch.of_grads() if self.sketch is not None else None
        for i, s in enumerate(fresh, 1):
            incl, out = self._segment_loss(s, advantages[s.episode_id], scale, drawn[s.episode_id])
            if self.sketch is not None and last is not None:
                now = self.sketch.of_grads()  # linear: this segment's gradient, unscaled below
                prev = self.episode_sketches.get(s.episode_id, 0.0)
                self.episode_sketches[s.episode_id] = prev + (now - last) / scale
                last = now
            req_total += len(s.requests)
            req_sampled += len(incl)
            if out is not None:
                tok += out.tokens
                kept += out.kept_tokens
                kl_sum += out.kl_mean * out.kept_tokens
                ratio_sum += out.ratio_mean * out.tokens
                loss_sum += float(out.loss.detach()) * scale
            if on_segment is not None:
                on_segment(i, len(fresh))
        self.rounds_accumulated += 1
        stepped = self.rounds_accumulated >= self.config.accumulation_rounds
        if stepped:
            self.step()
        return RoundStats(
            len(fresh),
            len(episodes),
            len(samples) - len(fresh),
            req_total,
            req_sampled,
            tok,
            kept,
            kl_sum / kept if kept else float("nan"),
            ratio_sum / tok if tok else float("nan"),
            loss_sum,
            stepped,
            self.version,
        )

    def step(self) -> None:
        """Clip (if configured), AdamW step, LR schedule, zero grads, version + 1."""
        if self.config.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(self.params, self.config.max_grad_norm)
        self.opt.step()
        self.sched.step()
        self.opt.zero_grad(set_to_none=True)
        self.rounds_accumulated = 0
        self.version += 1

    def save_state(self, path: str | Path) -> None:
        """Optimizer, schedule, version, sampler state and the gradients accumulated so far
        (so a resume in the middle of K rounds loses nothing); the weights are saved by their
        owner (the adapter folder)."""
        grads = [None if p.grad is None else p.grad.detach().clone() for p in self.params]
        torch.save(
            {
                "optimizer": self.opt.state_dict(),
                "scheduler": self.sched.state_dict(),
                "version": self.version,
                "rounds_accumulated": self.rounds_accumulated,
                "rng": self.rng.bit_generator.state,
                "grads": grads,
            },
            path,
        )

    def load_state(self, path: str | Path) -> None:
        state = torch.load(path, weights_only=False)
        self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["scheduler"])
        self.version = int(state["version"])
        self.rounds_accumulated = int(state["rounds_accumulated"])
        self.rng.bit_generator.state = state["rng"]
        grads = state.get("grads") or [None] * len(self.params)
        if len(grads) != len(self.params):
            raise ValueError("the saved gradients do not match the model's trainable parameters")
        for p, g in zip(self.params, grads, strict=True):
            p.grad = None if g is None else g.to(p.device, p.dtype)
