"""Token ids and log-probabilities from an OpenAI-compatible server, as vLLM returns them.

The fake speaks vLLM's response shapes for ``logprobs: true, top_logprobs: 0`` with its
``return_token_ids`` extension: ``prompt_token_ids`` at the top level (in the first chunk when
streaming), ``token_ids`` in each choice (the delta's tokens when streaming) and
``choices[].logprobs.content[].logprob``.
"""

from __future__ import annotations

import json

import httpx
import pytest

from captain_ros.policy.chat_policies import OpenAIPolicy
from captain_ros.policy.openai_client import TOKEN_INFO_BODY, ChatError, OpenAIChatClient

PROMPT = [1, 9690, 198, 2683, 359]
REPLY = [(20, "obs", -0.25), (30, " =", -1.5), (40, " robot", -0.03125), (2, "", -0.5)]


class FakeVllm:
    """``/v1/chat/completions`` with vLLM's token fields when the request asks for them."""

    def __init__(self, drop_logprob: bool = False) -> None:
        self.drop_logprob = drop_logprob
        self.bodies: list[dict] = []

    def lp(self, token: str, logprob: float) -> dict:
        return {
            "token": token,
            "logprob": logprob,
            "bytes": list(token.encode()),
            "top_logprobs": [],
        }

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        want = bool(body.get("return_token_ids"))
        reply = REPLY[:-1] if self.drop_logprob else REPLY
        usage = {"prompt_tokens": len(PROMPT), "completion_tokens": len(REPLY)}
        text = "".join(t for _, t, _ in REPLY)
        if not body.get("stream"):
            choice: dict = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
            data: dict = {"choices": [choice], "usage": usage}
            if want:
                data["prompt_token_ids"] = PROMPT
                choice["token_ids"] = [i for i, _, _ in REPLY]
                choice["logprobs"] = {"content": [self.lp(t, lp) for _, t, lp in reply]}
            return httpx.Response(200, json=data)
        chunks: list[dict] = []
        for k, (i, t, lp) in enumerate(REPLY):
            choice = {"index": 0, "delta": {"content": t}}
            if want:
                choice["token_ids"] = [i]
                if k < len(reply):
                    choice["logprobs"] = {"content": [self.lp(t, lp)]}
            chunk: dict = {"choices": [choice]}
            if want and k == 0:
                chunk["prompt_token_ids"] = PROMPT
            chunks.append(chunk)
        chunks += [
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": usage},
        ]
        sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return httpx.Response(
            200, content=sse.encode(), headers={"content-type": "text/event-stream"}
        )


def client(server: FakeVllm, **kw) -> OpenAIChatClient:
    return OpenAIChatClient(
        "http://fake/v1",
        "student",
        transport=httpx.MockTransport(server),
        sleep=lambda _s: None,
        **kw,
    )


@pytest.mark.parametrize("stream", [True, False])
def test_token_info_returns_prompt_ids_reply_ids_and_logprobs(stream: bool) -> None:
    server = FakeVllm()
    out = client(server, stream=stream, token_info=True).complete(
        [{"role": "user", "content": "go"}]
    )
    assert server.bodies[0].items() >= TOKEN_INFO_BODY.items()
    assert out.prompt_ids == tuple(PROMPT)
    assert out.completion_ids == tuple(i for i, _, _ in REPLY)
    assert out.logprobs == tuple(lp for _, _, lp in REPLY)
    assert out.content == "obs = robot"


@pytest.mark.parametrize("stream", [True, False])
def test_without_token_info_nothing_is_asked_and_nothing_returned(stream: bool) -> None:
    server = FakeVllm()
    out = client(server, stream=stream).complete([{"role": "user", "content": "go"}])
    assert not {"logprobs", "top_logprobs", "return_token_ids"} & server.bodies[0].keys()
    assert out.prompt_ids == out.completion_ids == () and out.logprobs == ()


@pytest.mark.parametrize("stream", [True, False])
def test_misaligned_ids_and_logprobs_are_refused(stream: bool) -> None:
    with pytest.raises(ChatError, match="4 reply token ids but 3 log-probabilities"):
        client(FakeVllm(drop_logprob=True), stream=stream, token_info=True).complete(
            [{"role": "user", "content": "go"}]
        )


def test_the_served_policy_reply_carries_the_tokens() -> None:
    policy = OpenAIPolicy(
        "http://fake/v1", "student", token_info=True, transport=httpx.MockTransport(FakeVllm())
    )
    reply = policy.act([{"role": "user", "content": "go"}], [])
    assert reply.completion_ids == tuple(i for i, _, _ in REPLY)
    assert reply.logprobs == tuple(lp for _, _, lp in REPLY)
    assert reply.to_dict()["logprobs"] == [lp for _, _, lp in REPLY]
