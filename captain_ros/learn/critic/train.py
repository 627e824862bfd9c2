"""Training the critic: warm start on recorded episodes, then co-training round by round.

Loss (CaPtain eq. 4): binary cross-entropy of V(s_{i,t}, t) against the host success y_i of
episode i, over every request state s_1 .. s_T (the ensemble's mean logit is what is trained, as
in the equation).

Co-training (appendix A.2): after each round, two AdamW steps over all request states of that
round, and the round's advantages use the critic from BEFORE its update. The API makes the order
explicit and checks it::

    rnd = cotrainer.begin_round(episodes)   # scores with critic version v, freezes the values
    credit = round_credit(episodes, rnd.values, running_std)   # uses version v
    cotrainer.finish_round(rnd)            # two AdamW steps -> version v + 1

``finish_round`` refuses a round that was already finished or whose critic changed in between,
and ``begin_round`` refuses to start a round while another is open.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.learn.credit.advantage import EpisodeValues
from captain_ros.learn.credit.early_stop import unit_hash
from captain_ros.learn.critic.critic import Critic
from captain_ros.learn.critic.inputs import request_states
from captain_ros.learn.critic.metrics import critic_metrics
from captain_ros.learn.critic.model import native_bf16
from captain_ros.learn.episodes import EpisodeArrays
from captain_ros.learn.errors import LearnError


@dataclass(frozen=True)
class WarmStartConfig:
    """Warm-start recipe (the paper gives none beyond "BCE on recorded episodes").

    Attributes:
        epochs: Most passes over the training states.
        batch_size: States per AdamW step.
        lr: AdamW learning rate, cosine-decayed to 10% over ``epochs``.
        weight_decay: AdamW weight decay.
        val_fraction: Share of start-state groups kept aside to pick the best epoch by BCE
            (early stopping; the weights of the best epoch are restored). 0 disables it.
        patience: Epochs without a better validation loss before stopping.
        seed: Shuffling seed.
        bf16: Autocast the forward pass to bfloat16 (weights and optimizer stay float32);
            None = where the CPU computes bf16 natively (AVX512-BF16 / AMX), about twice the
            float32 rate there.
    """

    epochs: int = 6
    batch_size: int = 1024
    lr: float = 2e-3
    weight_decay: float = 1e-4
    val_fraction: float = 0.1
    patience: int = 1
    seed: int = 0
    bf16: bool | None = None

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1 or not self.lr > 0 or self.weight_decay < 0:
            raise InvalidArgumentError("epochs, batch_size and lr must be positive")
        if not 0.0 <= self.val_fraction < 1.0 or self.patience < 0:
            raise InvalidArgumentError("val_fraction must be in [0, 1) and patience >= 0")


def set_torch_threads(n: int) -> None:
    """Limit torch's intra-op threads (``captain learn critic --threads``)."""
    torch.set_num_threads(int(n))


def _tensors(
    critic: Critic, episodes: Sequence[EpisodeArrays]
) -> tuple[torch.Tensor, torch.Tensor]:
    b = request_states(episodes)
    x = torch.from_numpy(critic.spec.encode(b.x, b.t, b.tasks))
    return x, torch.from_numpy(b.y.astype(np.float32))


def split_groups(
    episodes: Sequence[EpisodeArrays], fraction: float, salt: str
) -> tuple[list[EpisodeArrays], list[EpisodeArrays]]:
    """(kept, aside): about ``fraction`` of the start-state groups aside, by a hash of the id."""
    aside = [e for e in episodes if unit_hash(e.group, salt) < fraction]
    kept = [e for e in episodes if unit_hash(e.group, salt) >= fraction]
    return kept, aside


