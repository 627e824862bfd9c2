"""Rollouts served by vLLM: the student behind an OpenAI-compatible server, one LoRA per version.

What the GPU variant needs instead of the worker's in-process model (:mod:`.rollout`):

- :func:`ensure_adapter`: the policy version's adapter folder loaded into the server under the
  name ``<model>-v<NNNN>`` through vLLM's runtime LoRA API (``POST /v1/load_lora_adapter``, which
  the server enables with ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`` and ``--enable-lora``). It asks
  ``GET /v1/models`` first, so a version is loaded once however many workers use it, and treats
  "already loaded" as success (two workers may race for a new version).
- :class:`ServedRolloutPolicy`: requests at temperature 1 without top-p (so the returned
  log-probabilities are those of the distribution sampled from, the ratio's denominator), with a
  per-request seed derived from the job's sampling seed, and ``token_info``: the prompt ids, reply
  ids and reply log-probs recorded exactly like the in-process student's (``rollout.json``).

The adapter folder must be readable by the server at the same path (same machine or a shared file
system), as for Ray workers. The trainer never talks to the server: it publishes versions as
before (:mod:`.sync`) and the jobs name them.
"""

from __future__ import annotations

from typing import Any

import httpx

from captain_ros.core.errors import CaptainError
from captain_ros.learn.rl.rollout import RecordingPolicy
from captain_ros.policy.base import PolicyReply
from captain_ros.policy.openai_client import OpenAIChatClient


class ServedAdapterError(CaptainError):
    """The server could not list or load a policy version's adapter."""


def adapter_name(model: str, version: int) -> str:
    """The served name of policy version ``version`` of ``model``."""
    return f"{model}-v{int(version):04d}"


def ensure_adapter(
    base_url: str,
    model: str,
    version: int,
    folder: str,
    transport: httpx.BaseTransport | None = None,
    timeout_s: float = 120.0,
) -> str:
    """Make the server serve ``folder`` as :func:`adapter_name`; returns that name."""
    name = adapter_name(model, version)
    with httpx.Client(
        base_url=base_url.rstrip("/"),
        transport=transport,
        timeout=httpx.Timeout(timeout_s, connect=10.0),
    ) as http:
        try:
            listed = http.get("/models")
            listed.raise_for_status()
            if name in {m.get("id") for m in listed.json().get("data") or ()}:
                return name
            resp = http.post("/load_lora_adapter", json={"lora_name": name, "lora_path": folder})
        except (httpx.HTTPError, ValueError) as exc:
            raise ServedAdapterError(f"{base_url}: cannot list or load adapters ({exc})") from exc
        if resp.status_code >= 400 and "already" not in resp.text.lower():
            raise ServedAdapterError(
                f"{base_url}: loading {folder} as {name} failed: HTTP {resp.status_code} "
                f"{resp.text[:200]} (is the server started with --enable-lora and "
                "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True?)"
            )
    return name


class ServedRolloutPolicy(RecordingPolicy):
    """The served student at one policy version, recorded like the in-process one."""

    name = "rl-student-served"

    def __init__(
        self,
        base_url: str,
        served_model: str,
        version: int,
        sample_seed: int,
        max_new_tokens: int,
        transport: httpx.BaseTransport | None = None,
        timeout_s: float = 300.0,
    ) -> None:
        super().__init__(version, sample_seed)
        self.client = OpenAIChatClient(
            base_url,
            served_model,
            temperature=1.0,
            top_p=1.0,
            max_tokens=int(max_new_tokens),
            token_info=True,
            transport=transport,
            timeout_s=timeout_s,
        )

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        self.client.extra_body["seed"] = (self.sample_seed * 1009 + len(self.requests)) % 2**31
        out = self.client.complete(messages, tools or None)
        if not out.prompt_ids or len(out.logprobs) != len(out.completion_ids):
            raise ServedAdapterError(
                "the server returned no prompt/reply token ids or log-probs (vLLM's OpenAI "
                "server with return_token_ids is needed for RL rollouts)"
            )
        return self.recorded(
            out.prompt_ids,
            out.completion_ids,
            out.logprobs,
            content=out.content,
            reasoning=out.reasoning,
            tool_calls=out.tool_calls,
            model_s=out.latency_s,
        )

    def close(self) -> None:
        self.client.close()


__all__ = ["ServedAdapterError", "ServedRolloutPolicy", "adapter_name", "ensure_adapter"]
