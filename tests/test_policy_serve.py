"""The OpenAI-compatible client and policy against a real `transformers serve` of the packaged SmolLM2.

Slow (model export ~30 s, server start, CPU generation): marked ``slow``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
torch = pytest.importorskip("torch")

from captain_ros.policy.openai_client import OpenAIChatClient  # noqa: E402
from captain_ros.policy.toolcalls import parse_reply  # noqa: E402
from captain_ros.policy.transformers_chat import export_safetensors, smollm2_folder  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.learn]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    torch.set_num_threads(1)
    folder, gguf = smollm2_folder()
    model_dir = export_safetensors(folder, tmp_path_factory.mktemp("smollm2"), gguf)
    port = _free_port()
    exe = Path(sys.executable).with_name("transformers")
    log = open(tmp_path_factory.mktemp("log") / "serve.log", "w")  # noqa: SIM115
    env = dict(os.environ, OMP_NUM_THREADS="2")
    proc = subprocess.Popen(
        [
            str(exe),
            "serve",
            str(model_dir),
            "--device",
            "cpu",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            if proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited with {proc.returncode}")
            try:
                if httpx.get(base + "/health", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        else:
            raise RuntimeError("transformers serve did not come up in 120 s")
        yield base + "/v1", str(model_dir)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_streaming_and_non_streaming_against_transformers_serve(server):
    base_url, model = server
    msgs = [{"role": "user", "content": "Write Python code that prints 2+2 in a ```python block."}]
    for stream in (True, False):
        client = OpenAIChatClient(
            base_url,
            model,
            stream=stream,
            max_tokens=48,
            temperature=0.0,
            timeout_s=120,
            max_retries=1,
        )
        out = client.complete(msgs, tools=None)
        assert out.content.strip(), out
        assert out.finish_reason in ("stop", "length")
        if out.usage.reported:
            assert out.usage.completion_tokens > 0
        parse_reply(out.content)


def test_episode_end_to_end_with_the_openai_policy(server, tmp_path):
    from captain_ros.evaluation.config import (
        BackendConfig,
        BudgetConfig,
        EpisodeConfig,
        PolicyConfig,
        RecordingConfig,
    )
    from captain_ros.evaluation.episode import run_one

    base_url, model = server
    s = run_one(
        EpisodeConfig(
            "pick_place",
            1000,
            str(tmp_path / "ep"),
            policy=PolicyConfig(
                "openai",
                base_url=base_url,
                model=model,
                max_tokens=96,
                temperature=0.0,
                timeout_s=180,
            ),
            backend=BackendConfig("fake"),
            budgets=BudgetConfig(max_requests=2),
            recording=RecordingConfig(bag=False),
        )
    )
    # SmolLM2 does not solve the task; the episode must still run to a proper end
    assert 1 <= s.requests <= 2 and s.outcome in (
        "other_failure",
        "budget_exhausted",
        "false_finish",
    )
    assert s.end_reason in ("no_tool_call", "budget:requests", "finish")
    assert s.model_s > 0
    import json

    recs = [json.loads(x) for x in (tmp_path / "ep" / "trajectory.jsonl").read_text().splitlines()]
    assert any((r.get("content") or "").strip() for r in recs if r.get("type") == "request")
    assert (tmp_path / "ep" / "report.html").exists()
