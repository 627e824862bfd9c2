"""The critic ensemble in torch: five MLPs (three hidden layers of 256), logits averaged.

V(s, t) = sigmoid((1/5) sum_k f_k([x(s); t; onehot(task)]))   (CaPtain eq. 3)

The five members are stored as stacked weight tensors and evaluated with one batched matmul per
layer (``torch.baddbmm``), which is the same maths as five ``nn.Sequential`` MLPs and several
times faster on a CPU than looping over them. Members are initialised independently (PyTorch's
``nn.Linear`` default: uniform in +-1/sqrt(fan_in)) from one seeded generator. ReLU activations
(the paper does not name one).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

N_MEMBERS = 5
HIDDEN = (256, 256, 256)


class EnsembleMLP(nn.Module):
    """``n_members`` independent MLPs over the same input, evaluated together."""

    def __init__(
        self, d_in: int, n_members: int = N_MEMBERS, hidden: Sequence[int] = HIDDEN, seed: int = 0
    ) -> None:
        super().__init__()
        if d_in < 1 or n_members < 1 or not hidden or min(hidden) < 1:
            raise ValueError("d_in, n_members and hidden sizes must be positive")
        self.d_in, self.n_members, self.hidden = int(d_in), int(n_members), tuple(hidden)
        sizes = [self.d_in, *self.hidden, 1]
        gen = torch.Generator().manual_seed(int(seed))
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
            bound = 1.0 / math.sqrt(fan_in)
            w = (torch.rand(n_members, fan_in, fan_out, generator=gen) * 2 - 1) * bound
            b = (torch.rand(n_members, 1, fan_out, generator=gen) * 2 - 1) * bound
            self.weights.append(nn.Parameter(w))
            self.biases.append(nn.Parameter(b))

    def member_logits(self, x: torch.Tensor) -> torch.Tensor:
        """(n_members, N) logits of every member for inputs ``x`` (N, d_in)."""
        h = x.unsqueeze(0).expand(self.n_members, -1, -1)
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = torch.baddbmm(b, h, w)
            if i < last:
                h = torch.relu(h)
        return h.squeeze(-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(N,) the ensemble logit: the mean of the members' logits."""
        return self.member_logits(x).mean(dim=0)


def native_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX); else it is emulated."""
    cpu = getattr(torch, "cpu", None)
    for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        fn = getattr(cpu, probe, None)
        try:
            if callable(fn) and fn():
                return True
        except RuntimeError:
            continue
    return False
