"""The policy loss of CaPtain (eq. 8, appendix A.2) in torch.

For token j of request t with ratio r = pi_theta / pi_rollout:

    m_tj = 1[0.2 < r_tj < 4]                          double-sided token mask (drop, not clip)
    L    = - sum m_tj * w_t * r_tj * A_t  +  beta * sum m_tj * w_t * k3_tj
    k3   = exp(log pi_ref - log pi_theta) - (log pi_ref - log pi_theta) - 1    (beta = 0.002)

w_t is the request's inclusion weight (T / k when k of T requests were sampled). All tokens of a
request share its advantage A_t. The KL is taken to the SFT (reference) model on kept tokens only.

trl's GRPOTrainer has no hook for per-request advantages (trl issue #4525) and applies its
token mask only against vLLM log-probabilities, so the loss is written here; it accepts any
token layout (a flat or (B, L) batch), and returns the figures the round log reports.

Numerics: masked-out tokens get log-ratio 0 before ``exp``, so a drifted token (ratio 1e30)
contributes neither to the loss nor, through ``inf * 0``, NaN to the gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

RATIO_LOW = 0.2
RATIO_HIGH = 4.0
KL_BETA = 0.002


@dataclass(frozen=True)
class LossConfig:
    """Token mask bounds and the KL weight (the paper's values by default)."""

    ratio_low: float = RATIO_LOW
    ratio_high: float = RATIO_HIGH
    beta: float = KL_BETA

    def __post_init__(self) -> None:
        if not 0.0 <= self.ratio_low < 1.0 < self.ratio_high or self.beta < 0:
            raise ValueError("need 0 <= ratio_low < 1 < ratio_high and beta >= 0")


@dataclass(frozen=True)
class LossOutput:
    """The loss (a scalar with gradient) and detached statistics."""

    loss: torch.Tensor
    policy_term: float
    kl_term: float
    tokens: int
    kept_tokens: int
    kl_mean: float
    ratio_mean: float

    @property
    def kept_fraction(self) -> float:
        return self.kept_tokens / self.tokens if self.tokens else float("nan")


def masked_policy_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    logp_ref: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    mask: torch.Tensor,
    config: LossConfig = LossConfig(),
) -> LossOutput:
    """Eq. 8 summed over the given tokens (``mask``: generated tokens of sampled requests)."""
    shapes = {tuple(t.shape) for t in (logp_new, logp_old, logp_ref, advantages, weights, mask)}
    if len(shapes) != 1:
        raise ValueError(f"all inputs need the same shape, got {sorted(shapes)}")
    old, ref = logp_old.detach().to(logp_new.dtype), logp_ref.detach().to(logp_new.dtype)
    log_ratio = logp_new - old
    with torch.no_grad():
        ratio_raw = torch.exp(log_ratio.detach())
        keep = mask.bool() & (ratio_raw > config.ratio_low) & (ratio_raw < config.ratio_high)
    zero = torch.zeros_like(log_ratio)
    ratio = torch.exp(torch.where(keep, log_ratio, zero))
    d = torch.where(keep, ref - logp_new, zero)
    k3 = torch.exp(d) - d - 1.0
    kf = keep.to(logp_new.dtype)
    w = weights.detach().to(logp_new.dtype)
    a = advantages.detach().to(logp_new.dtype)
    policy = -(kf * w * ratio * a).sum()
    kl = (kf * w * k3).sum()
    loss = policy + config.beta * kl
    n_tok = int(mask.bool().sum())
    n_keep = int(keep.sum())
    with torch.no_grad():
        kl_mean = float((kf * k3).sum() / max(n_keep, 1))
        ratio_mean = float(ratio_raw[mask.bool()].mean()) if n_tok else float("nan")
    return LossOutput(
        loss, float(policy.detach()), float(kl.detach()), n_tok, n_keep, kl_mean, ratio_mean
    )
