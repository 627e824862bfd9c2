"""A client for OpenAI-compatible chat-completion servers (vLLM, ``transformers serve``, ...).

One :meth:`OpenAIChatClient.complete` call is one *request* of the paper: the rendered history
goes out with the ``python`` tool schema, the reply comes back (streamed over server-sent events
by default) as content, reasoning, tool calls and token usage. Transport errors, timeouts, HTTP
429 and 5xx are retried with exponential backoff (honouring ``Retry-After``); other 4xx errors are
raised at once as :class:`ChatError` because retrying cannot fix them.

With ``token_info=True`` the client asks for what RL needs (vLLM's OpenAI server: ``logprobs`` with
``top_logprobs: 0`` and its ``return_token_ids`` extension): the prompt's token ids, the sampled
reply's token ids and each one's log-probability under the distribution it was sampled from. A
server that returns none of them gives empty tuples, and one that returns ids and log-probs of
different lengths is an error (a ratio over misaligned tokens would be wrong silently).

The API key is read from the environment by the harness process only (``CAPTAIN_API_KEY`` or
``OPENAI_API_KEY``); the sandboxed session never sees it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from captain_ros.core.errors import CaptainError

PYTHON_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "python",
        "description": (
            "Run Python code in the persistent sandboxed session. Variables persist "
            "across calls; `robot` (the robot API), numpy as np, scipy and math are "
            "pre-imported. Printed output and robot receipts are returned."
        ),
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "Python source to run."}},
            "required": ["code"],
        },
    },
}

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class ChatError(CaptainError):
    """The chat server failed in a way retrying did not (or cannot) fix."""


@dataclass(frozen=True)
class TokenUsage:
    """Token counts reported by the server (``None`` fields when it reported nothing)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    reported: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.reported or other.reported,
        )

    @classmethod
    def from_json(cls, usage: dict[str, Any] | None) -> TokenUsage:
        if not usage:
            return cls()
        details = usage.get("completion_tokens_details") or {}
        return cls(
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
            int(details.get("reasoning_tokens") or 0),
            True,
        )


@dataclass(frozen=True)
class ChatCompletion:
    """One assistant reply.

    Attributes:
        content: The text channel (may hold tool-call markup the server did not parse).
        reasoning: The separate reasoning channel (vLLM ``reasoning_content``), if any.
        tool_calls: Structured tool calls ``[{"id", "type", "function": {"name", "arguments"}}]``.
        finish_reason: ``stop``, ``length``, ``tool_calls``, ...
        usage: Token counts of this request.
        latency_s: Wall time of the request including retries [s].
        attempts: HTTP attempts made (1 when nothing was retried).
        prompt_ids / completion_ids / logprobs: With ``token_info``: the server's token ids of the
            rendered prompt and of the reply, and log pi of each reply token [nats]; empty when
            the server did not return them.
    """

    content: str
    reasoning: str | None = None
    tool_calls: tuple[dict[str, Any], ...] = ()
    finish_reason: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    latency_s: float = 0.0
    attempts: int = 1
    prompt_ids: tuple[int, ...] = ()
    completion_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()


TOKEN_INFO_BODY: dict[str, Any] = {"logprobs": True, "top_logprobs": 0, "return_token_ids": True}
"""What ``token_info`` adds to a request (``return_token_ids`` is vLLM's extension)."""


@dataclass
class _Tokens:
    prompt: list[int] = field(default_factory=list)
    completion: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)

    def add_choice(self, choice: dict[str, Any]) -> None:
        self.completion += [int(v) for v in choice.get("token_ids") or ()]
        for entry in (choice.get("logprobs") or {}).get("content") or ():
            self.logprobs.append(float(entry["logprob"]))

    def frozen(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[float, ...]]:
        if self.completion and self.logprobs and len(self.completion) != len(self.logprobs):
            raise ChatError(
                f"the server returned {len(self.completion)} reply token ids but "
                f"{len(self.logprobs)} log-probabilities; refusing misaligned tokens"
            )
        return tuple(self.prompt), tuple(self.completion), tuple(self.logprobs)


