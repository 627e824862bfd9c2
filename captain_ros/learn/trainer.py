"""trl's ``SFTTrainer`` with per-turn weights, and the run's progress bar and train log.

Why a subclass: trl 1.16 supervises assistant tokens only through ``{% generation %}`` markers in
the chat template (SmolLM2's template has none) and has no per-turn weights. The data therefore
arrive tokenized (:mod:`captain_ros.learn.tokenize` labels the assistant spans and gives each
token its turn's w_t; dataset preparation is skipped), and :meth:`WeightedSFTTrainer.compute_loss`
implements the paper's objective (eq. 2) on the LM head of the supervised positions only:

    loss = -sum_tokens w_t * log pi(token | prefix) / N

with N the number of supervised tokens (label != -100 and w_t > 0) in the whole
gradient-accumulation step (:meth:`get_batch_samples` counts them), so a turn with w_t = 0
contributes exactly nothing, whether or not its tokens carry labels, and accumulation over
micro-batches equals one large batch.

Which LM head: on CUDA, trl's fused head (its Triton kernel scores only the labelled positions in
vocabulary tiles, without the full logits). Elsewhere trl's torch fallback scores *every* position
(it keeps tile shapes fixed for compiled devices) and folds each 32k-wide tile through several fp32
temporaries: 4.6 s a 2,200-token sequence on the AMD EPYC CPU, a quarter of the step. There the
forward keeps the logits of the supervised positions only (transformers' ``logits_to_keep`` with
their indices), 0.5 s for the same sequence (results/sft.md); they are a quarter or less of an
episode's tokens, so the kept logits are small. Data-parallel (``torchrun``/``accelerate``, gloo on CPUs,
NCCL on GPUs): N is summed over the processes and each process's loss is multiplied by their
number, which DDP's gradient averaging divides out again, so P processes with batch b equal one
process accumulating P micro-batches of b (what transformers does for its own loss). The rest (optimizer, schedule, gradient
clipping, bf16 autocast, checkpoints with RNG state, resume, evaluation, peft wrapping) is
``transformers.Trainer``/trl.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback
from trl import SFTTrainer

from captain_ros.learn.tokenize import IGNORE


def supervised(labels: Any, weights: Any) -> Any:
    """Mask of the predicted positions (labels shifted by one) that count: label and w_t > 0."""
    return (labels[:, 1:] != IGNORE) & (weights[:, 1:] > 0)


class WeightedSFTTrainer(SFTTrainer):
    """``SFTTrainer`` whose loss weights each supervised token by its turn's w_t."""

    # compute_loss divides by the accumulation step's token count itself
    loss_is_scaled_for_ga = True  # type: ignore[assignment]

    def get_batch_samples(
        self, epoch_iterator: Any, num_batches: int, device: Any
    ) -> tuple[list[Any], Any]:
        batches, _ = super().get_batch_samples(epoch_iterator, num_batches, device)
        n = torch.tensor(
            sum(int(supervised(b["labels"], b["weights"]).sum()) for b in batches), device=device
        )
        if self.args.world_size > 1:  # every process divides by the whole step's count
            n = self.accelerator.gather(n.reshape(1)).sum()
        return batches, n.clamp(min=1)

    def compute_loss(
        self,
        model: Any,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: Any = None,
    ) -> Any:
        weights = inputs.pop("weights")
        inputs["use_cache"] = False
        mask = supervised(inputs["labels"], weights)
        if self.args.device.type == "cuda":
            outputs = model(**inputs, fused_lm_head=True)
            log_probs, is_top1, w = outputs.log_probs, outputs.is_top1, weights[:, 1:]
        else:
            outputs, log_probs, is_top1, keep = kept_head(model, inputs, mask)
            mask, w = mask[:, keep], weights[:, 1:][:, keep]
        n = mask.sum() if num_items_in_batch is None else num_items_in_batch
        loss = -(log_probs * w.to(log_probs.dtype) * mask).sum() / torch.as_tensor(n).clamp(min=1)
        if num_items_in_batch is not None and self.args.world_size > 1:
            loss = loss * self.accelerator.num_processes  # DDP averages the gradients
        mode = "train" if model.training else "eval"
        valid = int(mask.sum())
        if valid and is_top1 is not None:
            top1 = float((is_top1 * mask).sum())
            self._metrics[mode]["mean_token_accuracy"].append(top1 / valid)
        return (loss, outputs) if return_outputs else loss


