"""The privileged simulator critic of CaPtain (section 3.3, appendix A.2).

- :mod:`inputs` (numpy): [x(s); t; onehot(task)], the fixed standardisation, and the check that
  no policy-behaviour counter is among the inputs;
- :mod:`metrics` (numpy): AUC, within-group AUC, Brier, ECE;
- :mod:`model` (torch): the 5-member ensemble of 3x256 MLPs, logits averaged;
- :mod:`critic` (torch): scoring, versions, the critic folder;
- :mod:`train` (torch): warm start, co-training with the before-update order, evaluation.

Importing this package does not import torch; the torch modules load on first use of their names.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Critic": "critic",
    "EnsembleMLP": "model",
    "CoTrainer": "train",
    "CoTrainRound": "train",
    "WarmStartConfig": "train",
    "warm_start": "train",
    "evaluate": "train",
    "bce_loss": "train",
    "InputSpec": "inputs",
    "check_feature_names": "inputs",
    "request_states": "inputs",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