class OpenAIChatClient:
    """Synchronous chat-completions client.

    Args:
        base_url: Server root, e.g. ``http://localhost:8000/v1``.
        model: Model name the server knows.
        api_key: Bearer token; defaults to ``$CAPTAIN_API_KEY`` or ``$OPENAI_API_KEY``.
        timeout_s: Per-attempt timeout [s] (connect 10 s at most).
        max_retries: Retries after the first attempt for retryable failures.
        backoff_s: First backoff delay [s]; doubles per retry, capped at 30 s.
        stream: Use server-sent events (tokens arrive as they are generated).
        temperature / top_p / max_tokens: Sampling settings (paper: 1.0 / 1.0 / 4096).
        extra_body: Extra JSON fields (e.g. ``{"chat_template_kwargs": {"enable_thinking": True}}``).
        token_info: Ask for prompt/reply token ids and reply log-probs (see the module docstring).
        transport: An httpx transport (tests pass ``httpx.MockTransport``).
        sleep: Sleep function (tests pass a recorder).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 300.0,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        stream: bool = True,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 4096,
        extra_body: dict[str, Any] | None = None,
        token_info: bool = False,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if timeout_s <= 0 or max_retries < 0 or backoff_s < 0 or max_tokens <= 0:
            raise ValueError("timeout_s and max_tokens must be positive, retries/backoff >= 0")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.stream = stream
        self.sampling = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens}
        self.extra_body = dict(extra_body or {})
        self.token_info = token_info
        self.sleep = sleep
        self.usage_total = TokenUsage()
        self.requests = 0
        key = api_key or os.environ.get("CAPTAIN_API_KEY") or os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            transport=transport,
            timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OpenAIChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = (PYTHON_TOOL,),
        on_delta: Callable[[str, str], None] | None = None,
    ) -> ChatCompletion:
        """Send one request; ``on_delta(channel, text)`` sees streamed ``content``/``reasoning``."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            **self.sampling,
            **(TOKEN_INFO_BODY if self.token_info else {}),
            **self.extra_body,
        }
        if tools:
            body["tools"] = list(tools)
            body["tool_choice"] = "auto"
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        start = time.perf_counter()
        last_error = ""
        for attempt in range(self.max_retries + 1):
            try:
                if self.stream:
                    result = self._post_stream(body, on_delta)
                else:
                    result = self._post(body)
            except _Retryable as exc:
                last_error = str(exc)
                if attempt == self.max_retries:
                    break
                delay = (
                    exc.retry_after_s
                    if exc.retry_after_s is not None
                    else min(30.0, self.backoff_s * 2**attempt)
                )
                self.sleep(delay)
                continue
            self.requests += 1
            self.usage_total = self.usage_total + result.usage
            return replace(result, latency_s=time.perf_counter() - start, attempts=attempt + 1)
        raise ChatError(f"chat request failed after {self.max_retries + 1} attempts: {last_error}")

    # ------------------------------------------------------------------ transport
    def _post(self, body: dict[str, Any]) -> ChatCompletion:
        try:
            resp = self._http.post("/chat/completions", json=body)
        except httpx.TransportError as exc:  # includes timeouts
            raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
        _check_status(resp)
        try:
            data = resp.json()
            choice = data["choices"][0]
        except (ValueError, KeyError, IndexError) as exc:
            raise _Retryable(f"malformed response: {resp.text[:200]!r}") from exc
        msg = choice.get("message") or {}
        reasoning = msg.get("reasoning_content") or msg.get("reasoning")
        tokens = _Tokens([int(v) for v in data.get("prompt_token_ids") or ()])
        tokens.add_choice(choice)
        prompt_ids, completion_ids, logprobs = tokens.frozen()
        return ChatCompletion(
            msg.get("content") or "",
            reasoning,
            tuple(msg.get("tool_calls") or ()),
            choice.get("finish_reason"),
            TokenUsage.from_json(data.get("usage")),
            prompt_ids=prompt_ids,
            completion_ids=completion_ids,
            logprobs=logprobs,
        )

    def _post_stream(
        self, body: dict[str, Any], on_delta: Callable[[str, str], None] | None
    ) -> ChatCompletion:
        content: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finish: str | None = None
        usage = TokenUsage()
        tokens = _Tokens()
        try:
            with self._http.stream("POST", "/chat/completions", json=body) as resp:
                if resp.status_code >= 400:
                    resp.read()
                _check_status(resp)
                for line in resp.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        break
                    try:
                        chunk = json.loads(payload)
                    except ValueError as exc:
                        raise _Retryable(f"malformed stream chunk: {payload[:200]!r}") from exc
                    if chunk.get("usage"):
                        usage = TokenUsage.from_json(chunk["usage"])
                    if chunk.get("prompt_token_ids"):  # vLLM: in the first chunk only
                        tokens.prompt = [int(v) for v in chunk["prompt_token_ids"]]
                    for choice in chunk.get("choices") or ():
                        delta = choice.get("delta") or {}
                        finish = choice.get("finish_reason") or finish
                        _merge_delta(delta, content, reasoning, calls, on_delta)
                        tokens.add_choice(choice)
        except httpx.TransportError as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
        tool_calls = tuple(calls[i] for i in sorted(calls))
        prompt_ids, completion_ids, logprobs = tokens.frozen()
        return ChatCompletion(
            "".join(content),
            "".join(reasoning) or None,
            tool_calls,
            finish,
            usage,
            prompt_ids=prompt_ids,
            completion_ids=completion_ids,
            logprobs=logprobs,
        )


class _Retryable(Exception):
    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def _check_status(resp: httpx.Response) -> None:
    if resp.status_code < 400:
        return
    text = resp.text[:300]
    if resp.status_code in _RETRY_STATUS:
        retry_after = resp.headers.get("retry-after")
        try:
            after = min(60.0, float(retry_after)) if retry_after is not None else None
        except ValueError:
            after = None
        raise _Retryable(f"HTTP {resp.status_code}: {text}", after)
    raise ChatError(f"HTTP {resp.status_code} from chat server (not retried): {text}")


def _merge_delta(
    delta: dict[str, Any],
    content: list[str],
    reasoning: list[str],
    calls: dict[int, dict[str, Any]],
    on_delta: Callable[[str, str], None] | None,
) -> None:
    """Accumulate one streamed delta (content, reasoning, tool-call fragments by index)."""
    if delta.get("content"):
        content.append(delta["content"])
        if on_delta:
            on_delta("content", delta["content"])
    piece = delta.get("reasoning_content") or delta.get("reasoning")
    if piece:
        reasoning.append(piece)
        if on_delta:
            on_delta("reasoning", piece)
    for frag in delta.get("tool_calls") or ():
        idx = int(frag.get("index", len(calls)))
        call = calls.setdefault(
            idx, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if frag.get("id"):
            call["id"] = frag["id"]
        fn = frag.get("function") or {}
        if fn.get("name"):
            call["function"]["name"] += fn["name"]
        if fn.get("arguments"):
            args = fn["arguments"]
            call["function"]["arguments"] += args if isinstance(args, str) else json.dumps(args)
