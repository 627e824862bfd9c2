"""CaPtain's RL policy update (eq. 8, appendix A.2) for a transformers/peft student.

- :mod:`samples` (numpy): episode segments as token sequences, the append-only check, request
  sampling with inclusion weights;
- :mod:`loss` (torch): double-sided ratio mask, ratio-weighted advantage, k3 KL to the SFT model;
- :mod:`logprobs` (torch): per-token log-probs at chosen positions, the peft reference context;
- :mod:`update` (torch): K-round gradient accumulation, AdamW with warm-up then constant LR,
  staleness check, policy versions, state for checkpoint/resume;
- :mod:`noise` (torch): count sketches of per-episode gradients and appendix H's noise scale.

Importing this package does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "RLSample": "samples",
    "segment_sample": "samples",
    "sample_requests": "samples",
    "token_weights": "samples",
    "MAX_REQUESTS": "samples",
    "LossConfig": "loss",
    "LossOutput": "loss",
    "masked_policy_loss": "loss",
    "token_logprobs": "logprobs",
    "reference_context": "logprobs",
    "PolicyUpdater": "update",
    "UpdateConfig": "update",
    "RoundStats": "update",
    "check_staleness": "update",
    "GradientSketch": "noise",
    "NoiseScale": "noise",
    "simple_noise_scale": "noise",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
