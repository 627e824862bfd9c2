"""The gradient-noise scale of CaPtain appendix H: how many episodes one optimizer step needs.

The simple noise scale (McCandlish et al., "An empirical model of large-batch training") is
B_noise = tr(Sigma) / |G|^2, with G the mean per-episode gradient and Sigma its covariance. From
n per-episode gradients g_i (unbiased estimators):

    tr(Sigma)_hat = sum_i |g_i - g_bar|^2 / (n - 1),     |G|^2_hat = |g_bar|^2 - tr(Sigma)_hat / n

When |G|^2_hat <= 0 the noise swamps the signal at this n and B_noise is reported as infinite
(at least n). A percentile bootstrap over episodes gives the lower bound the paper quotes.

Gradients are compared in a count sketch (each coordinate hashed to one of ``dim`` buckets with
a random sign), which preserves inner products in expectation, so per-episode gradients of a
LoRA student fit in memory: CaPtain sketched its last four layers the same way. The policy
updater records a sketch of each episode's gradient for free: gradients accumulate linearly, so
the sketch of ``.grad`` after an episode minus the one before is that episode's sketch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


class GradientSketch:
    """Count sketch of the gradients of ``params`` into ``dim`` buckets (fixed by ``seed``)."""

    def __init__(
        self, params: Sequence[torch.nn.Parameter], dim: int = 4096, seed: int = 0
    ) -> None:
        if dim < 1:
            raise ValueError("dim must be >= 1")
        self.params = list(params)
        self.dim = int(dim)
        gen = torch.Generator().manual_seed(int(seed))
        self._idx = [torch.randint(0, dim, (p.numel(),), generator=gen) for p in self.params]
        self._sign = [
            torch.randint(0, 2, (p.numel(),), generator=gen, dtype=torch.int8) * 2 - 1
            for p in self.params
        ]

    def of_grads(self) -> np.ndarray:
        """(dim,) sketch of the parameters' current ``.grad`` (missing grads count as 0)."""
        out = torch.zeros(self.dim, dtype=torch.float64)
        for p, idx, sign in zip(self.params, self._idx, self._sign, strict=True):
            if p.grad is not None:
                g = p.grad.detach().reshape(-1).to("cpu", torch.float64)
                out.index_add_(0, idx, g * sign.to(torch.float64))
        return out.numpy()

    def of_vector(self, v: torch.Tensor) -> np.ndarray:
        """Sketch of a flat vector laid out like the concatenated parameters (for tests)."""
        out = torch.zeros(self.dim, dtype=torch.float64)
        k = 0
        for idx, sign in zip(self._idx, self._sign, strict=True):
            part = v[k : k + idx.numel()].to(torch.float64)
            out.index_add_(0, idx, part * sign.to(torch.float64))
            k += idx.numel()
        return out.numpy()


@dataclass(frozen=True)
class NoiseScale:
    """B_noise [episodes] with its parts and a bootstrap lower bound."""

    b_noise: float
    trace_sigma: float
    g2: float
    n: int
    lower_95: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "b_noise": self.b_noise,
            "trace_sigma": self.trace_sigma,
            "g2": self.g2,
            "n": self.n,
            "lower_95": self.lower_95,
        }


def _estimate(g: np.ndarray) -> tuple[float, float, float]:
    n = g.shape[0]
    mean = g.mean(axis=0)
    tr = float(((g - mean) ** 2).sum() / (n - 1))
    g2 = float(mean @ mean) - tr / n
    return (tr / g2 if g2 > 0 else float("inf")), tr, g2


def simple_noise_scale(grads: np.ndarray, bootstrap: int = 200, seed: int = 0) -> NoiseScale:
    """B_noise from per-episode gradients (n, d), n >= 2; ``bootstrap = 0`` skips the bound."""
    g = np.asarray(grads, dtype=np.float64)
    if g.ndim != 2 or g.shape[0] < 2:
        raise ValueError("need per-episode gradients of shape (n >= 2, d)")
    if not np.all(np.isfinite(g)):
        raise ValueError("gradients must be finite")
    b, tr, g2 = _estimate(g)
    lower = None
    if bootstrap > 0:
        rng = np.random.default_rng(seed)
        boots = [_estimate(g[rng.integers(0, g.shape[0], g.shape[0])])[0] for _ in range(bootstrap)]
        lower = float(np.percentile(boots, 2.5, method="lower"))  # an element: no inf - inf
    return NoiseScale(b, tr, g2, g.shape[0], lower)
