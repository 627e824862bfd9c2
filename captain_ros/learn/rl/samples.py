"""What the policy update consumes: one token sequence per episode segment (numpy, torch-free).

The rendered history is append-only within a segment (records.md), so request t's prompt h_t
plus its reply a_t is a prefix of the segment's final context. One forward pass over that final
context therefore yields the current policy's log-probabilities of every request's reply (the
single-pass update); :func:`segment_sample` checks the prefix property and refuses otherwise.

Request sampling (CaPtain appendix A.2): at most 8 requests per trajectory enter the policy
gradient, drawn uniformly without replacement and reweighted by the inverse of their inclusion
probability k / T, so the weighted sum over sampled requests is an unbiased estimate of the sum
over all T requests. The critic still trains on every request state (it never sees this).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from captain_ros.core.errors import InvalidArgumentError

MAX_REQUESTS = 8


@dataclass(frozen=True)
class RLSample:
    """One episode segment as tokens.

    Attributes:
        episode_id: The episode (and its group, for reporting).
        input_ids: (L,) token ids of the segment's final context.
        request_of_token: (L,) request index t (>= 1) of each generated token, 0 elsewhere
            (prompt, tool outputs, template scaffolding).
        old_logprobs: (L,) log pi_rollout of each generated token (0 elsewhere), as recorded by
            the rollout policy when it sampled the token.
        policy_version: Version of the policy that generated the rollout (staleness check).
    """

    episode_id: str
    input_ids: np.ndarray
    request_of_token: np.ndarray
    old_logprobs: np.ndarray
    policy_version: int

    def __post_init__(self) -> None:
        n = np.asarray(self.input_ids).shape
        if len(n) != 1 or n[0] < 2:
            raise InvalidArgumentError(f"{self.episode_id}: input_ids must be (L,) with L >= 2")
        for name in ("request_of_token", "old_logprobs"):
            if np.asarray(getattr(self, name)).shape != n:
                raise InvalidArgumentError(f"{self.episode_id}: {name} must have shape {n}")
        gen = np.asarray(self.request_of_token) > 0
        if gen[0]:
            raise InvalidArgumentError(f"{self.episode_id}: the first token has no context")
        lp = np.asarray(self.old_logprobs, np.float64)
        if not np.all(np.isfinite(lp[gen])) or np.any(lp[gen] > 1e-6):
            raise InvalidArgumentError(f"{self.episode_id}: rollout log-probs must be finite <= 0")

    @property
    def requests(self) -> tuple[int, ...]:
        """Request indices that have generated tokens in this segment."""
        r = np.unique(np.asarray(self.request_of_token))
        return tuple(int(v) for v in r if v > 0)


def segment_sample(
    episode_id: str,
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    completion_logprobs: Sequence[Sequence[float]],
    policy_version: int,
    first_request: int = 1,
) -> RLSample:
    """Build an :class:`RLSample` from per-request prompt ids, reply ids and reply log-probs.

    Request ``first_request + k`` saw ``prompts[k]`` and generated ``completions[k]``. Every
    prompt must extend the previous prompt + reply (append-only history); the tokens in between
    (tool outputs, receipts, template) carry no request index.
    """
    if not (len(prompts) == len(completions) == len(completion_logprobs)) or not prompts:
        raise InvalidArgumentError("need one prompt, completion and log-prob list per request")
    ids: list[int] = []
    req: list[int] = []
    lps: list[float] = []
    for k, (p, c, lp) in enumerate(zip(prompts, completions, completion_logprobs, strict=True)):
        p, c = list(p), list(c)
        if len(c) != len(lp):
            raise InvalidArgumentError(
                f"request {first_request + k}: {len(c)} tokens but {len(lp)} log-probs"
            )
        if p[: len(ids)] != ids:
            raise InvalidArgumentError(
                f"request {first_request + k}: its prompt does not extend "
                f"the previous context (history rewritten: new segment)"
            )
        extra = p[len(ids) :]
        ids += extra + c
        req += [0] * len(extra) + [first_request + k] * len(c)
        lps += [0.0] * len(extra) + [float(v) for v in lp]
    return RLSample(
        episode_id,
        np.asarray(ids, np.int64),
        np.asarray(req, np.int64),
        np.asarray(lps, np.float64),
        int(policy_version),
    )


def sample_requests(
    requests: Sequence[int], rng: np.random.Generator, max_requests: int = MAX_REQUESTS
) -> dict[int, float]:
    """Up to ``max_requests`` of ``requests``, uniformly without replacement, with weights T/k."""
    if max_requests < 1:
        raise InvalidArgumentError("max_requests must be >= 1")
    reqs = sorted(set(int(r) for r in requests))
    n = len(reqs)
    if n == 0:
        return {}
    k = min(max_requests, n)
    chosen = rng.choice(n, size=k, replace=False)
    return {reqs[i]: n / k for i in sorted(chosen)}


def token_weights(
    sample: RLSample, advantages: Mapping[int, float], inclusion: Mapping[int, float]
) -> tuple[np.ndarray, np.ndarray]:
    """(advantage per token, inclusion weight per token); zeros for unsampled/non-generated."""
    req = np.asarray(sample.request_of_token)
    adv = np.zeros(req.shape, np.float64)
    w = np.zeros(req.shape, np.float64)
    for t, wt in inclusion.items():
        if t not in advantages:
            raise InvalidArgumentError(f"{sample.episode_id}: no advantage for request {t}")
        m = req == t
        adv[m] = float(advantages[t])
        w[m] = float(wt)
    return adv, w