def warm_start(
    critic: Critic, episodes: Sequence[EpisodeArrays], config: WarmStartConfig = WarmStartConfig()
) -> dict[str, Any]:
    """Train ``critic`` on every request state of ``episodes``; returns a small log."""
    train, val = split_groups(episodes, config.val_fraction, "critic-val")
    if not train or not val:
        train, val = list(episodes), []
    x, y = _tensors(critic, train)
    xv, yv = _tensors(critic, val) if val else (None, None)
    model = critic.model
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    n = x.shape[0]
    steps = config.epochs * ((n + config.batch_size - 1) // config.batch_size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=config.lr * 0.1)
    gen = torch.Generator().manual_seed(config.seed)
    bf16 = native_bf16() if config.bf16 is None else config.bf16
    t0, losses, val_losses = time.perf_counter(), [], []
    best: tuple[float, int, dict[str, torch.Tensor]] | None = None
    for epoch in range(config.epochs):
        model.train()
        perm = torch.randperm(n, generator=gen)
        total = 0.0
        for k in range(0, n, config.batch_size):
            idx = perm[k : k + config.batch_size]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = model(x[idx])
            loss = F.binary_cross_entropy_with_logits(logits.float(), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * idx.numel()
        losses.append(total / n)
        if xv is None or yv is None:
            continue
        model.eval()
        with torch.no_grad():
            vl = float(F.binary_cross_entropy_with_logits(model(xv), yv))
        val_losses.append(vl)
        if best is None or vl < best[0]:
            best = (vl, epoch, {k: v.detach().clone() for k, v in model.state_dict().items()})
        elif epoch - best[1] > config.patience:
            break
    if best is not None:
        model.load_state_dict(best[2])
    critic.version += 1
    return {
        "states": n,
        "val_states": 0 if xv is None else int(xv.shape[0]),
        "episodes": len(episodes),
        "epochs_run": len(losses),
        "max_epochs": config.epochs,
        "best_epoch": None if best is None else best[1] + 1,
        "bf16": bf16,
        "epoch_loss": losses,
        "val_loss": val_losses,
        "wall_s": time.perf_counter() - t0,
    }


def bce_loss(critic: Critic, episodes: Sequence[EpisodeArrays]) -> float:
    """Mean BCE of the critic over every request state of ``episodes``."""
    x, y = _tensors(critic, episodes)
    critic.model.eval()
    with torch.no_grad():
        return float(F.binary_cross_entropy_with_logits(critic.model(x), y))


def evaluate(critic: Critic, episodes: Sequence[EpisodeArrays]) -> dict[str, float | int]:
    """AUC, within-group AUC, Brier and ECE over every request state of ``episodes``."""
    b = request_states(episodes)
    v = critic.values(b.x, b.t, b.tasks)
    groups = [episodes[i].group for i in b.episode]
    return critic_metrics(v, b.y, groups, len(episodes))


@dataclass
class CoTrainRound:
    """One round's frozen values (from critic ``critic_version``) and its states."""

    round_index: int
    critic_version: int
    episodes: tuple[EpisodeArrays, ...]
    values: dict[str, EpisodeValues]
    finished: bool = False


class CoTrainer:
    """After each round, ``steps_per_round`` full-batch AdamW steps over that round's states.

    The paper gives no co-training learning rate; 1e-4 keeps two Adam steps (whose first
    updates move every weight by about ``lr``) small against the warm-started weights.
    """

    def __init__(
        self, critic: Critic, lr: float = 1e-4, weight_decay: float = 1e-4, steps_per_round: int = 2
    ) -> None:
        if steps_per_round < 1 or not lr > 0:
            raise InvalidArgumentError("steps_per_round and lr must be positive")
        self.critic = critic
        self.steps_per_round = int(steps_per_round)
        self.opt = torch.optim.AdamW(critic.model.parameters(), lr=lr, weight_decay=weight_decay)
        self.rounds_done = 0
        self._open: CoTrainRound | None = None

    def begin_round(self, episodes: Sequence[EpisodeArrays]) -> CoTrainRound:
        """Score the round with the current critic (the values its advantages must use)."""
        if self._open is not None:
            raise LearnError(f"round {self._open.round_index} is still open: finish it first")
        if not episodes:
            raise InvalidArgumentError("a round needs episodes")
        rnd = CoTrainRound(
            self.rounds_done,
            self.critic.version,
            tuple(episodes),
            self.critic.episode_values(episodes),
        )
        self._open = rnd
        return rnd

    def finish_round(self, rnd: CoTrainRound) -> dict[str, float | int]:
        """Update the critic on the round's request states (after its values were used)."""
        if rnd.finished or rnd is not self._open:
            raise LearnError(f"round {rnd.round_index} is not the open round (already finished?)")
        if self.critic.version != rnd.critic_version:
            raise LearnError("the critic changed between scoring and updating this round")
        x, y = _tensors(self.critic, rnd.episodes)
        model = self.critic.model
        model.train()
        losses = []
        for _ in range(self.steps_per_round):
            loss = F.binary_cross_entropy_with_logits(model(x), y)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            losses.append(float(loss.detach()))
        rnd.finished = True
        self._open = None
        self.rounds_done += 1
        self.critic.version += 1
        return {
            "round": rnd.round_index,
            "states": int(x.shape[0]),
            "loss_before": losses[0],
            "loss_after_first_step": losses[-1],
            "critic_version": self.critic.version,
        }

    def save(self, folder: str | Path) -> None:
        """The critic folder plus ``cotrain.pt`` (optimizer state, rounds done) for resume."""
        p = self.critic.save(folder)
        torch.save(
            {
                "optimizer": self.opt.state_dict(),
                "rounds_done": self.rounds_done,
                "steps_per_round": self.steps_per_round,
            },
            p / "cotrain.pt",
        )

    @classmethod
    def load(cls, folder: str | Path, **kwargs: float) -> CoTrainer:
        critic = Critic.load(folder)
        ct = cls(critic, **kwargs)  # type: ignore[arg-type]
        state_path = Path(folder) / "cotrain.pt"
        if state_path.is_file():
            state = torch.load(state_path, weights_only=True)
            ct.opt.load_state_dict(state["optimizer"])
            ct.rounds_done = int(state["rounds_done"])
        return ct
