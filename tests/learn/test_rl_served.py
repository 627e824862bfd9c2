"""RL rollouts served by vLLM, against a fake vLLM server over real HTTP on localhost.

The fake speaks the parts of vLLM's OpenAI server that the served rollouts use: ``GET
/v1/models``, the runtime LoRA API (``POST /v1/load_lora_adapter``, 400 for a name already
loaded, 404 for an unknown model in a chat request) and ``/v1/chat/completions`` with
``logprobs`` / ``return_token_ids`` (``prompt_token_ids``, ``token_ids``,
``logprobs.content[].logprob``). Its "tokenizer" is a byte code of the messages, so prompts grow
append-only like a chat template's.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from captain_ros.learn.rl.batch import read_rollout
from captain_ros.learn.rl.served import ServedAdapterError, adapter_name, ensure_adapter

CODE_REPLY = "Looking first.\n```python\nprint(robot.observe())\n```"


class FakeVllm(ThreadingHTTPServer):
    def __init__(self, token_info: bool = True, lora: bool = True) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.models = ["student"]
        self.token_info, self.lora = token_info, lora
        self.loads: list[dict] = []
        self.unlisted: set[str] = set()  # loaded, but not yet in /v1/models (a racing load)
        self.chats: list[dict] = []
        self.prompts: list[list[int]] = []
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class Handler(BaseHTTPRequestHandler):
    server: FakeVllm

    def log_message(self, *args) -> None:  # quiet
        pass

    def reply(self, status: int, data: dict | str) -> None:
        body = (data if isinstance(data, str) else json.dumps(data)).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        assert self.path == "/v1/models"
        self.reply(
            200,
            {
                "object": "list",
                "data": [{"id": m} for m in self.server.models if m not in self.server.unlisted],
            },
        )

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        s = self.server
        if self.path == "/v1/load_lora_adapter":
            s.loads.append(body)
            if not s.lora:
                return self.reply(404, {"detail": "Not Found"})
            if body["lora_name"] in s.models:
                return self.reply(
                    400,
                    {
                        "error": {
                            "message": f"The lora adapter "
                            f"'{body['lora_name']}' has already been loaded."
                        }
                    },
                )
            if not Path(body["lora_path"]).is_dir():
                return self.reply(400, {"error": {"message": "no adapter at lora_path"}})
            s.models.append(body["lora_name"])
            return self.reply(
                200, f"Success: LoRA adapter '{body['lora_name']}' added successfully."
            )
        assert self.path == "/v1/chat/completions"
        s.chats.append(body)
        if body["model"] not in s.models:
            return self.reply(
                404, {"error": {"message": f"The model `{body['model']}` does not exist."}}
            )
        prompt = [b % 4000 + 10 for b in json.dumps(body["messages"])[:-1].encode()]
        s.prompts.append(prompt)
        reply_ids = [(b % 4000) + 10 for b in CODE_REPLY.encode()]
        choice: dict = {
            "index": 0,
            "message": {"role": "assistant", "content": CODE_REPLY},
            "finish_reason": "stop",
        }
        data: dict = {
            "choices": [choice],
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(reply_ids)},
        }
        if s.token_info and body.get("return_token_ids"):
            data["prompt_token_ids"] = prompt
            choice["token_ids"] = reply_ids
            choice["logprobs"] = {
                "content": [
                    {"token": chr(b), "logprob": -0.01 * (k % 7), "top_logprobs": []}
                    for k, b in enumerate(CODE_REPLY.encode())
                ]
            }
        if not body.get("stream"):
            return self.reply(200, data)
        chunk = {
            "prompt_token_ids": data.get("prompt_token_ids"),
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": CODE_REPLY},
                    "token_ids": choice.get("token_ids"),
                    "logprobs": choice.get("logprobs"),
                    "finish_reason": "stop",
                }
            ],
        }
        sse = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps({'choices': [], 'usage': data['usage']})}\n\ndata: [DONE]\n\n"
        body_b = sse.encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body_b)))
        self.end_headers()
        self.wfile.write(body_b)


@pytest.fixture
def vllm():
    s = FakeVllm()
    yield s
    s.close()


def published(tmp_path: Path, version: int) -> Path:
    folder = tmp_path / "policy" / f"v{version:04d}"
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}\n")
    (folder / "version.json").write_text(json.dumps({"version": version}) + "\n")
    return folder


def test_a_version_is_loaded_once_under_its_own_name(vllm: FakeVllm, tmp_path: Path) -> None:
    folder = published(tmp_path, 3)
    assert ensure_adapter(vllm.url, "student", 3, str(folder)) == "student-v0003"
    assert ensure_adapter(vllm.url, "student", 3, str(folder)) == "student-v0003"
    assert vllm.loads == [{"lora_name": "student-v0003", "lora_path": str(folder)}]
    vllm.unlisted.add("student-v0003")  # another worker's load raced ours: "already loaded"
    assert ensure_adapter(vllm.url, "student", 3, str(folder)) == "student-v0003"
    assert len(vllm.loads) == 2


def test_a_server_without_runtime_lora_is_one_clear_error(tmp_path: Path) -> None:
    s = FakeVllm(lora=False)
    try:
        with pytest.raises(ServedAdapterError, match="--enable-lora and VLLM_ALLOW_RUNTIME"):
            ensure_adapter(s.url, "student", 1, str(published(tmp_path, 1)))
    finally:
        s.close()
    with pytest.raises(ServedAdapterError, match="cannot list or load adapters"):
        ensure_adapter(s.url, "student", 1, str(tmp_path))  # nothing listens there any more


def job(tmp_path: Path, url: str, adapter: Path, requests: int = 3) -> dict:
    from captain_ros.evaluation.config import (
        BackendConfig,
        BudgetConfig,
        EpisodeConfig,
        PolicyConfig,
        RecordingConfig,
    )

    episode = EpisodeConfig(
        task="pick_place",
        seed=7,
        out_dir=str(tmp_path / "ep"),
        policy=PolicyConfig("rl-student"),
        backend=BackendConfig("fake"),
        budgets=BudgetConfig(max_requests=requests),
        recording=RecordingConfig(bag=False, report=False),
    )
    return {  # the wire form of learn/rl/workers.py: the episode's to_mapping() plus "rl"
        "task": "pick_place",
        "seed": 7,
        "policy": "rl-student",
        "backend": "fake",
        "out_dir": str(tmp_path / "ep"),
        "options": {
            **episode.to_mapping(),
            "rl": {
                "base": "unused",
                "adapter": str(adapter),
                "critic": None,
                "episode_key": "pick_place:7:r1:g0",
                "sample_seed": 11,
                "max_new_tokens": 64,
                "served": {"base_url": url, "model": "student"},
            },
        },
    }


def test_a_served_rollout_records_the_servers_tokens(vllm: FakeVllm, tmp_path: Path) -> None:
    from captain_ros.learn.rl.rollout import run_rollout_job

    record = run_rollout_job(job(tmp_path, vllm.url, published(tmp_path, 1)))
    assert record["requests"] == 3, record
    assert {c["model"] for c in vllm.chats} == {adapter_name("student", 1)}
    for c in vllm.chats:  # the sampled distribution is the recorded one
        assert (c["temperature"], c["top_p"], c["logprobs"], c["return_token_ids"]) == (
            1.0,
            1.0,
            True,
            True,
        )
        assert c["max_tokens"] == 64
    assert len({c["seed"] for c in vllm.chats}) == 3  # one sampling seed per request
    tokens = read_rollout(tmp_path / "ep")
    assert tokens.version == 1 and tokens.episode_key == "pick_place:7:r1:g0"
    assert [list(p) for p in tokens.prompts] == vllm.prompts  # rebuilt from shared + tail
    reply = [(b % 4000) + 10 for b in CODE_REPLY.encode()]
    assert all(list(c) == reply for c in tokens.completions)
    assert all(len(lp) == len(reply) for lp in tokens.logprobs)
    again = run_rollout_job(job(tmp_path / "2", vllm.url, tmp_path / "policy" / "v0001"))
    assert again["requests"] == 3 and len(vllm.loads) == 1  # the version stays loaded


def test_a_server_without_token_ids_ends_the_rollout_with_the_reason(tmp_path: Path) -> None:
    from captain_ros.learn.rl.rollout import run_rollout_job

    s = FakeVllm(token_info=False)
    try:
        record = run_rollout_job(job(tmp_path, s.url, published(tmp_path, 1)))
    finally:
        s.close()
    assert (record["outcome"], record["end_reason"], record["requests"]) == (
        "other_failure",
        "policy_error",
        1,
    )
    logged = "".join(f.read_text() for f in (tmp_path / "ep").rglob("*.json*") if f.is_file())
    assert "return_token_ids is needed for RL rollouts" in logged  # the episode's own record