def kept_head(model: Any, inputs: dict[str, Any], mask: Any) -> tuple[Any, Any, Any, Any]:
    """The model's forward with logits only at the positions (of the shifted labels) that some row
    supervises: ``(outputs, log_probs, is_top1, keep)``, the last three ``[batch, len(keep)]``.

    The SFT counterpart of :func:`captain_ros.learn.rl.logprobs.token_logprobs` (one unpacked
    sequence, no gradient needed for an empty selection): this one takes the collator's batch
    (position ids of packed rows), gives top-1 hits for the accuracy metric, and keeps an
    all-unsupervised micro-batch connected to the graph (a differentiable zero for DDP)."""
    keep = mask.any(0).nonzero().squeeze(-1)
    targets = inputs["labels"][:, 1:][:, keep]
    forward = {k: v for k, v in inputs.items() if k != "labels"}  # no full-sequence HF loss
    outputs = model(**forward, logits_to_keep=keep)
    logits = outputs.logits.float()
    log_probs = -torch.nn.functional.cross_entropy(
        logits.transpose(1, 2), targets.clamp(min=0), reduction="none"
    )
    is_top1 = logits.argmax(-1) == targets
    outputs.logits = None  # evaluation asks for the loss only; the kept logits are not kept
    return outputs, log_probs, is_top1, keep


class RunLog(TrainerCallback):
    """A progress bar with tokens/s, and one JSON line per log event in ``path``.

    On resume, lines logged after the checkpoint's step are dropped, so the log of an interrupted
    and resumed run reads like one uninterrupted run.
    """

    def __init__(self, path: str | Path, show: bool = True) -> None:
        self.path = Path(path)
        self.show = show
        self.bar: Any = None
        self.t0 = 0.0
        self.tokens0 = 0

    def _trim(self, step: int) -> None:
        if not self.path.exists():
            return
        keep = [
            ln
            for ln in self.path.read_text().splitlines()
            if ln.strip() and json.loads(ln).get("step", 0) <= step
        ]
        self.path.write_text("".join(ln + "\n" for ln in keep))

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if state.global_step:
            self._trim(state.global_step)
        elif self.path.exists():
            self.path.unlink()
        self.t0 = time.perf_counter()
        self.tokens0 = state.num_input_tokens_seen
        if self.show and state.is_world_process_zero:
            from tqdm.auto import tqdm

            self.bar = tqdm(
                total=state.max_steps,
                initial=state.global_step,
                desc="sft",
                unit="step",
                file=sys.stderr,
                dynamic_ncols=True,
            )

    def tokens_per_s(self, state: Any) -> float:
        dt = time.perf_counter() - self.t0
        return (state.num_input_tokens_seen - self.tokens0) / dt if dt > 0 else 0.0

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if self.bar is not None:
            self.bar.update(state.global_step - self.bar.n)
            last: dict[str, Any] = next((h for h in reversed(state.log_history) if "loss" in h), {})
            self.bar.set_postfix(
                loss=f"{last.get('loss', float('nan')):.4f}",
                tok_s=f"{self.tokens_per_s(state):.0f}",
            )

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        if not state.is_world_process_zero or not logs:
            return
        rec = {
            "step": state.global_step,
            "epoch": state.epoch,
            **logs,
            "tokens_seen": state.num_input_tokens_seen,
            "tokens_per_s": self.tokens_per_s(state),
            "elapsed_s": time.perf_counter() - self.t0,
        }
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
