"""Fixtures for the RL loop tests: a tiny student that acts in the real harness, and a critic.

The student is a 2-layer random Qwen2 (built from config) whose tokenizer holds the fixed prompt
lines of ``pick_place`` and each of its two replies as single tokens, fitted for a few dozen steps on the real first prompt of
a fake-backend episode to answer either with a Python cell (``robot.observe()``: the episode
continues) or with prose (no tool call: the episode ends). Sampled at temperature 1 it produces a
spread of episode lengths and outcomes, so credit and the policy gradient are not zero.

The critic is a real :class:`~captain_ros.learn.critic.Critic` warm-started on synthetic episodes
of ``pick_place``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sft_fixtures import SMOL_TEMPLATE, tiny_model, train_tokenizer

from captain_ros.policy.base import Policy, PolicyReply

TASK = "pick_place"
REPLIES = ("```python\nrobot.observe()\n```", "All done here.")


class _Capture(Policy):
    """Records the first request's messages and ends the episode (no tool call)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        self.messages = messages
        return PolicyReply(content="stop")


def first_messages(tmp: Path) -> list[dict[str, Any]]:
    """The rendered messages of request 1 of a real fake-backend ``pick_place`` episode."""
    from captain_ros.evaluation.config import (
        BackendConfig,
        BudgetConfig,
        EpisodeConfig,
        PolicyConfig,
        RecordingConfig,
    )
    from captain_ros.evaluation.episode import run_one

    cap = _Capture()
    run_one(
        EpisodeConfig(
            TASK,
            3,
            str(tmp / "capture"),
            policy=PolicyConfig("capture"),
            backend=BackendConfig("fake"),
            budgets=BudgetConfig(max_requests=1),
            recording=RecordingConfig(bag=False, report=False),
        ),
        policy=cap,
    )
    return cap.messages


def make_student(folder: Path, steps: int = 30, seed: int = 0) -> Path:
    """Build, fit and save the tiny student (see the module docstring); ~5 s on one core."""
    import torch
    from tokenizers import AddedToken

    from captain_ros.harness.episode.taskmd import SYSTEM_PROMPT
    from captain_ros.policy.chat_render import TOOL_NOTE, flatten_content, render_chat

    torch.manual_seed(seed)
    msgs = first_messages(folder.parent / f"{folder.name}-capture")
    text = json.dumps(msgs)
    fixed = [ln for m in msgs for ln in flatten_content(m.get("content")).splitlines()]
    fixed += (SYSTEM_PROMPT + "\n" + TOOL_NOTE).splitlines()
    tok = train_tokenizer(SMOL_TEMPLATE, [text], 600, whole_lines=fixed)
    tok.add_tokens([AddedToken(r, normalized=False) for r in REPLIES])  # one token per reply
    model = tiny_model("qwen2", tok, seed)
    model.config.architectures = [type(model).__name__]
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    from captain_ros.policy.transformers_chat import PYTHON_TOOL

    prompt = tok(
        render_chat(tok, msgs, [PYTHON_TOOL], add_generation_prompt=True), add_special_tokens=False
    )["input_ids"]
    seqs = []
    for reply in REPLIES:
        ids = tok(reply, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        seqs.append((torch.tensor([prompt + ids]), len(prompt)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for step in range(steps):
        x, n = seqs[step % len(seqs)]
        labels = x.clone()
        labels[:, :n] = -100
        loss = model(input_ids=x, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def make_critic(folder: Path, seed: int = 0) -> Path:
    """A warm-started critic for ``pick_place`` (synthetic episodes; a few seconds)."""
    from captain_ros.learn.critic import Critic, WarmStartConfig, warm_start
    from captain_ros.learn.critic.synthetic import synthetic_episodes
    from captain_ros.tasks.features import FEATURE_NAMES

    eps = synthetic_episodes(16, seed=seed, tasks=(TASK,), mean_requests=6)
    critic = Critic.for_episodes(eps, FEATURE_NAMES, tasks=[TASK], seed=seed)
    warm_start(critic, eps, WarmStartConfig(epochs=2))
    critic.save(folder)
    return folder
