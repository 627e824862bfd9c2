"""OpenAI-compatible client against an in-process fake chat server (httpx.MockTransport)."""

from __future__ import annotations

import json

import httpx
import pytest

from captain_ros.policy.openai_client import PYTHON_TOOL, ChatError, OpenAIChatClient

CODE = "obs = robot.observe()\nprint(obs['success'])"


class FakeServer:
    """Speaks /v1/chat/completions, streamed or not; can fail the first ``fail`` attempts."""

    def __init__(self, fail: int = 0, fail_status: int = 503, reply_calls: bool = True) -> None:
        self.fail = fail
        self.fail_status = fail_status
        self.reply_calls = reply_calls
        self.bodies: list[dict] = []
        self.headers: list[httpx.Headers] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/chat/completions"
        body = json.loads(request.content)
        self.bodies.append(body)
        self.headers.append(request.headers)
        if self.fail > 0:
            self.fail -= 1
            return httpx.Response(
                self.fail_status, json={"error": "busy"}, headers={"retry-after": "0.25"}
            )
        usage = {
            "prompt_tokens": 120,
            "completion_tokens": 17,
            "completion_tokens_details": {"reasoning_tokens": 5},
        }
        args = json.dumps({"code": CODE})
        if not body.get("stream"):
            msg = {"role": "assistant", "content": "Observing.", "reasoning_content": "look first"}
            if self.reply_calls:
                msg["tool_calls"] = [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "python", "arguments": args},
                    }
                ]
            return httpx.Response(
                200,
                json={"choices": [{"message": msg, "finish_reason": "tool_calls"}], "usage": usage},
            )
        chunks = [
            {"choices": [{"delta": {"role": "assistant", "reasoning_content": "look "}}]},
            {"choices": [{"delta": {"reasoning_content": "first"}}]},
            {"choices": [{"delta": {"content": "Obser"}}]},
            {"choices": [{"delta": {"content": "ving."}}]},
            {
                "choices": [
                    {
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_a",
                                    "type": "function",
                                    "function": {"name": "python", "arguments": args[:10]},
                                }
                            ]
                        }
                    }
                ]
            },
            {
                "choices": [
                    {"delta": {"tool_calls": [{"index": 0, "function": {"arguments": args[10:]}}]}}
                ]
            },
            {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
            {"choices": [], "usage": usage},
        ]
        text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return httpx.Response(
            200, content=text.encode(), headers={"content-type": "text/event-stream"}
        )


def _client(server: FakeServer, **kw) -> tuple[OpenAIChatClient, list[float]]:
    sleeps: list[float] = []
    client = OpenAIChatClient(
        "http://fake/v1",
        "tiny",
        api_key="sk-test",
        transport=httpx.MockTransport(server),
        sleep=sleeps.append,
        backoff_s=0.5,
        **kw,
    )
    return client, sleeps


MESSAGES = [
    {"role": "system", "content": "You control a robot."},
    {"role": "user", "content": "Put the red cube on the plate."},
]


def test_streaming_reassembles_content_reasoning_tool_calls_and_usage():
    server = FakeServer()
    client, _ = _client(server)
    seen: list[tuple[str, str]] = []
    out = client.complete(MESSAGES, on_delta=lambda ch, t: seen.append((ch, t)))
    assert out.content == "Observing."
    assert out.reasoning == "look first"
    assert out.tool_calls[0]["function"] == {
        "name": "python",
        "arguments": json.dumps({"code": CODE}),
    }
    assert out.tool_calls[0]["id"] == "call_a"
    assert out.finish_reason == "tool_calls"
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (120, 17)
    assert out.usage.reasoning_tokens == 5 and out.usage.reported
    assert ("content", "Obser") in seen and ("reasoning", "look ") in seen
    body = server.bodies[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["tools"] == [PYTHON_TOOL] and body["model"] == "tiny"
    assert body["temperature"] == 1.0 and body["max_tokens"] == 4096
    assert server.headers[0]["authorization"] == "Bearer sk-test"


def test_non_streaming_and_token_accounting_accumulates():
    server = FakeServer()
    client, _ = _client(server, stream=False)
    a = client.complete(MESSAGES)
    b = client.complete(MESSAGES)
    assert a.tool_calls[0]["function"]["name"] == "python" and a.reasoning == "look first"
    assert b.usage.total_tokens == 137
    assert client.usage_total.prompt_tokens == 240 and client.usage_total.completion_tokens == 34
    assert client.requests == 2
    assert "stream" not in server.bodies[0]


def test_retries_with_backoff_then_succeeds():
    server = FakeServer(fail=2, fail_status=503)
    client, sleeps = _client(server)
    out = client.complete(MESSAGES)
    assert out.attempts == 3 and out.content == "Observing."
    assert sleeps == [0.25, 0.25]  # Retry-After honoured
    server = FakeServer(fail=2, fail_status=500)
    server_no_header = server

    def no_retry_after(request: httpx.Request) -> httpx.Response:
        resp = server_no_header(request)
        resp.headers.pop("retry-after", None)
        return resp

    client = OpenAIChatClient(
        "http://fake/v1",
        "tiny",
        transport=httpx.MockTransport(no_retry_after),
        sleep=sleeps.append,
        backoff_s=0.5,
    )
    sleeps.clear()
    client.complete(MESSAGES)
    assert sleeps == [0.5, 1.0]  # exponential backoff


def test_gives_up_after_max_retries_and_does_not_retry_4xx():
    client, sleeps = _client(FakeServer(fail=10, fail_status=429), max_retries=2)
    with pytest.raises(ChatError, match="after 3 attempts"):
        client.complete(MESSAGES)
    assert len(sleeps) == 2
    server = FakeServer(fail=1, fail_status=400)
    client, sleeps = _client(server)
    with pytest.raises(ChatError, match="HTTP 400"):
        client.complete(MESSAGES)
    assert sleeps == [] and len(server.bodies) == 1


def test_timeouts_and_connection_errors_are_retried():
    attempts = {"n": 0}

    def flaky(request: httpx.Request) -> httpx.Response:
        attempts["n"] += 1
        if attempts["n"] == 1:
            raise httpx.ReadTimeout("read timed out", request=request)
        if attempts["n"] == 2:
            raise httpx.ConnectError("refused", request=request)
        return FakeServer()(request)

    sleeps: list[float] = []
    client = OpenAIChatClient(
        "http://fake/v1",
        "tiny",
        transport=httpx.MockTransport(flaky),
        sleep=sleeps.append,
        backoff_s=0.1,
    )
    out = client.complete(MESSAGES)
    assert out.attempts == 3 and len(sleeps) == 2


def test_malformed_stream_chunk_is_retried():
    state = {"n": 0}

    def garbage_once(request: httpx.Request) -> httpx.Response:
        state["n"] += 1
        if state["n"] == 1:
            return httpx.Response(200, content=b"data: {not json\n\n")
        return FakeServer()(request)

    client = OpenAIChatClient(
        "http://fake/v1", "tiny", transport=httpx.MockTransport(garbage_once), sleep=lambda s: None
    )
    assert client.complete(MESSAGES).attempts == 2


def test_api_key_from_environment(monkeypatch):
    monkeypatch.setenv("CAPTAIN_API_KEY", "sk-env")
    server = FakeServer()
    client = OpenAIChatClient("http://fake/v1/", "tiny", transport=httpx.MockTransport(server))
    client.complete(MESSAGES)
    assert server.headers[0]["authorization"] == "Bearer sk-env"
