"""Per-token log-probabilities of a causal LM at chosen positions (one forward pass).

``token_logprobs(model, ids, positions)[k] = log p(ids[positions[k]] | ids[:positions[k]])``.

Only the positions that are scored get logits: transformers' ``logits_to_keep`` takes the index
tensor (positions - 1), so a 49k-vocabulary model does not materialise (L, V) logits for an 8k
context. Log-softmax runs in float32. ``temperature`` must be the rollout's sampling temperature:
the ratio compares the same tempered distributions the rollout sampled from.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch


def token_logprobs(
    model: Any, input_ids: torch.Tensor, positions: torch.Tensor, temperature: float = 1.0
) -> torch.Tensor:
    """(n,) log-probs of ``input_ids[positions]``; gradients flow unless called under no_grad.

    The model reads the tokens up to the last position only: a causal model's logits there do not
    depend on what follows, so a segment whose later requests were not drawn costs less."""
    if input_ids.dim() != 1 or positions.dim() != 1:
        raise ValueError("input_ids and positions must be 1-D")
    if positions.numel() == 0:
        return torch.zeros(0, device=input_ids.device)
    if int(positions.min()) < 1 or int(positions.max()) >= input_ids.numel():
        raise ValueError("positions must lie in 1 .. L-1 (position 0 has no context)")
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    ids = input_ids[: int(positions.max()) + 1].unsqueeze(0)
    keep = positions - 1
    try:
        logits = model(input_ids=ids, logits_to_keep=keep, use_cache=False).logits[0]
        if logits.shape[0] != keep.numel():  # a model that ignored the index tensor
            logits = logits[keep] if logits.shape[0] == ids.shape[1] else None
    except TypeError:
        logits = None
    if logits is None:
        logits = model(input_ids=ids, use_cache=False).logits[0][keep]
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)
    return logp.gather(-1, input_ids[positions].unsqueeze(-1)).squeeze(-1)


def reference_context(model: Any) -> AbstractContextManager[Any]:
    """The SFT reference: a peft model with its adapter disabled; else no change.

    With LoRA on top of the SFT weights, disabling the adapter gives exactly pi_SFT without a
    second copy of the model.
    """
    disable = getattr(model, "disable_adapter", None)
    return disable() if callable(disable) else nullcontext()
