"""Padding-free batches of token sequences, with per-token weights.

The sequences of a batch are concatenated into one row and ``position_ids`` restart at 0 for
each; without an ``attention_mask``, transformers builds a block-diagonal causal mask from the
position ids (``masking_utils.find_packed_sequence_indices``), so no sequence attends to another
and no compute is spent on padding. The first token of each sequence carries no label (nothing
precedes it in its own sequence). This is trl's padding-free layout, plus the ``weights`` trl's
collator does not carry.

With the sdpa or eager attention of CPUs, a batch of several sequences materialises an N x N
block mask over the N concatenated tokens; for whole-episode sequences of many thousand tokens use
one sequence per micro-batch and gradient accumulation (the default), which needs no mask at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from captain_ros.learn.tokenize import IGNORE


class PackedCollator:
    """Collate ``{"input_ids", "labels", "weights"}`` features into one padding-free row."""

    def __call__(self, features: Sequence[dict[str, Any]]) -> dict[str, Any]:
        import torch

        if not features:
            raise ValueError("empty batch")
        ids: list[int] = []
        labels: list[int] = []
        weights: list[float] = []
        positions: list[int] = []
        for f in features:
            n = len(f["input_ids"])
            if not n == len(f["labels"]) == len(f["weights"]):
                raise ValueError("input_ids, labels and weights differ in length")
            ids += list(f["input_ids"])
            labels += [IGNORE] + list(f["labels"][1:])
            weights += [0.0] + [float(w) for w in f["weights"][1:]]
            positions += range(n)
        return {
            "input_ids": torch.tensor([ids], dtype=torch.long),
            "labels": torch.tensor([labels], dtype=torch.long),
            "weights": torch.tensor([weights], dtype=torch.float32),
            "position_ids": torch.tensor([positions], dtype=torch.long),
        }
