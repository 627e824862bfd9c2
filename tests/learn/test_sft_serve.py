"""A trained student folder served by ``transformers serve`` renders a request with tool calls in
its history as the in-process policy does (same prompt token count, once the reasoning beside
earlier tool calls, which transformers serve drops, is taken out), and answers."""

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
pytest.importorskip("trl")

from sft_fixtures import episode_history, make_row, save_tiny, write_rows  # noqa: E402

from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA, render  # noqa: E402
from captain_ros.learn.sft import SftOptions, run_sft  # noqa: E402
from captain_ros.policy.openai_client import OpenAIChatClient  # noqa: E402
from captain_ros.policy.transformers_chat import TransformersChat  # noqa: E402

pytestmark = [pytest.mark.learn, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_served_student_renders_like_the_in_process_policy(tmp_path):
    torch.set_num_threads(1)
    base = save_tiny(tmp_path / "base", "qwen2", "smol")
    write_rows(tmp_path / "data", [make_row(episode_history(2))])
    run_sft(
        SftOptions(
            data=str(tmp_path / "data"),
            base=str(base),
            out=str(tmp_path / "student"),
            max_steps=1,
            grad_accum=1,
            val_fraction=0.0,
            progress=False,
            bf16="off",
        )
    )
    messages = render(episode_history(2))  # tool calls and tool outputs in the history
    local = TransformersChat(tmp_path / "student", device="cpu", max_new_tokens=4, temperature=0)
    ours = len(local.generate(messages, [PYTHON_TOOL_SCHEMA]).prompt_ids)
    # transformers serve drops an assistant message's text when it carries tool calls (its
    # get_processor_inputs_from_messages: "When tool_calls are present, ignore content"), so the
    # reasoning beside each earlier tool call is not in a served prompt; everything else is equal
    bare = [{**m, "content": ""} if m.get("tool_calls") else m for m in messages]
    expected = len(local.generate(bare, [PYTHON_TOOL_SCHEMA]).prompt_ids)
    assert expected < ours  # the reasoning is really there in ours

    port = _free_port()
    exe = Path(sys.executable).with_name("transformers")
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [
            str(exe),
            "serve",
            str(tmp_path / "student"),
            "--device",
            "cpu",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, OMP_NUM_THREADS="1"),
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(360):
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]
            try:
                if httpx.get(base_url + "/health", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail("transformers serve did not come up in 180 s")
        client = OpenAIChatClient(
            base_url + "/v1",
            str(tmp_path / "student"),
            stream=False,
            max_tokens=4,
            temperature=0.0,
            timeout_s=120,
            max_retries=1,
        )
        out = client.complete(messages, tools=[PYTHON_TOOL_SCHEMA])
        assert out.finish_reason in ("stop", "length", "tool_calls")
        assert out.usage.reported and out.usage.prompt_tokens == expected
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
