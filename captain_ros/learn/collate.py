"""Padding-free batches of token sequences, with per-token weights, and the attention that keeps
packed sequences apart.

The sequences of a batch are concatenated into one row and ``position_ids`` restart at 0 for
each; the first token of each sequence carries no label (nothing precedes it in its own sequence).
This is trl's padding-free layout, plus the ``weights`` trl's collator does not carry.

Two ways keep the sequences of a row from attending to each other:

- the default (one sequence per micro-batch, gradient accumulation): no mask is needed at all;
  with several sequences and transformers' ``sdpa``, transformers builds a block-diagonal causal
  mask from the position ids (``masking_utils.find_packed_sequence_indices``): an N x N mask over
  the N concatenated tokens, whose attention costs N^2 however short the sequences are;
- :data:`PACKED_ATTENTION` (``captain learn sft`` uses it whenever a micro-batch can hold several
  sequences: ``--batch-size`` > 1 or ``--pack-tokens``): the collator also
  passes the sequences' lengths (``seq_lengths``, plain ints, so no device sync), and each sequence
  gets its own causal ``sdpa`` call (flash attention on a GPU) on its slice of the row; no mask is
  built.

Both run attention in the autocast dtype (:func:`in_autocast_dtype`): without packing, ``captain
learn sft`` uses :data:`AUTOCAST_ATTENTION`, transformers' ``sdpa`` and its masks, so cast.

:func:`pack_sequences` groups whole sequences into rows of at most a token budget (a GPU's
micro-batch): first-fit over a seeded shuffle, so rows mix tasks and fill their budget.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from captain_ros.learn.tokenize import IGNORE

PACKED_ATTENTION = "captain_packed_sdpa"
"""The name under which :func:`register_packed_attention` registers :func:`packed_sdpa`."""

AUTOCAST_ATTENTION = "captain_sdpa"
"""The name under which :func:`register_autocast_attention` registers :func:`autocast_sdpa`."""


class PackedCollator:
    """Collate ``{"input_ids", "labels", "weights"}`` features into one padding-free row.

    A feature may already hold several sequences (a row of :func:`pack_sequences`): its
    ``lengths`` then say where each one starts. With ``lengths=True`` the batch also carries
    ``seq_lengths``, the lengths of every sequence in the row, for :func:`packed_sdpa`.
    """

    def __init__(self, lengths: bool = False) -> None:
        self.lengths = lengths

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, Any]:
        import torch

        if not features:
            raise ValueError("empty batch")
        ids: list[int] = []
        labels: list[int] = []
        weights: list[float] = []
        positions: list[int] = []
        seq_lengths: list[int] = []
        for f in features:
            n = len(f["input_ids"])
            if not n == len(f["labels"]) == len(f["weights"]):
                raise ValueError("input_ids, labels and weights differ in length")
            parts = [int(x) for x in f.get("lengths") or [n]]
            if sum(parts) != n or min(parts) < 1:
                raise ValueError(f"lengths {parts} do not split a row of {n} tokens")
            ids += list(f["input_ids"])
            start = 0
            for m in parts:
                labels += [IGNORE] + list(f["labels"][start + 1 : start + m])
                weights += [0.0] + [float(w) for w in f["weights"][start + 1 : start + m]]
                positions += range(m)
                start += m
            seq_lengths += parts
        batch: dict[str, Any] = {
            "input_ids": torch.tensor([ids], dtype=torch.long),
            "labels": torch.tensor([labels], dtype=torch.long),
            "weights": torch.tensor([weights], dtype=torch.float32),
            "position_ids": torch.tensor([positions], dtype=torch.long),
        }
        if self.lengths:
            batch["seq_lengths"] = tuple(seq_lengths)
        return batch


def pack_sequences(lengths: Sequence[int], budget: int, seed: int) -> list[list[int]]:
    """Indices of ``lengths`` grouped into rows of at most ``budget`` tokens (a sequence longer
    than the budget gets a row of its own): first fit over the order of a ``seed``-ed shuffle."""
    if budget < 1:
        raise ValueError(f"budget must be >= 1 token, got {budget}")
    order = list(range(len(lengths)))
    random.Random(seed).shuffle(order)
    rows: list[list[int]] = []
    room: list[int] = []
    for i in order:
        n = int(lengths[i])
        slot = next((r for r, free in enumerate(room) if free >= n), None)
        if slot is None:
            rows.append([i])
            room.append(budget - n)
        else:
            rows[slot].append(i)
            room[slot] -= n
    return rows


def in_autocast_dtype(*tensors: Any) -> tuple[Any, ...]:
    """The attention inputs in the autocast dtype when autocast is on, else unchanged.

    CUDA's autocast casts ``scaled_dot_product_attention`` itself; the CPU's leaves it in fp32
    (RoPE's fp32 cos/sin promote the bf16 projections back), where its backward is 1.3x slower
    (211 against 158 ms a layer at 2,900 tokens on the AMD EPYC, results/sft.md)."""
    import torch

    device = tensors[0].device.type
    if not torch.is_autocast_enabled(device):
        return tensors
    low = torch.get_autocast_dtype(device)
    return tuple(t.to(low) for t in tensors)


def autocast_sdpa(
    module: Any, query: Any, key: Any, value: Any, attention_mask: Any, **kwargs: Any
) -> tuple[Any, None]:
    """transformers' ``sdpa`` attention (and its masks) in the autocast dtype: ``captain learn
    sft``'s attention when every micro-batch holds one sequence."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    query, key, value = in_autocast_dtype(query, key, value)
    return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)  # type: ignore[no-any-return]


def packed_sdpa(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    seq_lengths: Sequence[int] | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """transformers' ``sdpa`` attention run once per packed sequence (causal, no mask), the
    outputs concatenated: the same numbers as the block-diagonal mask, without its N^2 cost.
    Without ``seq_lengths`` (generation, an unpacked forward) it is plain ``sdpa``; either way in
    the autocast dtype (:func:`in_autocast_dtype`)."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if not seq_lengths or len(seq_lengths) == 1 or attention_mask is not None:
        return autocast_sdpa(module, query, key, value, attention_mask, **kwargs)
    query, key, value = in_autocast_dtype(query, key, value)
    total = query.shape[2]
    if sum(seq_lengths) != total:
        raise ValueError(f"seq_lengths sum to {sum(seq_lengths)}, the row holds {total} tokens")
    outs = []
    start = 0
    for n in seq_lengths:
        part = slice(start, start + n)
        out, _ = sdpa_attention_forward(
            module, query[:, :, part], key[:, :, part], value[:, :, part], None, **kwargs
        )
        outs.append(out)
        start += n
    return torch.cat(outs, dim=1), None


def register_packed_attention() -> str:
    """Register :func:`packed_sdpa` with transformers (idempotent); returns its name. It has no
    mask function, so transformers builds no mask for it."""
    from transformers import AttentionInterface

    AttentionInterface.register(PACKED_ATTENTION, packed_sdpa)
    return PACKED_ATTENTION


def register_autocast_attention() -> str:
    """Register :func:`autocast_sdpa` with transformers, with ``sdpa``'s mask function (so a row
    of several sequences still gets its block-diagonal mask); returns its name. Idempotent."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(AUTOCAST_ATTENTION, autocast_sdpa)
    AttentionMaskInterface.register(AUTOCAST_ATTENTION, sdpa_mask)
    return AUTOCAST_ATTENTION
